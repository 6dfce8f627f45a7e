/*
 * drain.h - keeping a leftover's output working after the agent exits.
 *
 * As a subreaper the agent leaves the job's orphans running, as tini does.
 * Their stdout (and, under `2>&1`, stderr) is a relay pipe whose only reader
 * is the agent: when the agent exits, an orphan's next write would get
 * SIGPIPE, where under tini it would still reach the log. So when a relay
 * pipe still has a writer after the report, a drain process takes the pipes
 * over and copies them to stdout until every writer is gone.
 *
 * The drain process is a fork of the agent, made before the nonce is in any
 * buffer: it wipes the copies of the nonce it was handed and the core's own,
 * keeps only the relay pipes, stdout and stderr (every other fd is closed),
 * and never execs, so it stays non-dumpable (its fds and memory are closed
 * to the job, as the agent's are). It waits until it is told to go or not.
 */
#ifndef SA_RUNNER_RUN_DRAIN_H
#define SA_RUNNER_RUN_DRAIN_H

#include "agent/core/nonce.h"

#include <sys/types.h>

#define DRAIN_MAX_FDS 2

struct drain {
    pid_t pid;  /* > 0 once forked */
    int ctl;    /* write end of its control pipe */
};

/* Fork it, holding the pipe read ends fds[0..n). secret: the caller's
 * nonce copy, wiped in the child. Returns 0, or -1 (logged) when it could
 * not be made: the orphans then lose their output at exit, as before. */
int drain_fork(struct drain *d, const int *fds, int n, struct nonce *secret);
/* Let it copy until every writer is gone; the agent may then exit. */
void drain_go(struct drain *d);
/* Not needed after all: it exits at once. */
void drain_cancel(struct drain *d);

#endif
