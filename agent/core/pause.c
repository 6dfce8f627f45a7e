/*
 * pause.c - stops of the whole agent, and the clock that leaves them out
 * (see pause.h).
 *
 * Where each check sits in a turn of libev's loop: the release callback
 * runs just before the wait (epoll_wait), the acquire callback just after
 * it, before the loop reads its clock again and before any timer is looked
 * at; the prepare watcher runs after the turn's callbacks, before the clock
 * is read for the next wait. A stop during the wait shows in acquire, one
 * during the callbacks in prepare; either way ev_resume moves the timers
 * before they are compared with the clock.
 */
#include "agent/core/pause.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

static struct {
    struct ev_loop *loop;
    ev_timer beat;
    ev_prepare turn;
    double rel, acq; /* CLOCK_MONOTONIC at the last release and acquire */
    int waited;      /* acq is set */
    double total;
    unsigned count;
} P;

double pause_gap(double took, double bound)
{
    return took > bound + PAUSE_SLACK ? took : 0.0;
}

/* A stop of gap seconds ended: the loop's timers go later by what the loop
 * has not counted yet (libev's ev_resume: the clock now less the loop's
 * last reading, which is where the gap began), and the run clock leaves it
 * out. */
static void stopped(struct ev_loop *loop, double gap, const char *where)
{
    ev_resume(loop);
    P.total += gap;
    P.count++;
    log_info("pause: the agent was stopped for %.3f s (seen %s); its timers wait as long again", gap, where);
}

static void on_release(struct ev_loop *loop) { P.rel = io_now(); }

static void on_acquire(struct ev_loop *loop)
{
    double now = io_now(), gap = pause_gap(now - P.rel, PAUSE_BEAT);
    if (gap > 0) stopped(loop, gap, "after a wait");
    P.acq = gap > 0 ? io_now() : now;
    P.waited = 1;
}

static void on_turn(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)w;
    (void)revents;
    if (!P.waited) return;
    double gap = pause_gap(io_now() - P.acq, 0.0);
    if (gap > 0) stopped(loop, gap, "between waits");
}

/* Nothing to do: being due bounds the loop's wait. */
static void on_beat(struct ev_loop *loop, ev_timer *w, int revents) {}

void pause_start(struct ev_loop *loop)
{
    if (P.loop) return;
    P.loop = loop;
    P.waited = 0;
    ev_timer_init(&P.beat, on_beat, PAUSE_BEAT, PAUSE_BEAT);
    ev_timer_start(loop, &P.beat);
    ev_unref(loop);
    ev_prepare_init(&P.turn, on_turn);
    ev_prepare_start(loop, &P.turn);
    ev_unref(loop);
    ev_set_loop_release_cb(loop, on_release, on_acquire);
}

void pause_stop(struct ev_loop *loop)
{
    if (P.loop != loop) return;
    ev_set_loop_release_cb(loop, 0, 0);
    ev_ref(loop);
    ev_timer_stop(loop, &P.beat);
    ev_ref(loop);
    ev_prepare_stop(loop, &P.turn);
    P.loop = NULL;
}

double pause_now(void) { return io_now() - P.total; }
unsigned pause_count(void) { return P.count; }
double pause_total(void) { return P.total; }
