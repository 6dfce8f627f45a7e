/*
 * test_pause.c - stops of the agent and the run clock (agent/core/pause.c):
 * the gap arithmetic, and a real stop of the loop's timers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/io.h"
#include "agent/core/pause.h"

#include <ev.h>
#include <time.h>

static void test_gap(void **s)
{
    (void)s;
    /* a wait within its bound and the slack is no stop */
    assert_true(pause_gap(0.5, PAUSE_BEAT) == 0.0);
    assert_true(pause_gap(PAUSE_BEAT + PAUSE_SLACK, PAUSE_BEAT) == 0.0);
    /* past it: all of it is the stop (moved whole: no timer early) */
    assert_true(pause_gap(30.2, PAUSE_BEAT) == 30.2);
    assert_true(pause_gap(PAUSE_SLACK + 0.01, 0.0) > 0.0);
    assert_true(pause_gap(PAUSE_SLACK, 0.0) == 0.0);
}

static int fired;
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) { fired++; }

/* A callback that holds the loop for 2.5 s (as a stop between waits
 * would): the 1 s timer armed before it fires 2.5 s later than it would,
 * not at once, and pause_now() leaves the 2.5 s out. */
static void on_hold(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct timespec ts = {2, 500000000};
    while (nanosleep(&ts, &ts) != 0) {}
}

static void test_stop_moves_timers(void **s)
{
    (void)s;
    struct ev_loop *loop = ev_default_loop(0);
    ev_timer t, hold;
    pause_start(loop);
    ev_timer_init(&t, on_timer, 1.0, 0.);
    ev_timer_init(&hold, on_hold, 0.01, 0.);
    ev_timer_start(loop, &t);
    ev_timer_start(loop, &hold);
    double run0 = pause_now(), t0 = io_now();
    ev_run(loop, EVRUN_ONCE); /* the hold */
    assert_int_equal(fired, 0);
    assert_int_equal(pause_count(), 0); /* seen at the next turn */
    ev_run(loop, EVRUN_ONCE);
    assert_int_equal(pause_count(), 1);
    assert_true(pause_total() >= 2.5);
    while (!fired) ev_run(loop, EVRUN_ONCE);
    double took = io_now() - t0;
    assert_true(took >= 3.5);                   /* 1 s of run time after the 2.5 s stop */
    assert_true(pause_now() - run0 < took - 2.4); /* the run clock left the stop out */
    pause_stop(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap),
        cmocka_unit_test(test_stop_moves_timers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
