/*
 * test_budget.c - the process's memory budget (agent/core/budget.c) and its
 * draws in the core: the counter (take, force, give, the limit, the peak),
 * the default for a machine's memory, and that a budget buffer (buf.c) and
 * a ring (ring.c) draw exactly what they hold and give all of it back on
 * every path: growth, refusal, a bound passed, a forced reserve, reset,
 * shrink and free. Every test ends with nothing drawn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/budget.h"
#include "agent/core/buf.h"
#include "agent/core/ring.h"

#include <stdint.h>
#include <string.h>

#define MIB (1u << 20)

static int fresh(void **s)
{
    (void)s;
    budget_set(0);
    assert_int_equal(budget_used(), 0);
    return 0;
}

static int none_left(void **s)
{
    (void)s;
    assert_int_equal(budget_used(), 0); /* every take had its give */
    budget_set(0);
    return 0;
}

static void test_counter(void **s)
{
    (void)s;
    /* No limit: everything is taken, and counted. */
    assert_int_equal(budget_take(5 * MIB), 0);
    assert_int_equal(budget_used(), 5 * MIB);
    assert_false(budget_spent());
    assert_int_equal(budget_room(), SIZE_MAX);
    budget_give(5 * MIB);
    budget_set(10);
    assert_int_equal(budget_limit(), 10);
    assert_int_equal(budget_take(4), 0);
    assert_int_equal(budget_take(7), -1); /* 11 > 10: nothing taken */
    assert_int_equal(budget_used(), 4);
    assert_int_equal(budget_room(), 6);
    assert_int_equal(budget_take(6), 0); /* exactly the limit */
    assert_true(budget_spent());
    assert_int_equal(budget_room(), 0);
    assert_int_equal(budget_take(1), -1);
    assert_int_equal(budget_take((size_t)-1), -1); /* no wrap-around */
    budget_force(5); /* what must not fail passes the limit */
    assert_int_equal(budget_used(), 15);
    assert_int_equal(budget_peak(), 15);
    budget_give(15);
    assert_false(budget_spent());
    assert_int_equal(budget_peak(), 15);
    budget_set(10); /* a new limit starts a new peak */
    assert_int_equal(budget_peak(), 0);
}

static void test_default(void **s)
{
    (void)s;
    assert_int_equal(budget_default_for(0), BUDGET_UNKNOWN_DEFAULT);
    assert_int_equal(budget_default_for(128ull * MIB), BUDGET_MIN);        /* a quarter: 32 MiB, raised */
    assert_int_equal(budget_default_for(256ull * MIB), 64ull * MIB);       /* a 256Mi Pod */
    assert_int_equal(budget_default_for(512ull * MIB), 128ull * MIB);      /* E2B's smallest sandbox */
    assert_int_equal(budget_default_for(2048ull * MIB), 512ull * MIB);
    assert_int_equal(budget_default_for(64ull << 30), BUDGET_MAX_DEFAULT); /* a host */
    assert_int_equal(budget_default_for(~0ull), BUDGET_MAX_DEFAULT);       /* "no limit" */
}

static void test_buf_draws_what_it_holds(void **s)
{
    (void)s;
    struct buf plain, b;
    char chunk[1000];
    memset(chunk, 'x', sizeof chunk);
    buf_init(&plain, 1 << 20);
    assert_int_equal(buf_append(&plain, chunk, sizeof chunk), 0);
    assert_int_equal(budget_used(), 0); /* a plain buffer draws nothing */
    buf_free(&plain);

    buf_init_budget(&b, 5000);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(buf_append(&b, chunk, sizeof chunk), 0);
        assert_int_equal(budget_used(), b.cap);
    }
    assert_true(b.cap <= 5001); /* never more than the bound and its terminator */
    assert_int_equal(buf_append(&b, chunk, sizeof chunk), 0);
    assert_int_equal(b.cap, 5001);
    assert_int_equal(budget_used(), 5001);
    /* Past the bound: refused, nothing more drawn, and said to be the bound. */
    assert_int_equal(buf_append(&b, "y", 1), -1);
    assert_true(buf_over(&b, 1));
    assert_int_equal(budget_used(), 5001);
    buf_reset(&b); /* keeps its memory, and its draw */
    assert_int_equal(budget_used(), 5001);
    buf_free(&b);
    assert_int_equal(budget_used(), 0);
    /* A freed buffer is still one of the budget's. */
    assert_int_equal(buf_putc(&b, 'z'), 0);
    assert_int_equal(budget_used(), b.cap);
    buf_free(&b);
}

static void test_buf_refused_by_the_budget(void **s)
{
    (void)s;
    struct buf b;
    char big[3000];
    memset(big, 'x', sizeof big);
    budget_set(2048);
    buf_init_budget(&b, 1 << 20);
    assert_int_equal(buf_append(&b, big, 1000), 0); /* 1024 drawn */
    assert_int_equal(budget_used(), 1024);
    assert_int_equal(buf_append(&b, big, 2000), -1); /* 4096 would pass 2048 */
    assert_false(buf_over(&b, 2000));                /* the budget's refusal, not the bound's */
    assert_int_equal(b.len, 1000);                   /* the buffer as it was */
    assert_int_equal(budget_used(), 1024);
    /* Forced: drawn past the limit. */
    assert_int_equal(buf_reserve_force(&b, 2000), 0);
    assert_int_equal(budget_used(), 4096);
    assert_true(budget_spent());
    assert_int_equal(buf_append(&b, big, 2000), 0); /* fits what was reserved: no draw */
    assert_int_equal(budget_used(), 4096);
    /* A forced reserve past the bound still fails. */
    struct buf small;
    buf_init_budget(&small, 10);
    assert_int_equal(buf_reserve_force(&small, 11), -1);
    assert_int_equal(budget_used(), 4096);
    buf_free(&small);
    buf_free(&b);
    assert_int_equal(budget_used(), 0);
}

static void test_ring_draws_what_it_holds(void **s)
{
    (void)s;
    struct ring r;
    char chunk[5000];
    memset(chunk, 'r', sizeof chunk);
    ring_init(&r, 100000);
    assert_int_equal(budget_used(), 0); /* a quiet ring costs nothing */
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ring_write(&r, chunk, sizeof chunk), 0);
        assert_int_equal(budget_used(), r.cap);
    }
    assert_int_equal(r.cap, 32768);
    assert_int_equal(ring_limit(&r), 100000);
    /* Finished: shrunk to what it keeps, whatever the budget says. */
    budget_set(1);
    ring_shrink(&r);
    assert_int_equal(r.cap, 30000);
    assert_int_equal(budget_used(), 30000);
    budget_set(0);
    for (int i = 0; i < 40; i++) assert_int_equal(ring_write(&r, chunk, sizeof chunk), 0);
    assert_int_equal(r.cap, 100000); /* grown to its bound, and wrapped */
    assert_int_equal(budget_used(), 100000);
    ring_free(&r);
    assert_int_equal(budget_used(), 0);
    ring_free(&r); /* twice: nothing given twice */
    assert_int_equal(budget_used(), 0);
}

static void test_ring_refused_keeps_less(void **s)
{
    (void)s;
    struct ring r;
    char chunk[4096];
    uint64_t off = 0;
    size_t n;
    char out[70000];
    budget_set(10000);
    ring_init(&r, 1 << 20);
    assert_int_equal(ring_reserve(&r, 4096), 0); /* the first 4096 */
    assert_int_equal(budget_used(), 4096);
    assert_int_equal(ring_reserve(&r, 100), 0); /* fits: nothing drawn */
    assert_int_equal(budget_used(), 4096);
    for (int i = 0; i < 3; i++) {
        memset(chunk, 'a' + i, sizeof chunk);
        /* The second write wants 8192 (drawn: 8192 + the old 4096 while it
         * moves = 12288 > 10000): refused, it keeps the last 4096. */
        int rc = ring_write(&r, chunk, sizeof chunk);
        assert_int_equal(rc, i == 0 ? 0 : -1);
    }
    assert_true(r.refused);
    assert_int_equal(r.cap, 4096);
    assert_int_equal(ring_limit(&r), 4096); /* the bound for now */
    assert_int_equal(budget_used(), 4096);
    assert_int_equal(r.end, 3 * 4096); /* every byte counted */
    n = ring_read(&r, &off, out, sizeof out, NULL);
    assert_int_equal(n, 4096);
    assert_int_equal(out[0], 'c');
    assert_int_equal(ring_reserve(&r, 1), -1);
    /* Room again: it grows, and the bound is its own once more. */
    budget_set(0);
    assert_int_equal(ring_reserve(&r, 1), 0);
    assert_false(r.refused);
    assert_int_equal(ring_limit(&r), 1 << 20);
    assert_int_equal(budget_used(), r.cap);
    ring_free(&r);
    /* A ring refused its very first memory counts and keeps nothing. */
    budget_set(100);
    ring_init(&r, 1 << 20);
    assert_int_equal(ring_write(&r, "abc", 3), -1);
    assert_int_equal(ring_limit(&r), 0);
    assert_int_equal(r.end, 3);
    assert_int_equal(budget_used(), 0);
    ring_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counter, fresh, none_left),
        cmocka_unit_test_setup_teardown(test_default, fresh, none_left),
        cmocka_unit_test_setup_teardown(test_buf_draws_what_it_holds, fresh, none_left),
        cmocka_unit_test_setup_teardown(test_buf_refused_by_the_budget, fresh, none_left),
        cmocka_unit_test_setup_teardown(test_ring_draws_what_it_holds, fresh, none_left),
        cmocka_unit_test_setup_teardown(test_ring_refused_keeps_less, fresh, none_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
