/*
 * report.c - the job's last output and the sentinel, in the loop (see
 * report.h).
 *
 * report_run turns the loop one iteration at a time and advances through
 * the phases: DRAIN until no relay is draining, SENTINEL until the line is
 * written, DONE. The bound's timer and report_stop jump to DONE.
 */
#include "runner/run/report.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPORT_IDLE, REPORT_DRAIN, REPORT_SENTINEL, REPORT_DONE };

int report_seconds(double *out, char *err)
{
    const char *v = getenv(ENV_REPORT);
    *out = DEFAULT_REPORT_SECONDS;
    if (!v || !*v) return 0;
    if (num_seconds(v, NUM_MAX_SECONDS, out) < 0) {
        err_set(err, ENV_REPORT " must be a number of seconds from 0 to %.0f, not '%.40s'", NUM_MAX_SECONDS, v);
        return -1;
    }
    return 0;
}

void report_init(struct report *rp)
{
    memset(rp, 0, sizeof *rp);
    rp->phase = REPORT_IDLE;
}

void report_add_relay(struct report *rp, struct relay *r)
{
    if (rp->nrelays < REPORT_MAX_RELAYS) rp->relays[rp->nrelays++] = r;
}

static void abandon(struct report *rp, const char *why)
{
    size_t output = 0;
    if (rp->phase == REPORT_IDLE || rp->phase == REPORT_DONE) return;
    for (int i = 0; i < rp->nrelays; i++) output += relay_halt(rp->relays[i]);
    size_t line = rp->len - rp->off + (size_t)rp->newline;
    log_warn("%s: stdout is not taking output; abandoned %zu bytes of the job's output and %zu of the "
             "%zu bytes of the " SENTINEL_RESULT " line", why, output, line, rp->len + (size_t)rp->newline);
    rp->phase = REPORT_DONE;
}

void report_stop(struct report *rp)
{
    if (rp->phase == REPORT_IDLE) rp->stop_early = 1;
    abandon(rp, "stop signal during the report");
}

static void on_bound(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct report *rp = w->data;
    char why[96];
    snprintf(why, sizeof why, "no report within %.3g s of the job's exit", rp->seconds);
    abandon(rp, why);
}

static void on_room(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents; /* report_run writes after this loop iteration */
}

static int draining(const struct report *rp)
{
    for (int i = 0; i < rp->nrelays; i++)
        if (relay_draining(rp->relays[i])) return 1;
    return 0;
}

/* Write what stdout takes now. 1 when the line is out (or cannot be). */
static int write_line(struct report *rp)
{
    while (rp->newline || rp->off < rp->len) {
        ssize_t w = rp->newline ? outlet_write(rp->out, "\n", 1)
                                : outlet_write(rp->out, rp->line + rp->off, rp->len - rp->off);
        if (w < 0) {
            log_error("cannot write the sentinel to stdout");
            return 1;
        }
        if (w == 0) return 0;
        if (rp->newline) rp->newline = 0;
        else rp->off += (size_t)w;
    }
    return 1;
}

/* One step after a loop iteration; 1 when the report is over. */
static int advance(struct report *rp, int force_newline)
{
    if (rp->phase == REPORT_DRAIN && !draining(rp)) {
        /* Nothing more of the job's output goes out before the sentinel;
         * what comes later is the drain process's (drain.h) or lost. */
        for (int i = 0; i < rp->nrelays; i++) relay_halt(rp->relays[i]);
        rp->newline = force_newline || !outlet_at_line_start(rp->out);
        rp->phase = REPORT_SENTINEL;
    }
    if (rp->phase == REPORT_SENTINEL) {
        if (write_line(rp)) rp->phase = REPORT_DONE;
        else ev_io_start(rp->loop, &rp->room);
    }
    return rp->phase == REPORT_DONE;
}

void report_run(struct report *rp, struct ev_loop *loop, struct outlet *out, const char *line,
                size_t len, int force_newline, double bound)
{
    rp->loop = loop;
    rp->out = out;
    rp->line = line;
    rp->len = len;
    rp->off = 0;
    ev_io_init(&rp->room, on_room, out->fd, EV_WRITE);
    ev_now_update(loop);
    ev_timer_init(&rp->bound, on_bound, bound, 0.);
    rp->seconds = bound;
    rp->bound.data = rp;
    ev_timer_start(loop, &rp->bound);
    rp->phase = REPORT_DRAIN;
    for (int i = 0; i < rp->nrelays; i++) relay_drain(rp->relays[i], RELAY_DRAIN_MAX);
    while (!advance(rp, force_newline)) ev_run(loop, EVRUN_ONCE);
    ev_io_stop(loop, &rp->room);
    ev_timer_stop(loop, &rp->bound);
}
