/*
 * pid1.c - init duties: subreaper, signal catching, signal forwarding.
 *
 * Which signals are caught, and why the others are not:
 *   SIGKILL, SIGSTOP  cannot be caught.
 *   SIGCHLD           belongs to the reaper (libev's child watcher reaps on it).
 *   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
 *                     are synchronous faults of the agent itself; catching them
 *                     would turn a crash into a silent loop.
 *   SIGPIPE           is ignored: a write to a closed stdout must fail with
 *                     EPIPE so the agent can still exit with the job's code.
 *   signals 32-34     are reserved by the C library for its threads.
 * Everything else (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, SIGWINCH,
 * SIGCONT, SIGABRT sent by kill, SIGALRM, SIGTSTP/SIGTTIN/SIGTTOU, SIGURG,
 * SIGXCPU, SIGPWR, the real-time signals, ...) is caught and handed to the mode.
 *
 * As PID 1 this matters twice over: the kernel drops any signal PID 1 has no
 * handler for, which is why `docker stop` on a bare bash runner waits out its
 * full timeout and ends in SIGKILL.
 */
#include "pid1.h"
#include "log.h"
#include "protocol.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef NSIG
#define NSIG 65
#endif

struct sigw {
    ev_signal w;
    pid1_signal_fn fn;
    void *ctx;
};

static struct sigw watchers[NSIG];
static int nwatchers;

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

int pid1_is_init(void) { return getpid() == 1; }

static int parse_seconds(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= 0) || d > 86400.0 * 365) return -1;
    *out = d;
    return 0;
}

int pid1_config_read(struct pid1_config *cfg, char *err, size_t errlen)
{
    const char *t = getenv(ENV_SIGNAL_TARGET);
    const char *g = getenv(ENV_GRACE);
    cfg->to_group = 1;
    cfg->grace = DEFAULT_GRACE_SECONDS;
    if (t && *t) {
        if (!strcmp(t, "child")) cfg->to_group = 0;
        else if (strcmp(t, "group") != 0) {
            snprintf(err, errlen, ENV_SIGNAL_TARGET " must be 'group' or 'child', not '%.40s'", t);
            return -1;
        }
    }
    if (g && *g && parse_seconds(g, &cfg->grace) < 0) {
        snprintf(err, errlen, ENV_GRACE " must be a number of seconds >= 0, not '%.40s'", g);
        return -1;
    }
    return 0;
}

int pid1_init(struct ev_loop *loop, pid1_signal_fn fn, void *ctx, const char **err)
{
    /* A subreaper inherits the orphans of its descendants, as PID 1 does, so
     * "every zombie is reaped" holds when the agent runs under docker --init,
     * a shell or a test harness too. */
    if (!pid1_is_init() && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        log_warn("cannot become a child subreaper: %s; orphans go to our parent", strerror(errno));
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
        *err = "cannot ignore SIGPIPE";
        return -1;
    }
    nwatchers = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        if (!forwardable(sig)) continue;
        struct sigw *s = &watchers[nwatchers++];
        s->fn = fn;
        s->ctx = ctx;
        ev_signal_init(&s->w, on_signal, sig);
        ev_signal_start(loop, &s->w);
        /* Signal watchers must not keep the loop alive on their own. */
        ev_unref(loop);
    }
    return 0;
}

void pid1_stop(struct ev_loop *loop)
{
    for (int i = 0; i < nwatchers; i++) {
        ev_ref(loop);
        ev_signal_stop(loop, &watchers[i].w);
    }
    nwatchers = 0;
}

void pid1_forward(pid_t pid, int sig, int to_group)
{
    if (pid <= 0) return;
    if (kill(to_group ? -pid : pid, sig) != 0)
        log_debug("forwarding signal %d to %s %d: %s", sig, to_group ? "group" : "pid", (int)pid,
                  strerror(errno));
}
