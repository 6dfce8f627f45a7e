/*
 * test_ring.c - the last-N-bytes ring of `exec` (runner/exec/ring.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/buf.h"
#include "runner/exec/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The kept bytes, oldest first, as a NUL-terminated copy (the caller frees). */
static char *kept(const struct ring *r)
{
    char *s = calloc(1, r->len + 1);
    assert_non_null(s);
    for (size_t i = 0; i < r->len; i++) s[i] = r->data[(r->head + i) % r->max];
    return s;
}

static void assert_kept(const struct ring *r, const char *want)
{
    char *s = kept(r);
    assert_int_equal(r->len, strlen(want));
    assert_memory_equal(s, want, r->len);
    free(s);
}

/* ring_json's output as a NUL-terminated string (the caller frees). */
static char *json(const struct ring *r)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(ring_json(&b, r), 0);
    char *s = strdup(buf_cstr(&b));
    assert_non_null(s);
    buf_free(&b);
    return s;
}

static void assert_json(const struct ring *r, const char *want)
{
    char *s = json(r);
    assert_string_equal(s, want);
    free(s);
}

static void test_linear_fill(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 10);
    assert_null(r.data);
    assert_json(&r, "\"\"");
    assert_int_equal(ring_put(&r, "abc", 3), 0);
    assert_int_equal(ring_put(&r, "de", 2), 0);
    assert_int_equal(r.head, 0);
    assert_kept(&r, "abcde");
    assert_false(ring_truncated(&r));
    assert_int_equal(ring_put(&r, "fghij", 5), 0); /* exactly full: still linear */
    assert_int_equal(r.head, 0);
    assert_kept(&r, "abcdefghij");
    assert_false(ring_truncated(&r));
    assert_json(&r, "\"abcdefghij\"");
    ring_free(&r);
}

static void test_wrap(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 8);
    assert_int_equal(ring_put(&r, "abcdef", 6), 0);
    assert_int_equal(ring_put(&r, "ghij", 4), 0);
    assert_int_not_equal(r.head, 0);
    assert_kept(&r, "cdefghij");
    assert_true(ring_truncated(&r));
    assert_json(&r, "\"cdefghij\"");
    assert_int_equal(ring_put(&r, "k", 1), 0);
    assert_kept(&r, "defghijk");
    assert_json(&r, "\"defghijk\"");
    ring_free(&r);
}

/* Many writes of every size around max against the obvious answer: the
 * last max bytes of everything written. */
static void test_wrap_against_reference(void **st)
{
    (void)st;
    enum { MAX = 37, TOTAL = 5000 };
    static char all[TOTAL + MAX * 2];
    size_t n = 0;
    unsigned seed = 1;
    struct ring r;
    ring_init(&r, MAX);
    while (n < TOTAL) {
        seed = seed * 1103515245u + 12345u;
        size_t len = (seed >> 16) % (MAX * 2);
        for (size_t i = 0; i < len; i++) all[n + i] = (char)('a' + (n + i) % 26);
        assert_int_equal(ring_put(&r, all + n, len), 0);
        n += len;
        size_t keep = n < MAX ? n : MAX;
        all[n] = '\0';
        assert_kept(&r, all + n - keep);
        assert_int_equal(r.total, n);
        assert_true(r.cap <= MAX);
    }
    ring_free(&r);
}

static void test_write_larger_than_max(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 4);
    assert_int_equal(ring_put(&r, "0123456789", 10), 0);
    assert_int_equal(r.head, 0);
    assert_kept(&r, "6789");
    assert_int_equal(r.total, 10);
    /* After a wrap, too: the large write replaces everything. */
    assert_int_equal(ring_put(&r, "ab", 2), 0);
    assert_int_not_equal(r.head, 0);
    assert_int_equal(ring_put(&r, "vwxyz", 5), 0);
    assert_int_equal(r.head, 0);
    assert_kept(&r, "wxyz");
    assert_int_equal(ring_put(&r, "ABCD", 4), 0); /* exactly max */
    assert_kept(&r, "ABCD");
    assert_int_equal(r.total, 21);
    ring_free(&r);
}

static void test_max_zero(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 0);
    assert_false(ring_truncated(&r));
    assert_int_equal(ring_put(&r, "x\n", 2), 0);
    assert_int_equal(ring_put(&r, "yz", 2), 0);
    assert_null(r.data);
    assert_int_equal(r.len, 0);
    assert_int_equal(r.total, 4);
    assert_true(ring_truncated(&r));
    assert_json(&r, "\"\"");
    ring_free(&r);
}

static void test_total_counting(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 3);
    assert_int_equal(ring_put(&r, "", 0), 0);
    assert_int_equal(r.total, 0);
    assert_null(r.data); /* nothing written, nothing allocated */
    assert_int_equal(ring_put(&r, "abc", 3), 0);
    assert_int_equal(r.total, 3);
    assert_false(ring_truncated(&r)); /* exactly max: nothing dropped */
    assert_int_equal(ring_put(&r, "d", 1), 0);
    assert_int_equal(r.total, 4);
    assert_true(ring_truncated(&r));
    static char big[100000];
    memset(big, 'q', sizeof big);
    for (int i = 0; i < 100; i++) assert_int_equal(ring_put(&r, big, sizeof big), 0);
    assert_int_equal(r.total, 4 + 100ull * sizeof big);
    assert_int_equal(r.len, 3);
    ring_free(&r);
}

static void test_json_wrapped_invalid_utf8(void **st)
{
    (void)st;
    struct ring r;
    /* An invalid byte in a wrapped ring. */
    ring_init(&r, 4);
    assert_int_equal(ring_put(&r, "abc", 3), 0);
    assert_int_equal(ring_put(&r, "\xff" "d", 2), 0);
    assert_int_not_equal(r.head, 0);
    assert_json(&r, "\"bc\\ufffdd\"");
    ring_free(&r);
    /* A character whose bytes straddle the end of the buffer: whole again. */
    ring_init(&r, 4);
    assert_int_equal(ring_put(&r, "ab", 2), 0);
    assert_int_equal(ring_put(&r, "c", 1), 0);
    assert_int_equal(ring_put(&r, "\xe2\x82\xac", 3), 0); /* U+20AC */
    assert_int_equal(r.head, 2);
    assert_json(&r, "\"c\\u20ac\"");
    /* Cut in the middle of a character by truncation: its tail is U+FFFD. */
    assert_int_equal(ring_put(&r, "\xe2\x82\xac", 3), 0);
    assert_json(&r, "\"\\ufffd\\u20ac\"");
    ring_free(&r);
}

static void test_growth_bounded(void **st)
{
    (void)st;
    struct ring r;
    /* A max below the first allocation: clamped to max. */
    ring_init(&r, 10);
    assert_int_equal(ring_put(&r, "a", 1), 0);
    assert_int_equal(r.cap, 10);
    ring_free(&r);
    /* Grows as output arrives, never beyond max (not a power of two). */
    enum { MAX = 10000 };
    static char chunk[3000];
    memset(chunk, 'z', sizeof chunk);
    ring_init(&r, MAX);
    assert_int_equal(ring_put(&r, chunk, 1000), 0);
    assert_true(r.cap >= 1000 && r.cap < MAX);
    size_t prev = r.cap;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(ring_put(&r, chunk, sizeof chunk), 0);
        assert_true(r.cap >= prev && r.cap <= MAX);
        assert_true(r.len <= r.cap);
        prev = r.cap;
    }
    assert_int_equal(r.cap, MAX);
    assert_int_equal(r.len, MAX);
    ring_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_fill),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_wrap_against_reference),
        cmocka_unit_test(test_write_larger_than_max),
        cmocka_unit_test(test_max_zero),
        cmocka_unit_test(test_total_counting),
        cmocka_unit_test(test_json_wrapped_invalid_utf8),
        cmocka_unit_test(test_growth_bounded),
    };
    return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
