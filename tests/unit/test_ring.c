/*
 * test_ring.c - the ring (agent/core/ring.c): absolute offsets,
 * wrapping, the jump of a reader that fell behind, the live end, offsets past
 * 2^32, a ring that keeps nothing, lazy growth, shrinking; and the
 * last-N-bytes view `exec` keeps of a stream (truncation, JSON with U+FFFD);
 * writing in place at the tail once grown, and reading in place (peek)
 * up to the buffer's seam.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/buf.h"
#include "agent/core/ring.h"

#include <stdint.h>
#include <stdlib.h>
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

/* ---- the last-N-bytes view that exec keeps of each stream ---- */

/* The kept bytes, oldest first, as a NUL-terminated copy (the caller frees). */
static char *kept(const struct ring *r)
{
    size_t n = (size_t)(r->end - r->start);
    char *s = calloc(1, n + 1);
    assert_non_null(s);
    uint64_t off = r->start;
    assert_int_equal(ring_read(r, &off, s, n, NULL), n);
    return s;
}

static void assert_kept(const struct ring *r, const char *want)
{
    char *s = kept(r);
    assert_int_equal((size_t)(r->end - r->start), strlen(want));
    assert_memory_equal(s, want, (size_t)(r->end - r->start));
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

static void test_tail_linear_fill(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 10);
    assert_null(r.data);
    assert_json(&r, "\"\"");
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    assert_int_equal(ring_write(&r, "de", 2), 0);
    assert_kept(&r, "abcde");
    assert_false(ring_truncated(&r));
    assert_int_equal(ring_write(&r, "fghij", 5), 0); /* exactly full: still linear */
    assert_kept(&r, "abcdefghij");
    assert_false(ring_truncated(&r));
    assert_json(&r, "\"abcdefghij\"");
    ring_free(&r);
}

static void test_tail_wrap(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 8);
    assert_int_equal(ring_write(&r, "abcdef", 6), 0);
    assert_int_equal(ring_write(&r, "ghij", 4), 0);
    assert_kept(&r, "cdefghij");
    assert_true(ring_truncated(&r));
    assert_json(&r, "\"cdefghij\"");
    assert_int_equal(ring_write(&r, "k", 1), 0);
    assert_kept(&r, "defghijk");
    assert_json(&r, "\"defghijk\"");
    ring_free(&r);
}

/* Many writes of every size around max against the obvious answer: the
 * last max bytes of everything written. */
static void test_tail_wrap_against_reference(void **st)
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
        assert_int_equal(ring_write(&r, all + n, len), 0);
        n += len;
        size_t keep = n < MAX ? n : MAX;
        all[n] = '\0';
        assert_kept(&r, all + n - keep);
        assert_int_equal(r.end, n);
        assert_true(r.cap <= MAX);
    }
    ring_free(&r);
}

static void test_tail_write_larger_than_max(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 4);
    assert_int_equal(ring_write(&r, "0123456789", 10), 0);
    assert_kept(&r, "6789");
    assert_int_equal(r.end, 10);
    /* After a wrap, too: the large write replaces everything. */
    assert_int_equal(ring_write(&r, "ab", 2), 0);
    assert_int_equal(ring_write(&r, "vwxyz", 5), 0);
    assert_kept(&r, "wxyz");
    assert_int_equal(ring_write(&r, "ABCD", 4), 0); /* exactly max */
    assert_kept(&r, "ABCD");
    assert_int_equal(r.end, 21);
    ring_free(&r);
}

static void test_tail_max_zero(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 0);
    assert_false(ring_truncated(&r));
    assert_int_equal(ring_write(&r, "x\n", 2), 0);
    assert_int_equal(ring_write(&r, "yz", 2), 0);
    assert_null(r.data);
    assert_int_equal((r.end - r.start), 0);
    assert_int_equal(r.end, 4);
    assert_true(ring_truncated(&r));
    assert_json(&r, "\"\"");
    ring_free(&r);
}

static void test_tail_total_counting(void **st)
{
    (void)st;
    struct ring r;
    ring_init(&r, 3);
    assert_int_equal(ring_write(&r, "", 0), 0);
    assert_int_equal(r.end, 0);
    assert_null(r.data); /* nothing written, nothing allocated */
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    assert_int_equal(r.end, 3);
    assert_false(ring_truncated(&r)); /* exactly max: nothing dropped */
    assert_int_equal(ring_write(&r, "d", 1), 0);
    assert_int_equal(r.end, 4);
    assert_true(ring_truncated(&r));
    static char big[100000];
    memset(big, 'q', sizeof big);
    for (int i = 0; i < 100; i++) assert_int_equal(ring_write(&r, big, sizeof big), 0);
    assert_int_equal(r.end, 4 + 100ull * sizeof big);
    assert_int_equal((r.end - r.start), 3);
    ring_free(&r);
}

static void test_tail_json_wrapped_invalid_utf8(void **st)
{
    (void)st;
    struct ring r;
    /* An invalid byte in a wrapped ring. */
    ring_init(&r, 4);
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    assert_int_equal(ring_write(&r, "\xff" "d", 2), 0);
    assert_json(&r, "\"bc\\ufffdd\"");
    ring_free(&r);
    /* A character whose bytes straddle the end of the buffer: whole again. */
    ring_init(&r, 4);
    assert_int_equal(ring_write(&r, "ab", 2), 0);
    assert_int_equal(ring_write(&r, "c", 1), 0);
    assert_int_equal(ring_write(&r, "\xe2\x82\xac", 3), 0); /* U+20AC */
    assert_json(&r, "\"c\\u20ac\"");
    /* Cut in the middle of a character by truncation: its tail is U+FFFD. */
    assert_int_equal(ring_write(&r, "\xe2\x82\xac", 3), 0);
    assert_json(&r, "\"\\ufffd\\u20ac\"");
    ring_free(&r);
}

static void test_tail_growth_bounded(void **st)
{
    (void)st;
    struct ring r;
    /* A max below the first allocation: clamped to max. */
    ring_init(&r, 10);
    assert_int_equal(ring_write(&r, "a", 1), 0);
    assert_int_equal(r.cap, 10);
    ring_free(&r);
    /* Grows as output arrives, never beyond max (not a power of two). */
    enum { MAX = 10000 };
    static char chunk[3000];
    memset(chunk, 'z', sizeof chunk);
    ring_init(&r, MAX);
    assert_int_equal(ring_write(&r, chunk, 1000), 0);
    assert_true(r.cap >= 1000 && r.cap < MAX);
    size_t prev = r.cap;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(ring_write(&r, chunk, sizeof chunk), 0);
        assert_true(r.cap >= prev && r.cap <= MAX);
        assert_true((r.end - r.start) <= r.cap);
        prev = r.cap;
    }
    assert_int_equal(r.cap, MAX);
    assert_int_equal((r.end - r.start), MAX);
    ring_free(&r);
}

static void test_tail_in_place(void **st)
{
    (void)st;
    struct ring r;
    size_t n;
    ring_init(&r, 1 << 16);
    assert_null(ring_tail(&r, &n)); /* nothing allocated yet */
    assert_int_equal(ring_write(&r, "abc", 3), 0);
    assert_null(ring_tail(&r, &n)); /* still growing: ring_write */
    ring_free(&r);
    ring_init(&r, 8);
    assert_null(ring_tail(&r, &n));
    assert_int_equal(ring_write(&r, "abcdefgh", 8), 0);
    char *t = ring_tail(&r, &n); /* grown to max and full: the oldest bytes are next */
    assert_non_null(t);
    assert_int_equal(n, 8);
    memcpy(t, "XY", 2);
    ring_commit(&r, 2);
    uint64_t off = 0, skipped;
    assert_string_equal(read_all(&r, &off, &skipped), "cdefghXY");
    assert_int_equal(skipped, 2);
    assert_non_null(t = ring_tail(&r, &n)); /* up to the seam only */
    assert_int_equal(n, 6);
    memcpy(t, "123456", 6);
    ring_commit(&r, 6);
    assert_int_equal(r.end, 16);
    off = 8;
    assert_string_equal(read_all(&r, &off, &skipped), "XY123456");
    ring_free(&r);
    struct ring z;
    ring_init(&z, 0);
    assert_null(ring_tail(&z, &n)); /* keeps nothing: counted by ring_write */
    ring_free(&z);
}

static void test_peek(void **st)
{
    (void)st;
    struct ring r;
    size_t n;
    uint64_t off = 0, skipped;
    ring_init(&r, 8);
    assert_null(ring_peek(&r, &off, 4, &n, &skipped));
    assert_int_equal(n, 0);
    assert_int_equal(ring_write(&r, "abcdefgh", 8), 0);
    const char *p = ring_peek(&r, &off, 5, &n, &skipped);
    assert_non_null(p);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "abcde", 5);
    assert_int_equal(off, 5);
    assert_int_equal(ring_write(&r, "ij", 2), 0); /* wraps: i j at the front */
    p = ring_peek(&r, &off, 8, &n, &skipped);     /* f g h | i j: across the seam */
    assert_null(p);
    assert_int_equal(n, 5);
    assert_int_equal(off, 5); /* not advanced */
    assert_non_null(p = ring_peek(&r, &off, 3, &n, &skipped));
    assert_memory_equal(p, "fgh", 3);
    assert_non_null(p = ring_peek(&r, &off, 8, &n, &skipped));
    assert_memory_equal(p, "ij", 2);
    assert_int_equal(off, 10);
    /* Behind the oldest byte: the jump, as ring_read has it. */
    off = 0;
    assert_non_null(p = ring_peek(&r, &off, 6, &n, &skipped));
    assert_int_equal(skipped, 2);
    assert_int_equal(n, 6);
    assert_int_equal(off, 8);
    assert_memory_equal(p, "cdefgh", 6);
    ring_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_linear_fill),
        cmocka_unit_test(test_tail_wrap),
        cmocka_unit_test(test_tail_wrap_against_reference),
        cmocka_unit_test(test_tail_write_larger_than_max),
        cmocka_unit_test(test_tail_max_zero),
        cmocka_unit_test(test_tail_total_counting),
        cmocka_unit_test(test_tail_json_wrapped_invalid_utf8),
        cmocka_unit_test(test_tail_growth_bounded),
        cmocka_unit_test(test_write_read_from_zero),
        cmocka_unit_test(test_wrap_keeps_the_last_bytes),
        cmocka_unit_test(test_reader_behind_jumps_to_the_oldest),
        cmocka_unit_test(test_live_end_and_ahead),
        cmocka_unit_test(test_offsets_past_4g),
        cmocka_unit_test(test_cap_zero_counts_only),
        cmocka_unit_test(test_grows_lazily_and_keeps_order),
        cmocka_unit_test(test_shrink_keeps_the_bytes),
        cmocka_unit_test(test_tail_in_place),
        cmocka_unit_test(test_peek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
