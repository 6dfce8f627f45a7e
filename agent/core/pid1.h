/*
 * pid1.h - what any init must do, shared by the modes that supervise a child
 * (run, session): become a subreaper when not PID 1, catch every signal that
 * can be forwarded, and send signals on to a child or its process group.
 *
 * Owns the signal watchers. Does not decide what a signal means: each mode
 * gets every caught signal through its callback and chooses (forward, start a
 * grace period, shut down).
 */
#ifndef SA_PID1_H
#define SA_PID1_H

#include <ev.h>
#include <sys/types.h>

typedef void (*pid1_signal_fn)(struct ev_loop *loop, int sig, void *ctx);

struct pid1_config {
    int to_group;       /* forward to the child's process group (default) or the child */
    double grace;       /* SANDBOX_AGENT_GRACE_SECONDS */
};

struct nonce;
/* First step of a supervising mode: take the nonce (before anything can fork
 * or copy the environment) and read the log level. Logs what went wrong
 * and returns -1 (a usage error), else 0. */
int pid1_begin(struct nonce *n);

/* Read SANDBOX_AGENT_SIGNAL_TARGET and SANDBOX_AGENT_GRACE_SECONDS.
 * Returns 0, or -1 with a message in err. */
int pid1_config_read(struct pid1_config *cfg, char *err, size_t errlen);

/* Become a child subreaper unless PID 1, ignore SIGPIPE (a closed stdout must
 * be an EPIPE we can report, not our death) and start a watcher for every
 * forwardable signal. Returns 0, or -1 with *err set. */
int pid1_init(struct ev_loop *loop, pid1_signal_fn fn, void *ctx, const char **err);

/* Stop the signal watchers (before exit). */
void pid1_stop(struct ev_loop *loop);

/* Send sig to pid, or to its process group when to_group. Errors are logged
 * at debug level only: a target that has just exited is normal. */
void pid1_forward(pid_t pid, int sig, int to_group);

/* 1 when this process is PID 1 of its PID namespace. */
int pid1_is_init(void);

#endif
