/*
 * pid1.h - what any init must do, shared by the modes that supervise a child
 * (run, session): take the nonce first, become a subreaper when not PID 1,
 * catch every forwardable signal (sig.h), and read the two variables that
 * tune every supervisor (signal target, grace period).
 */
#ifndef SA_CORE_PID1_H
#define SA_CORE_PID1_H

#include "agent/core/rewrite.h"
#include "agent/core/sig.h"

#include <ev.h>
#include <sys/types.h>

struct pid1_config {
    int to_group;       /* forward to the child's process group (default) or the child */
    double grace;       /* SANDBOX_AGENT_GRACE_SECONDS */
    struct rewrite rewrite; /* SANDBOX_AGENT_SIGNAL_REWRITE */
};

struct nonce;
/* First step of a supervising mode: take the nonce (before anything can fork
 * or copy the environment) and read the log level. Logs what went wrong
 * and returns -1 (a usage error), else 0. */
int pid1_begin(struct nonce *n);

/* A supervisor's command line, `MODE [--help] [--] CMD [ARG...]`: *cmd points
 * at the first word of the command (NULL when there is none; an empty one
 * after `--` is an error), *help is set for --help or -h. Returns 0, or -1
 * with a message in err ("unknown option", "no command after --"). */
int pid1_command_line(int argc, char **argv, const char *mode, char ***cmd, int *help, char *err);

/* Read SANDBOX_AGENT_SIGNAL_TARGET, SANDBOX_AGENT_GRACE_SECONDS and
 * SANDBOX_AGENT_SIGNAL_REWRITE.
 * Returns 0, or -1 with a message in err (ERR_LEN bytes). */
int pid1_config_read(struct pid1_config *cfg, char *err);

/* Become a child subreaper unless PID 1 (logged when refused): the orphans
 * of our descendants are then ours to reap, as PID 1's are. */
void pid1_subreaper(void);

/* Become a child subreaper unless PID 1, keep the agent out of the OOM
 * killer's way (oom_protect), and catch every forwardable signal
 * (sig_catch with NULL). Returns 0, or -1 with a message in err. */
int pid1_init(struct ev_loop *loop, sig_fn fn, void *ctx, char *err);

/* Forward sig to pid (its group unless the target is `child`), rewritten as
 * configured. Returns the signal sent, or 0 when the rewrite drops it. */
int pid1_forward(const struct pid1_config *cfg, pid_t pid, int sig);

/* Stop the signal watchers (before exit). */
void pid1_stop(struct ev_loop *loop);

/* 1 when this process is PID 1 of its PID namespace. */
int pid1_is_init(void);

#endif
