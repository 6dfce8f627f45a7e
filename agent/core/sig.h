/*
 * sig.h - the agent's one signal set-up: which signals a mode catches, how
 * each caught signal reaches the mode (a callback from the event loop, never
 * from a handler), SIGPIPE, and what a child gets back at exec.
 *
 * Owns the signalfd and the record of the signal state the agent was started
 * with. Does not decide what a signal means: the mode's callback chooses
 * (forward, start a grace period, shut down).
 */
#ifndef SA_CORE_SIG_H
#define SA_CORE_SIG_H

#include <ev.h>

typedef void (*sig_fn)(struct ev_loop *loop, int sig, void *ctx);

/* The kernel's 64-signal set, as the raw syscalls take it (the C library's
 * sigset_t hides the signals it reserves). */
typedef unsigned long long sig_kset;

/* First thing in main: remember the signal mask and the ignored
 * dispositions the agent was started with (nohup, `trap '' HUP`, a blocked
 * set), so that every workload gets them back at exec, as it would have
 * without the agent in between (tini and catatonit do the same). */
void sig_record_initial(void);
/* What sig_record_initial recorded, for a child to restore just before its
 * exec (spawn.c): the start-up mask, and the ignored signals among the two
 * whose dispositions the agent changes, SIGPIPE (ignored) and SIGCHLD
 * (libev's handler), which go back to ignored or default (exec resets
 * every other handler itself and keeps SIG_IGN and the mask). */
void sig_initial(sig_kset *mask, sig_kset *ignored);
/* The kernel's struct sigaction, as rt_sigaction takes it (x86-64 and
 * most others); sig_kset the mask's size argument. */
struct sig_kaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    sig_kset mask;
};
#define SIG_KBIT(sig) (1ULL << ((sig) - 1))
/* Block every signal (around a clone, so that no handler runs in the
 * child), *old the mask before; and set the mask back. Through the raw
 * syscall: the C library's sigprocmask hides the signals it reserves from
 * the mask it returns, and restoring that would unblock what the signalfd
 * reads. */
void sig_block_all(sig_kset *old);
void sig_set_mask(const sig_kset *mask);

/* Catch the signals of the 0-terminated list `sigs`, or with sigs NULL every
 * signal that an init forwards (see sig.c for which and why). They are
 * blocked and read from one signalfd, so each one sent is seen (real-time
 * signals are queued, not coalesced) and each calls fn from the loop. The
 * watcher does not keep the loop alive. Also ignores SIGPIPE.
 * Returns 0, or -1 with a message in err (ERR_LEN bytes). */
int sig_catch(struct ev_loop *loop, const int *sigs, sig_fn fn, void *ctx, char *err);
/* Stop reading signals (before exit). They stay blocked: one arriving now
 * must not kill the agent between its report and its exit. */
void sig_release(struct ev_loop *loop);

/* Ignore SIGPIPE for the whole process: a write to a closed stdout or socket
 * must fail with EPIPE so the agent can still report, not kill it. Children
 * get their start-up disposition back (sig_initial). Returns 0 or -1. */
int sig_ignore_pipe(void);

#endif
