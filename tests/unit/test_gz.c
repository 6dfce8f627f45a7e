/*
 * test_gz.c - gzip streams through zlib (agent/api/rest/gz.c): a round trip in
 * small buffers, concatenated members, held output drained with no input,
 * corrupt and cut-short streams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/gz.h"
#include "agent/core/buf.h"

#include <stdlib.h>
#include <string.h>

/* Deflate in[0..n) in pieces of step, into out buffers of cap. */
static void deflate_all(const char *in, size_t n, size_t step, size_t cap, struct buf *out)
{
    struct gz g;
    char o[4096];
    assert_true(cap <= sizeof o);
    assert_int_equal(gz_deflate_init(&g, Z_DEFAULT_COMPRESSION), 0);
    size_t off = 0;
    for (;;) {
        size_t k = n - off < step ? n - off : step, used, made;
        int last = off + k == n;
        int r = gz_deflate(&g, in + off, k, &used, last, o, cap, &made);
        assert_true(r >= 0);
        off += used;
        buf_append(out, o, made);
        if (r == 1) break;
    }
    assert_int_equal(off, n);
    gz_end(&g);
}

/* Inflate in pieces; returns 0 when whole members, -1 corrupt, 1 cut short. */
static int inflate_all(const char *in, size_t n, size_t step, size_t cap, struct buf *out)
{
    struct gz g;
    char o[4096];
    const char *why = NULL;
    assert_int_equal(gz_inflate_init(&g), 0);
    size_t off = 0;
    int rc = 0;
    while (off < n) {
        size_t k = n - off < step ? n - off : step, used, made;
        if (gz_inflate(&g, in + off, k, &used, o, cap, &made, &why) < 0) {
            assert_non_null(why);
            rc = -1;
            break;
        }
        off += used;
        buf_append(out, o, made);
        /* Drain what zlib holds before more input. */
        while (made == cap) {
            assert_int_equal(gz_inflate(&g, "", 0, &used, o, cap, &made, &why), 0);
            buf_append(out, o, made);
        }
    }
    if (rc == 0 && !gz_inflate_complete(&g)) rc = 1;
    gz_end(&g);
    return rc;
}

static void test_round_trip(void **s)
{
    (void)s;
    size_t n = 300000;
    char *data = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (char)(i < n / 2 ? (size_t)rand() : i % 7);
    size_t steps[] = {1, 7, 4096, n};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        struct buf z, back;
        buf_init(&z, 2 * n);
        buf_init(&back, 2 * n);
        deflate_all(data, n, steps[i], i % 2 ? 17 : 4096, &z);
        size_t cap = i % 2 ? 13 : 4096, step = steps[i] > 5000 ? 5000 : steps[i];
        assert_int_equal(inflate_all(z.data, z.len, step, cap, &back), 0);
        assert_int_equal(back.len, n);
        assert_memory_equal(back.data, data, n);
        buf_free(&z);
        buf_free(&back);
    }
    free(data);
}

static void test_members_and_damage(void **s)
{
    (void)s;
    struct buf z, back;
    buf_init(&z, 1 << 20);
    buf_init(&back, 1 << 20);
    deflate_all("first ", 6, 6, 4096, &z);
    deflate_all("second", 6, 6, 4096, &z);
    assert_int_equal(inflate_all(z.data, z.len, 3, 4096, &back), 0);
    assert_int_equal(back.len, 12);
    assert_memory_equal(back.data, "first second", 12);
    buf_reset(&back);
    assert_int_equal(inflate_all(z.data, z.len - 5, 100, 4096, &back), 1); /* cut short */
    buf_reset(&back);
    z.data[z.len - 1] ^= 1; /* the length in the trailer */
    assert_int_equal(inflate_all(z.data, z.len, 100, 4096, &back), -1);
    buf_reset(&back);
    assert_int_equal(inflate_all("not gzip at all", 15, 100, 4096, &back), -1);
    buf_reset(&back);
    buf_reset(&z);
    deflate_all("x", 1, 1, 4096, &z);
    buf_append(&z, "trailing", 8);
    assert_int_equal(inflate_all(z.data, z.len, 100, 4096, &back), -1);
    buf_reset(&back);
    assert_int_equal(inflate_all("", 0, 1, 4096, &back), 1); /* nothing is no member */
    buf_free(&z);
    buf_free(&back);
    struct gz g = {0};
    gz_end(&g); /* zeroed: fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip), cmocka_unit_test(test_members_and_damage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
