/*
 * test_ring.c - the retention ring (agent/proc/ring.h): absolute offsets,
 * wrapping, the jump of a reader that fell behind, the live end, offsets past
 * 2^32, a ring that keeps nothing, lazy growth, shrinking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/proc/ring.h"

#include <stdint.h>
#include <string.h>

/* Read everything from *off into a NUL-terminated string (small rings only). */
static const char *read_all(struct ring *r, uint64_t *off, uint64_t *skipped)
{
    static char out[1024];
    size_t len = 0, n;
    uint64_t s = 0;
    *skipped = 0;
    /* Small reads on purpose: a wrapped ring is read across its seam. */
    while ((n = ring_read(r, off, out + len, 3, &s)) > 0) {
        *skipped += s;
        len += n;
        assert_true(len < sizeof out - 3);
    }
    *skipped += s;
    out[len] = '\0';
    return out;
}

static void test_write_read_from_zero(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 16);
    assert_null(r.data); /* nothing allocated before the first byte */
    assert_int_equal(ring_write(&r, "hello ", 6), 0);
    assert_int_equal(ring_write(&r, "world", 5), 0);
    uint64_t off = 0, skipped = 99;
    assert_string_equal(read_all(&r, &off, &skipped), "hello world");
    assert_int_equal(off, 11);
    assert_int_equal(skipped, 0);
    ring_free(&r);
}

static void test_wrap_keeps_the_last_bytes(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 8);
    for (int i = 0; i < 5; i++) assert_int_equal(ring_write(&r, "abc", 3), 0);
    /* 15 bytes written, the last 8 kept: offsets 7..14. */
    assert_int_equal(r.end, 15);
    assert_int_equal(r.start, 7);
    uint64_t off = 7, skipped;
    assert_string_equal(read_all(&r, &off, &skipped), "bcabcabc");
    assert_int_equal(skipped, 0);
    /* From the middle of what is kept. */
    off = 12;
    assert_string_equal(read_all(&r, &off, &skipped), "abc");
    assert_int_equal(off, 15);
    /* One write larger than the ring: only its tail survives. */
    assert_int_equal(ring_write(&r, "0123456789ABCDEF", 16), 0);
    assert_int_equal(r.end, 31);
    assert_int_equal(r.start, 23);
    off = 23;
    assert_string_equal(read_all(&r, &off, &skipped), "89ABCDEF");
    ring_free(&r);
}

static void test_reader_behind_jumps_to_the_oldest(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 4);
    assert_int_equal(ring_write(&r, "abcdefghij", 10), 0);
    uint64_t off = 0, skipped = 0;
    char buf[16];
    size_t n = ring_read(&r, &off, buf, sizeof buf, &skipped);
    assert_int_equal(n, 4);
    assert_int_equal(skipped, 6);
    assert_memory_equal(buf, "ghij", 4);
    assert_int_equal(off, 10);
    /* A reader that was only partly overtaken skips only what is gone. */
    assert_int_equal(ring_write(&r, "kl", 2), 0);
    off = 7;
    n = ring_read(&r, &off, buf, sizeof buf, &skipped);
    assert_int_equal(skipped, 1);
    assert_int_equal(n, 4);
    assert_memory_equal(buf, "ijkl", 4);
    /* skipped may be NULL. */
    off = 0;
    assert_int_equal(ring_read(&r, &off, buf, 2, NULL), 2);
    assert_memory_equal(buf, "ij", 2);
    ring_free(&r);
}

static void test_live_end_and_ahead(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 8);
    char buf[8];
    uint64_t off = 0, skipped = 5;
    /* Empty ring: nothing to read, nothing skipped. */
    assert_int_equal(ring_read(&r, &off, buf, sizeof buf, &skipped), 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(ring_write(&r, "xy", 2), 0);
    off = 2;
    assert_int_equal(ring_read(&r, &off, buf, sizeof buf, &skipped), 0);
    assert_int_equal(off, 2);
    /* An offset past the live end waits for that byte and is kept. */
    off = 4;
    assert_int_equal(ring_read(&r, &off, buf, sizeof buf, &skipped), 0);
    assert_int_equal(off, 4);
    assert_int_equal(ring_write(&r, "zw12", 4), 0);
    assert_int_equal(ring_read(&r, &off, buf, sizeof buf, &skipped), 2);
    assert_memory_equal(buf, "12", 2);
    ring_free(&r);
}

static void test_offsets_past_4g(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 8);
    /* As if 2^32 - 3 bytes had already gone through: set the empty ring's
     * counters there instead of writing 4 GiB. */
    r.start = r.end = (1ull << 32) - 3;
    assert_int_equal(ring_write(&r, "abcdef", 6), 0);
    assert_true(r.end == (1ull << 32) + 3);
    uint64_t off = (1ull << 32) - 3, skipped;
    assert_string_equal(read_all(&r, &off, &skipped), "abcdef");
    assert_true(off == (1ull << 32) + 3);
    /* Wrap across the 2^32 boundary and read from an offset above it. */
    assert_int_equal(ring_write(&r, "ghijkl", 6), 0);
    off = (1ull << 32) + 1;
    assert_string_equal(read_all(&r, &off, &skipped), "efghijkl");
    off = 0;
    assert_string_equal(read_all(&r, &off, &skipped), "efghijkl");
    assert_true(skipped == (1ull << 32) + 1);
    ring_free(&r);
}

static void test_cap_zero_counts_only(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 0);
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    assert_int_equal(ring_write(&r, "de", 2), 0);
    assert_null(r.data);
    assert_int_equal(r.end, 5);
    assert_int_equal(r.start, 5);
    uint64_t off = 0, skipped;
    char buf[4];
    assert_int_equal(ring_read(&r, &off, buf, sizeof buf, &skipped), 0);
    assert_int_equal(skipped, 5);
    assert_int_equal(off, 5);
    ring_free(&r);
}

static void test_grows_lazily_and_keeps_order(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 1 << 20);
    static char big[300000], out[300000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7 + i / 251);
    /* Uneven pieces through several doublings. */
    size_t done = 0, piece = 1;
    while (done < sizeof big) {
        size_t n = sizeof big - done < piece ? sizeof big - done : piece;
        assert_int_equal(ring_write(&r, big + done, n), 0);
        done += n;
        piece = piece * 3 + 1;
    }
    assert_true(r.cap >= sizeof big && r.cap <= 2 * sizeof big);
    uint64_t off = 0, skipped;
    assert_int_equal(ring_read(&r, &off, out, sizeof out, &skipped), sizeof big);
    assert_memory_equal(out, big, sizeof big);
    ring_free(&r);

    /* A ring wrapped before it reached its bound keeps working as it grows. */
    ring_init(&r, 10000);
    for (int i = 0; i < 30; i++) assert_int_equal(ring_write(&r, big + i * 1000, 1000), 0);
    assert_int_equal(r.cap, 10000);
    off = 0;
    assert_int_equal(ring_read(&r, &off, out, sizeof out, &skipped), 10000);
    assert_int_equal(skipped, 20000);
    assert_memory_equal(out, big + 20000, 10000);
    ring_free(&r);
}

static void test_shrink_keeps_the_bytes(void **st)
{
    (void)st;
    struct ring r;
    static char big[5000], out[5000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    ring_init(&r, 1 << 20);
    assert_int_equal(ring_write(&r, big, sizeof big), 0);
    assert_int_equal(r.cap, 8192);
    ring_shrink(&r);
    assert_int_equal(r.cap, 5000);
    uint64_t off = 0, skipped;
    assert_int_equal(ring_read(&r, &off, out, sizeof out, &skipped), 5000);
    assert_memory_equal(out, big, 5000);
    /* Still writable: it grows again, offsets unchanged. */
    assert_int_equal(ring_write(&r, "xyz", 3), 0);
    off = 4998;
    assert_string_equal(read_all(&r, &off, &skipped), "ghxyz");
    ring_free(&r);

    /* A full wrapped ring has no slack; an empty one gives everything back. */
    ring_init(&r, 8);
    assert_int_equal(ring_write(&r, "0123456789", 10), 0);
    ring_shrink(&r);
    assert_int_equal(r.cap, 8);
    off = 0;
    assert_string_equal(read_all(&r, &off, &skipped), "23456789");
    ring_free(&r);
    ring_init(&r, 0);
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    ring_shrink(&r);
    assert_null(r.data);
    ring_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_read_from_zero),
        cmocka_unit_test(test_wrap_keeps_the_last_bytes),
        cmocka_unit_test(test_reader_behind_jumps_to_the_oldest),
        cmocka_unit_test(test_live_end_and_ahead),
        cmocka_unit_test(test_offsets_past_4g),
        cmocka_unit_test(test_cap_zero_counts_only),
        cmocka_unit_test(test_grows_lazily_and_keeps_order),
        cmocka_unit_test(test_shrink_keeps_the_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
