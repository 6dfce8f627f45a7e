/*
 * test_outq.c - the bounded output queue (agent/api/http/outq.c), bytes
 * reserved to be written in place, within the same bound, and its draws
 * from the memory budget (puts forced, outq_room refused; all given back).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/outq.h"
#include "agent/core/budget.h"

#include <string.h>

static void test_fifo(void **s)
{
    (void)s;
    struct outq q;
    size_t n;
    outq_init(&q, 10);
    assert_null(outq_peek(&q, &n));
    assert_int_equal(n, 0);
    assert_int_equal(outq_put(&q, "hello", 5), 0);
    assert_int_equal(outq_printf(&q, "%d", 42), 0);
    assert_int_equal(outq_len(&q), 7);
    assert_int_equal(outq_put(&q, "worlds", 6), -1); /* past the bound: nothing queued */
    assert_int_equal(outq_len(&q), 7);
    const char *p = outq_peek(&q, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(p, "hello42", 7);
    outq_done(&q, 6);
    /* The drained bytes do not count against the bound. */
    assert_int_equal(outq_put(&q, "abcdefghi", 9), 0);
    p = outq_peek(&q, &n);
    assert_int_equal(n, 10);
    assert_memory_equal(p, "2abcdefghi", 10);
    outq_done(&q, 10);
    assert_int_equal(outq_len(&q), 0);
    assert_null(outq_peek(&q, &n));
    outq_free(&q);
}

static void test_reserve(void **s)
{
    (void)s;
    struct outq q;
    size_t n;
    outq_init(&q, 10);
    char *d = outq_reserve(&q, 4);
    assert_non_null(d);
    memcpy(d, "abcd", 4);
    assert_int_equal(outq_put(&q, "ef", 2), 0);
    assert_null(outq_reserve(&q, 5)); /* past the bound: nothing queued */
    assert_int_equal(outq_len(&q), 6);
    outq_done(&q, 3);
    /* The drained bytes make room; what is pending stays in order. */
    assert_non_null(d = outq_reserve(&q, 7));
    memcpy(d, "1234567", 7);
    const char *p = outq_peek(&q, &n);
    assert_int_equal(n, 10);
    assert_memory_equal(p, "def1234567", 10);
    outq_free(&q);
}

static void test_many(void **s)
{
    (void)s;
    struct outq q;
    size_t n, total = 0, out = 0;
    char want = 0;
    outq_init(&q, 1000);
    for (int round = 0; round < 2000; round++) {
        char piece[97];
        size_t k = (size_t)(round % 97) + 1;
        for (size_t i = 0; i < k; i++) piece[i] = (char)(total + i);
        if (outq_put(&q, piece, k) == 0) total += k;
        const char *p = outq_peek(&q, &n);
        size_t take = n / 2 + 1 < n ? n / 2 + 1 : n;
        for (size_t i = 0; i < take; i++) assert_int_equal(p[i], (char)(want + (char)i));
        want = (char)(want + (char)take);
        out += take;
        outq_done(&q, take);
        assert_true(outq_len(&q) <= 1000);
    }
    assert_int_equal(total - out, outq_len(&q));
    outq_free(&q);
}

/* A drained queue keeps its memory for the next write of the response;
 * outq_trim gives it back between responses; a huge one goes at once. */
static void test_memory_kept_then_trimmed(void **s)
{
    (void)s;
    struct outq q;
    static char big[300 * 1024];
    size_t n;
    outq_init(&q, 64u << 20);
    assert_int_equal(outq_put(&q, big, sizeof big), 0);
    outq_peek(&q, &n);
    outq_done(&q, n);
    assert_true(q.b.cap >= sizeof big); /* kept */
    outq_trim(&q);
    assert_true(q.b.cap <= 64 * 1024);  /* given back */
    for (int i = 0; i < 8; i++) assert_int_equal(outq_put(&q, big, sizeof big), 0);
    outq_peek(&q, &n);
    outq_done(&q, n);
    assert_true(q.b.cap <= 64 * 1024);  /* 2.4 MB drained: given back at once */
    outq_free(&q);
}

static void test_budget(void **s)
{
    (void)s;
    struct outq q;
    static char big[300000];
    size_t n;
    budget_set(100000);
    outq_init(&q, sizeof big * 4);
    /* A whole response asks first: refused past the budget, nothing queued. */
    assert_int_equal(outq_room(&q, sizeof big), -1);
    assert_int_equal(outq_len(&q), 0);
    assert_int_equal(budget_used(), 0);
    assert_int_equal(outq_room(&q, 50000), 0);
    size_t drawn = budget_used();
    assert_true(drawn >= 50000 && drawn <= 100000);
    assert_int_equal(outq_put(&q, big, 50000), 0); /* within the room: nothing more */
    assert_int_equal(budget_used(), drawn);
    /* A stream's puts are forced: bounded by the queue, not refused. */
    assert_int_equal(outq_put(&q, big, sizeof big), 0);
    assert_true(budget_spent());
    assert_int_equal(budget_used(), q.b.cap);
    assert_int_equal(outq_printf(&q, "%s", "head\r\n"), 0);
    outq_peek(&q, &n);
    outq_done(&q, n); /* drained while spent: given back, down to the reserve */
    assert_true(q.b.cap <= 64 * 1024);
    assert_int_equal(budget_used(), q.b.cap);
    outq_free(&q);
    assert_int_equal(budget_used(), 0);
    budget_set(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fifo), cmocka_unit_test(test_reserve),
                                       cmocka_unit_test(test_many),
                                       cmocka_unit_test(test_memory_kept_then_trimmed),
                                       cmocka_unit_test(test_budget)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
