/*
 * errpipe.h - a child's own stderr pipe when the agent's stdout and stderr
 * are one file (`2>&1`, as log shippers run it).
 *
 * A child whose fd 2 is the very pipe (or file) the agent prints its
 * protocol lines on can reopen /proc/self/fd/2 for reading and take those
 * lines, nonce included, before the log reader sees them (or print a forged
 * one in their place). So such a child gets a pipe of its own as stderr,
 * relayed in line mode (relay.h) to the agent's output: it keeps seeing its
 * stderr where it always went, and the agent's lines never pass through
 * anything the child holds.
 *
 * Owns the pipe (both ends) and its relay.
 */
#ifndef SA_CORE_ERRPIPE_H
#define SA_CORE_ERRPIPE_H

#include "agent/core/outlet.h"
#include "agent/core/relay.h"

#include <ev.h>

struct errpipe {
    int active;         /* the relay runs */
    int wfd;            /* the child's stderr; -1: it inherits the agent's */
    struct outlet own;  /* fd 2, when no outlet was given */
    struct relay relay;
};

/* Nothing set up yet: the child inherits fd 2 (what errpipe_open starts
 * with, for a caller that may never call it). */
void errpipe_init(struct errpipe *e);
/* When fds 1 and 2 are the same pipe or regular file, make the pipe and
 * start relaying it to out (the agent's stdout outlet, so both relays share
 * one idea of where the last line ended), or to an outlet on fd 2 when out
 * is NULL. Otherwise, or when that fails (logged), the child inherits fd 2.
 * The struct must not move while active. */
void errpipe_open(struct errpipe *e, struct ev_loop *loop, struct outlet *out);
/* The fd to give the child as its stderr, or -1 to let it inherit. */
int errpipe_child_fd(const struct errpipe *e);
/* Close the agent's copy of the write end (once no further child will get
 * it), so the relay sees EOF when the last child holding it is gone. */
void errpipe_close_write(struct errpipe *e);
void errpipe_close(struct errpipe *e);

#endif
