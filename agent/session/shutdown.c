/*
 * shutdown.c - the session's SIGTERM/SIGINT sequence (see session_priv.h; README
 * "`sandbox-agent session -- HANDLER ARGV...`", SIGTERM/SIGINT).
 *
 * Owns the grace timer and the stop of the handler (agent/core/stop.h):
 * stop reading the mailbox, answer what the handler has not started on
 * shutting_down, give what is in flight the grace period and answer the
 * rest shutting_down; then close the handler's stdin (a well-behaved handler
 * exits on EOF), SIGTERM its group, and SIGKILL it when the grace is over,
 * but never sooner than min(grace, 1 s) after the SIGTERM. The loop ends when
 * the handler has exited. Any other signal is forwarded to the handler.
 */
#include "agent/session/session_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <signal.h>

#define SHUTTING_DOWN_MSG "the session is shutting down"

void shutdown_finish(struct session *s)
{
    stop_cancel(s->loop, &s->stop);
    s->done = 1;
    output_finish(s); /* ends the loop once stdout has the rest, or at the deadline */
}

static void on_kill(struct ev_loop *loop, struct stop *st, void *ctx)
{
    (void)loop;
    (void)st;
    (void)ctx;
    log_warn("the handler is still running after SIGTERM; sending SIGKILL");
}

/* EOF, SIGTERM, and SIGKILL at the deadline (or min(grace, 1 s) from now). */
static void stop_handler(struct session *s)
{
    if (s->handler_stopped) return;
    s->handler_stopped = 1;
    ev_timer_stop(s->loop, &s->grace);
    if (!handler_running(&s->h)) {
        shutdown_finish(s);
        return;
    }
    handler_close_stdin(&s->h);
    double left = s->deadline - ev_now(s->loop);
    double floor = s->cfg.grace < 1.0 ? s->cfg.grace : 1.0;
    stop_begin(s->loop, &s->stop, s->h.pid, SIGTERM, 1, left > floor ? left : floor);
}

void shutdown_progress(struct session *s)
{
    if (s->stopping && !s->handler_stopped && s->ninflight == 0) stop_handler(s);
}

static void on_grace(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct session *s = w->data;
    size_t n = requests_answer_started(s, SESSION_ERR_SHUTTING_DOWN, SHUTTING_DOWN_MSG);
    if (n) log_warn("grace period over: %zu requests answered " SESSION_ERR_SHUTTING_DOWN, n);
    stop_handler(s);
}

static void begin_shutdown(struct session *s, int sig)
{
    if (s->stopping) return;
    s->stopping = 1;
    log_info("signal %d: shutting down (grace %.3g s)", sig, s->cfg.grace);
    s->deadline = ev_now(s->loop) + s->cfg.grace;
    intake_stop(s);
    handler_no_restart(&s->h);
    /* What the handler has not started on is answered now; only what is in
     * flight gets the grace period. */
    requests_answer_unstarted(s, SESSION_ERR_SHUTTING_DOWN, SHUTTING_DOWN_MSG);
    if (!handler_running(&s->h) || s->ninflight == 0) {
        stop_handler(s);
        return;
    }
    ev_timer_set(&s->grace, s->cfg.grace, 0.);
    ev_timer_start(s->loop, &s->grace);
}

void shutdown_on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    (void)loop;
    struct session *s = ctx;
    if (sig == SIGTERM || sig == SIGINT) {
        begin_shutdown(s, sig);
        return;
    }
    /* Anything else is the handler's business, as with any init. */
    if (handler_running(&s->h)) pid1_forward(&s->cfg, s->h.pid, sig);
}

void shutdown_init(struct session *s)
{
    stop_init(&s->stop, on_kill, s);
    ev_timer_init(&s->grace, on_grace, 0., 0.);
    s->grace.data = s;
}
