/*
 * handler.h - the session's warm handler process: starting it with pipes on
 * its stdin and stdout, reading its stdout as bounded lines, restarting it
 * with backoff after it exits, not restarting it once the session shuts down.
 *
 * Owns the handler's pid, its pipe fds (our ends O_CLOEXEC and non-blocking),
 * the restart timer, and, when the agent's stdout and stderr are one pipe,
 * the handler's own stderr pipe (agent/core/errpipe.h: it must not read the
 * reply lines back from a shared fd 2), kept across restarts. Does not own what is written to its stdin: the
 * session writes there itself when told the pipe is writable, so the queue
 * and its accounting stay in one place. Does not stop it either: the session's
 * shutdown does that with agent/core/stop.h on the pid it reads here.
 */
#ifndef SA_SESSION_HANDLER_H
#define SA_SESSION_HANDLER_H

#include "agent/core/errpipe.h"
#include "agent/core/lsplit.h"
#include "agent/core/spawn.h"

#include <ev.h>
#include <sys/types.h>

/* Backoff: base * 1, 4, 16, 64; reset after base * 60 of running. */
#define HANDLER_BACKOFF_STEPS 4
/* A handler stdout line longer than this is not a reply; the session answers
 * the request too_large (README: "the handler's reply is over 64 MiB"). */
#define HANDLER_REPLY_MAX (64u * 1024u * 1024u)
#define HANDLER_HEALTHY_FACTOR 60.0
#define HANDLER_READ_CHUNK (64 * 1024)
/* At most this much is read per wakeup, so a chatty handler cannot starve
 * the mailbox and the signal watchers. */
#define HANDLER_READ_BUDGET (1024 * 1024)
/* After the handler exits, at most this much more of its stdout is read
 * (a surviving grandchild may hold the pipe open and keep writing). */
#define HANDLER_DRAIN_MAX (4 * 1024 * 1024)

struct handler_ops {
    void (*on_line)(void *ctx, const char *p, size_t n);
    void (*on_too_large)(void *ctx, const char *head, size_t n);
    void (*on_writable)(void *ctx);
    void (*on_started)(void *ctx);
    /* Every line it wrote before exiting has been handed on already. */
    void (*on_exit)(void *ctx, int status);
};

struct handler {
    struct ev_loop *loop;
    char **argv;
    const struct handler_ops *ops;
    void *ctx;
    double base;
    pid_t pid;        /* > 0 while running */
    int in_fd, out_fd;
    ev_io wr, rd;
    ev_timer restart;
    struct reaper_watch rw;
    struct lsplit split;
    ev_tstamp started;
    int attempt;      /* index into the backoff steps */
    int no_restart;
    int read_paused;
    char *rbuf;
    struct errpipe err; /* its stderr under 2>&1: a pipe of its own, relayed */
};

void handler_init(struct handler *h, struct ev_loop *loop, char **argv, double base,
                  const struct handler_ops *ops, void *ctx);
/* Start it now. Returns 0 when a process was made; *exec_errno tells whether
 * the program ran (0) or could not be executed. -1 with err when no process
 * could be made at all (ERR_LEN bytes). */
int handler_start(struct handler *h, int *exec_errno, char *err);
int handler_running(const struct handler *h);
/* Stop (or start again) reading its stdout: the session's stdout is behind.
 * Lasts across restarts; what it writes meanwhile waits in the pipe. After
 * it exits, its last HANDLER_DRAIN_MAX bytes are read regardless. */
void handler_pause_read(struct handler *h, int on);
/* Ask for (or stop asking for) on_writable calls. */
void handler_want_write(struct handler *h, int on);
/* Never start it again (shutdown); cancels a pending restart. */
void handler_no_restart(struct handler *h);
/* Close our end of its stdin: EOF for it at shutdown, or the end is unusable
 * (EPIPE). Nothing more is written to it until the next start. */
void handler_close_stdin(struct handler *h);
/* Everything freed and closed; harmless on a handler handler_init never saw
 * (all zero). */
void handler_free(struct handler *h);

#endif
