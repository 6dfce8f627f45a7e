/*
 * sig.c - catching signals for a mode (see sig.h).
 *
 * Which signals are caught, and why the others are not:
 *   SIGKILL, SIGSTOP  cannot be caught.
 *   SIGCHLD           belongs to the reaper (libev's child watcher reaps on it).
 *   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
 *                     are synchronous faults of the agent itself; catching them
 *                     would turn a crash into a silent loop.
 *   SIGPIPE           is ignored: a write to a closed stdout must fail with
 *                     EPIPE so the agent can still exit with the job's code.
 * Everything else (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, SIGWINCH,
 * SIGCONT, SIGABRT sent by kill, SIGALRM, SIGTSTP/SIGTTIN/SIGTTOU, SIGURG,
 * SIGXCPU, SIGPWR, the real-time signals, ...) is caught and handed to the mode.
 *
 * The signals between 32 and SIGRTMIN (32-34 with musl, 32-33 with glibc)
 * are reserved by the C library, whose sigaction() refuses them, so libev
 * cannot watch them. Yet a glibc program's SIGRTMIN is 34, and a host may
 * send it; left alone it would kill a non-PID-1 agent. Those are blocked with
 * the raw syscall and read from a signalfd instead (we run no threads or
 * timers that the C library would need them for).
 *
 * As PID 1 this matters twice over: the kernel drops any signal PID 1 has no
 * handler for, which is why `docker stop` on a bare bash runner waits out its
 * full timeout and ends in SIGKILL.
 */
#include "agent/core/sig.h"
#include "agent/core/err.h"
#include "agent/core/log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef NSIG
#define NSIG 65
#endif

struct sigw {
    ev_signal w;
    sig_fn fn;
    void *ctx;
};

static struct sigw watchers[NSIG];
static int nwatchers;

/* The reserved signals, through a signalfd. */
static ev_io reserved_w;
static int reserved_fd = -1;
static sig_fn reserved_fn;
static void *reserved_ctx;

static int forwardable(int sig)
{
    switch (sig) {
    case SIGKILL: case SIGSTOP: case SIGCHLD: case SIGPIPE:
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
        return 0;
    }
    if (sig < 32) return 1;
    return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)revents;
    struct sigw *s = (struct sigw *)w;
    log_debug("caught signal %d (%s)", w->signum, strsignal(w->signum));
    s->fn(loop, w->signum, s->ctx);
}

static void on_reserved(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct signalfd_siginfo si[8];
    ssize_t n = read(w->fd, si, sizeof si);
    for (ssize_t i = 0; i < n / (ssize_t)sizeof si[0]; i++) {
        log_debug("caught reserved signal %u", si[i].ssi_signo);
        reserved_fn(loop, (int)si[i].ssi_signo, reserved_ctx);
    }
}

/* Signals 32 .. SIGRTMIN-1 (see the header comment). Failure is not fatal:
 * those signals then keep their default action. */
static void watch_reserved(struct ev_loop *loop, sig_fn fn, void *ctx)
{
    unsigned long long mask = 0; /* the kernel's sigset for 64 signals */
    for (int sig = 32; sig < SIGRTMIN; sig++) mask |= 1ULL << (sig - 1);
    if (!mask) return;
    if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, NULL, sizeof mask) != 0) {
        log_debug("cannot block the reserved signals: %s", strerror(errno));
        return;
    }
    reserved_fd = (int)syscall(SYS_signalfd4, -1, &mask, sizeof mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (reserved_fd < 0) {
        log_debug("no signalfd for the reserved signals: %s", strerror(errno));
        return;
    }
    reserved_fn = fn;
    reserved_ctx = ctx;
    ev_io_init(&reserved_w, on_reserved, reserved_fd, EV_READ);
    ev_io_start(loop, &reserved_w);
    ev_unref(loop);
}

int sig_ignore_pipe(void) { return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? -1 : 0; }

static void catch_one(struct ev_loop *loop, int sig, sig_fn fn, void *ctx)
{
    struct sigw *s = &watchers[nwatchers++];
    s->fn = fn;
    s->ctx = ctx;
    ev_signal_init(&s->w, on_signal, sig);
    ev_signal_start(loop, &s->w);
    /* Signal watchers must not keep the loop alive on their own. */
    ev_unref(loop);
}

int sig_catch(struct ev_loop *loop, const int *sigs, sig_fn fn, void *ctx, char *err)
{
    if (sig_ignore_pipe() < 0) {
        err_set(err, "cannot ignore SIGPIPE: %s", strerror(errno));
        return -1;
    }
    nwatchers = 0;
    if (sigs) {
        for (; *sigs && nwatchers < NSIG; sigs++) catch_one(loop, *sigs, fn, ctx);
        return 0;
    }
    for (int sig = 1; sig < NSIG; sig++)
        if (forwardable(sig)) catch_one(loop, sig, fn, ctx);
    watch_reserved(loop, fn, ctx);
    return 0;
}

void sig_release(struct ev_loop *loop)
{
    for (int i = 0; i < nwatchers; i++) {
        ev_ref(loop);
        ev_signal_stop(loop, &watchers[i].w);
    }
    nwatchers = 0;
    if (reserved_fd >= 0) {
        ev_ref(loop);
        ev_io_stop(loop, &reserved_w);
        close(reserved_fd);
        reserved_fd = -1;
    }
}
