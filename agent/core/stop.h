/*
 * stop.h - stopping a process group, the one way every mode does it: a stop
 * signal (with SIGCONT, since a stopped group cannot act on it), then, if the
 * group is still there when the grace period ends, SIGKILL to the group and to
 * its leader (in case the leader left the group).
 *
 * Owns one grace timer per stop. Does not reap: the caller's reaper watch
 * tells it the leader exited, and it calls stop_cancel then (or lets the
 * timer kill what the leader left behind in its group).
 */
#ifndef SA_CORE_STOP_H
#define SA_CORE_STOP_H

#include <ev.h>
#include <sys/types.h>

struct stop;
/* Called right after the SIGKILL went out (may be NULL). */
typedef void (*stop_fn)(struct ev_loop *loop, struct stop *s, void *ctx);

struct stop {
    ev_timer timer;
    pid_t pid;        /* the group's leader, and so the group id */
    int armed;        /* the grace timer is running */
    int killed;       /* SIGKILL has been sent */
    stop_fn on_kill;
    void *ctx;
};

void stop_init(struct stop *s, stop_fn on_kill, void *ctx);
/* Send sig (0: none) and SIGCONT to pid's group (to_group) or to pid alone,
 * and arm the grace timer unless it already runs: a second request is sent
 * again but does not restart the clock. grace 0 kills on the next loop turn. */
void stop_begin(struct ev_loop *loop, struct stop *s, pid_t pid, int sig, int to_group, double grace);
/* The group is gone or no longer ours to stop: disarm the timer. */
void stop_cancel(struct ev_loop *loop, struct stop *s);

/* Send sig to pid's process group (to_group) or to pid alone; a leader that
 * left its group gets it too. Errors are logged at debug level only: a target
 * that has just exited is normal. */
void stop_send(pid_t pid, int sig, int to_group);
/* SIGKILL pid's group and pid, now. */
void stop_kill(pid_t pid);
/* 1 when no process is left in process group pgid. */
int stop_group_gone(pid_t pgid);

#endif
