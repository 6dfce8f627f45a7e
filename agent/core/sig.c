/*
 * sig.c - catching signals for a mode, and the child's signal state at exec
 * (see sig.h).
 *
 * Which signals an init catches, and why the others are not:
 *   SIGKILL, SIGSTOP  cannot be caught.
 *   SIGCHLD           belongs to the reaper (libev's child watcher reaps on it).
 *   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
 *                     are synchronous faults of the agent itself; catching them
 *                     would turn a crash into a silent loop.
 *   SIGPIPE           is ignored: a write to a closed stdout must fail with
 *                     EPIPE so the agent can still exit with the job's code.
 * Everything else (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, SIGWINCH,
 * SIGCONT, SIGABRT sent by kill, SIGALRM, SIGTSTP/SIGTTIN/SIGTTOU, SIGURG,
 * SIGXCPU, SIGPWR, the real-time signals including 32-34, which the C library
 * reserves) is caught and handed to the mode.
 *
 * How: every caught signal is blocked and read from one signalfd, as
 * catatonit does. Compared with a handler per signal (libev's ev_signal sets a
 * flag per signal number), nothing is coalesced that the kernel queues: 500
 * real-time signals sent in a burst are 500 reads. The raw syscalls are used
 * for the mask, because the C library's sigprocmask() hides the signals it
 * reserves (we run no threads or timers that would need them).
 *
 * Blocked also means "ignored" to the terminal's job control: a write or
 * tcsetpgrp by the agent from a background process group is then allowed
 * instead of raising SIGTTOU, so a job that runs `stty tostop` cannot make the
 * agent's own output loop on SIGTTOU, nor fail with EIO as PID 1 (whose group
 * is orphaned). tini ignores SIGTTIN/SIGTTOU for the same reason; blocking them
 * keeps them forwardable too.
 *
 * As PID 1 catching matters twice over: the kernel drops any signal PID 1
 * has no handler for, which is why `docker stop` on a bare bash runner waits
 * out its full timeout and ends in SIGKILL.
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

#define KSIG_MAX 64
/* Signals handed to the mode per loop turn: a flood cannot starve the loop. */
#define READ_BUDGET 256


static sig_kset initial_mask, initial_ignored;

static struct {
    ev_io w;
    int fd;
    sig_fn fn;
    void *ctx;
    sig_kset set;
} catcher = {.fd = -1};

static int forwardable(int sig)
{
    switch (sig) {
    case SIGKILL: case SIGSTOP: case SIGCHLD: case SIGPIPE:
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
        return 0;
    }
    return sig >= 1 && sig <= KSIG_MAX;
}

static long kmask(int how, const sig_kset *set, sig_kset *old)
{
    return syscall(SYS_rt_sigprocmask, how, set, old, sizeof(sig_kset));
}

void sig_record_initial(void)
{
    kmask(SIG_BLOCK, NULL, &initial_mask);
    initial_ignored = 0;
    for (int sig = 1; sig <= KSIG_MAX; sig++) {
        struct sig_kaction ka;
        if (syscall(SYS_rt_sigaction, sig, NULL, &ka, sizeof(sig_kset)) == 0 &&
            ka.handler == SIG_IGN)
            initial_ignored |= SIG_KBIT(sig);
    }
}

void sig_initial(sig_kset *mask, sig_kset *ignored)
{
    *mask = initial_mask;
    *ignored = initial_ignored;
}

void sig_block_all(sig_kset *old)
{
    sig_kset all = ~0ULL;
    kmask(SIG_BLOCK, &all, old);
}

void sig_set_mask(const sig_kset *mask) { kmask(SIG_SETMASK, mask, NULL); }

int sig_ignore_pipe(void) { return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? -1 : 0; }

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct signalfd_siginfo si[32];
    int handed = 0;
    while (handed < READ_BUDGET) {
        ssize_t n = read(w->fd, si, sizeof si);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; /* EAGAIN: drained */
        for (ssize_t i = 0; i < n / (ssize_t)sizeof si[0]; i++, handed++) {
            int sig = (int)si[i].ssi_signo;
            if (log_enabled(LOG_DEBUG))
                log_debug("caught signal %d (%s) from pid %u", sig, strsignal(sig), si[i].ssi_pid);
            catcher.fn(loop, sig, catcher.ctx);
        }
        /* Fewer than asked for: drained as of this read. One that comes
         * later keeps the fd readable (level-triggered), so no read that
         * can only say EAGAIN on the forwarding path. */
        if ((size_t)n < sizeof si) return;
    }
}

int sig_catch(struct ev_loop *loop, const int *sigs, sig_fn fn, void *ctx, char *err)
{
    sig_kset set = 0;
    if (sig_ignore_pipe() < 0) {
        err_set(err, "cannot ignore SIGPIPE: %s", strerror(errno));
        return -1;
    }
    if (sigs) {
        for (; *sigs; sigs++)
            if (forwardable(*sigs)) set |= SIG_KBIT(*sigs);
    } else {
        for (int sig = 1; sig <= KSIG_MAX; sig++)
            if (forwardable(sig)) set |= SIG_KBIT(sig);
    }
    if (kmask(SIG_BLOCK, &set, NULL) != 0) {
        err_set(err, "cannot block the signals to catch: %s", strerror(errno));
        return -1;
    }
    int fd = (int)syscall(SYS_signalfd4, -1, &set, sizeof set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        err_set(err, "signalfd: %s", strerror(errno));
        kmask(SIG_UNBLOCK, &set, NULL);
        return -1;
    }
    catcher.fd = fd;
    catcher.fn = fn;
    catcher.ctx = ctx;
    catcher.set = set;
    ev_io_init(&catcher.w, on_readable, fd, EV_READ);
    ev_io_start(loop, &catcher.w);
    /* The signal watcher must not keep the loop alive on its own. */
    ev_unref(loop);
    return 0;
}

void sig_release(struct ev_loop *loop)
{
    if (catcher.fd < 0) return;
    ev_ref(loop);
    ev_io_stop(loop, &catcher.w);
    close(catcher.fd);
    catcher.fd = -1;
}
