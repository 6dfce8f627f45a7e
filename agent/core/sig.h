/*
 * sig.h - the agent's one signal set-up: which signals a mode catches, how
 * each caught signal reaches the mode (a callback from the event loop, never
 * from a handler), and SIGPIPE.
 *
 * Owns the signal watchers. Does not decide what a signal means: the mode's
 * callback chooses (forward, start a grace period, shut down).
 */
#ifndef SA_SIG_H
#define SA_SIG_H

#include <ev.h>

typedef void (*sig_fn)(struct ev_loop *loop, int sig, void *ctx);

/* Catch the signals of the 0-terminated list `sigs`, or with sigs NULL every
 * signal that an init forwards (see sig.c for which and why). Each caught
 * signal calls fn from the loop. The watchers do not keep the loop alive.
 * Returns 0, or -1 with a message in err (ERR_LEN bytes). */
int sig_catch(struct ev_loop *loop, const int *sigs, sig_fn fn, void *ctx, char *err);
/* Stop every watcher sig_catch started. */
void sig_release(struct ev_loop *loop);

/* Ignore SIGPIPE for the whole process: a write to a closed stdout or socket
 * must fail with EPIPE so the agent can still report, not kill it. Children
 * get the default back (spawn.c resets every disposition). Returns 0 or -1. */
int sig_ignore_pipe(void);

#endif
