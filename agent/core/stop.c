/*
 * stop.c - stopping a process group with a grace period (see stop.h).
 */
#include "agent/core/stop.h"
#include "agent/core/log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

void stop_send(pid_t pid, int sig, int to_group)
{
    if (pid <= 0) return;
    if (kill(to_group ? -pid : pid, sig) != 0)
        log_debug("signal %d to %s %d: %s", sig, to_group ? "group" : "pid", (int)pid, strerror(errno));
    /* A leader that moved to a group of its own would miss the group's
     * signal; getpgid fails once it is gone, which needs nothing either. */
    if (to_group) {
        pid_t g = getpgid(pid);
        if (g > 0 && g != pid) kill(pid, sig);
    }
}

void stop_kill(pid_t pid)
{
    if (pid <= 0) return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

int stop_group_gone(pid_t pgid) { return pgid > 0 && kill(-pgid, 0) < 0 && errno == ESRCH; }

static void on_grace_over(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct stop *s = w->data;
    s->armed = 0;
    s->killed = 1;
    stop_kill(s->pid);
    if (s->on_kill) s->on_kill(loop, s, s->ctx);
}

void stop_init(struct stop *s, stop_fn on_kill, void *ctx)
{
    memset(s, 0, sizeof *s);
    s->on_kill = on_kill;
    s->ctx = ctx;
    ev_timer_init(&s->timer, on_grace_over, 0., 0.);
    s->timer.data = s;
}

void stop_begin(struct ev_loop *loop, struct stop *s, pid_t pid, int sig, int to_group, double grace)
{
    s->pid = pid;
    if (sig) stop_send(pid, sig, to_group);
    stop_send(pid, SIGCONT, to_group);
    if (s->armed || s->killed) return;
    s->armed = 1;
    ev_timer_set(&s->timer, grace, 0.);
    ev_timer_start(loop, &s->timer);
}

void stop_cancel(struct ev_loop *loop, struct stop *s)
{
    if (!s->armed) return;
    ev_timer_stop(loop, &s->timer);
    s->armed = 0;
}
