/*
 * report.h - the end of the job's output and the sentinel (README
 * "`sandbox-agent run`", steps 6 and "Prompt report"), inside the event loop.
 *
 * After the job exits: what its relays already hold is copied (at most
 * RELAY_DRAIN_MAX more bytes of each), then the sentinel line is written,
 * starting a line. All of it with writes that never block, so signals are
 * still read and children still reaped. A stalled log reader cannot hold the
 * agent: a stop signal (SIGTERM/SIGINT) during the report, or the report's
 * bound running out, abandons what is unwritten (logged with its byte
 * count) and the agent goes on to the webhook and its exit.
 *
 * Owns the bound's timer and the sentinel's progress; not the relays.
 */
#ifndef SA_RUNNER_RUN_REPORT_H
#define SA_RUNNER_RUN_REPORT_H

#include "agent/core/outlet.h"
#include "agent/core/relay.h"

#include <ev.h>
#include <stddef.h>

/* After the job exits, at most this much more of each relay is copied before
 * the sentinel: a background process that never stops writing cannot delay
 * the report. */
#define RELAY_DRAIN_MAX (1024 * 1024)
#define REPORT_MAX_RELAYS 2

struct report {
    struct ev_loop *loop;
    struct outlet *out;
    struct relay *relays[REPORT_MAX_RELAYS];
    int nrelays;
    ev_timer bound;
    double seconds;      /* the bound */
    ev_io room;          /* the sentinel waits for room on stdout */
    const char *line;
    size_t len, off;
    int newline;         /* a "\n" still goes before the line */
    int phase;           /* REPORT_IDLE, _DRAIN, _SENTINEL, _DONE */
    int stop_early;      /* a stop signal came after the job's exit, before the report */
};

/* SANDBOX_AGENT_REPORT_SECONDS: 0, or -1 with err for a bad value. */
int report_seconds(double *out, char *err);

void report_init(struct report *rp);
void report_add_relay(struct report *rp, struct relay *r);
/* Drain the relays, then write line (a complete sentinel line) to out,
 * preceded by a newline unless out is at a line start (or with
 * force_newline); returns when all of it is written, out is broken, or it
 * was abandoned after `bound` seconds. */
void report_run(struct report *rp, struct ev_loop *loop, struct outlet *out, const char *line,
                size_t len, int force_newline, double bound);
/* A stop signal arrived after the job exited: abandon what is left if the
 * report is running, else note it (stop_early) for the report's bound. */
void report_stop(struct report *rp);

#endif
