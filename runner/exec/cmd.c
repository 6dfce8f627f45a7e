/*
 * cmd.c - the command's lifetime (see cmd.h).
 */
#include "runner/exec/cmd.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/oom.h"
#include "agent/core/protocol.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How often to look whether the group is gone after a timeout, once its
 * leader exited (grandchildren are not our children: no exit event for them). */
#define GROUP_POLL 0.02
/* The "cannot run" line written into the command's stderr. */
#define EXEC_REASON_MAX 512

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct exec_cmd *c = w->data;
    c->timed_out = 1;
    log_debug("exec: timeout; SIGTERM to group %d", (int)c->pid);
    stop_begin(loop, &c->stop, c->pid, SIGTERM, 1, c->kill_after);
}

/* kill-after is over and SIGKILL has gone out (stop.c): once the leader is
 * gone too, nothing is left to wait for. A group member that lingers is a
 * zombie nobody reaps or a process stuck in the kernel; neither may hold the
 * call open. */
static void on_killed(struct ev_loop *loop, struct stop *s, void *ctx)
{
    (void)s;
    struct exec_cmd *c = ctx;
    log_debug("exec: kill-after expired; SIGKILL to group %d", (int)c->pid);
    if (c->exited) ev_break(loop, EVBREAK_ALL);
}

/* After a timeout the leader may be gone while the rest of its group still
 * runs: wait for them, until kill-after has passed (on_killed ends it then). */
static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct exec_cmd *c = w->data;
    if (stop_group_gone(c->pid) || c->stop.killed) {
        stop_cancel(loop, &c->stop);
        ev_break(loop, EVBREAK_ALL);
    }
}

static void on_exit_status(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct exec_cmd *c = ctx;
    c->exited = 1;
    c->status = status;
    c->oom_after = oom_kills(NULL);
    clock_gettime(CLOCK_MONOTONIC, &c->end);
    /* Everything it wrote before exiting is in the pipes now. Read exactly
     * that: a background writer must not keep us here. */
    exec_stream_read_pending(loop, &c->out);
    exec_stream_read_pending(loop, &c->err);
    ev_timer_stop(loop, &c->timeout);
    if (c->timed_out && !c->stop.killed && !stop_group_gone(c->pid)) {
        ev_timer_start(loop, &c->poll);
        return;
    }
    stop_cancel(loop, &c->stop);
    ev_break(loop, EVBREAK_ALL);
}

/* The command's own stderr is where a caller looks for why it did not run. */
static void note_exec_error(struct exec_cmd *c, const char *cmd, int exec_errno)
{
    char msg[EXEC_REASON_MAX];
    int n = snprintf(msg, sizeof msg, SA_NAME ": exec: cannot run '%s': %s\n", cmd,
                     spawn_exec_reason(exec_errno));
    if (n > 0) ring_write(&c->err.ring, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

void exec_cmd_init(struct exec_cmd *c, const struct exec_spec *spec)
{
    memset(c, 0, sizeof *c);
    c->kill_after = spec->kill_after;
    exec_stream_init(&c->out, spec->max_output);
    exec_stream_init(&c->err, spec->max_output);
    stop_init(&c->stop, on_killed, c);
    ev_timer_init(&c->timeout, on_timeout, spec->timeout, 0.);
    c->timeout.data = c;
    ev_timer_init(&c->poll, on_poll, GROUP_POLL, GROUP_POLL);
    c->poll.data = c;
}

int exec_cmd_start(struct ev_loop *loop, struct exec_cmd *c, const struct exec_spec *spec, char *err)
{
    if (exec_stream_open(&c->out, err) < 0 || exec_stream_open(&c->err, err) < 0) return -1;
    struct spawn_opts so = {.argv = spec->argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = -1,
                            .stdout_fd = c->out.wfd, .stderr_fd = c->err.wfd, .cwd = spec->cwd};
    int exec_errno;
    char serr[ERR_LEN];
    c->oom_before = oom_kills(NULL);
    clock_gettime(CLOCK_MONOTONIC, &c->start);
    c->pid = spawn_child(&so, &exec_errno, serr);
    if (c->pid < 0) {
        err_set(err, "cannot start the command: %s", serr);
        return -1;
    }
    reaper_watch(loop, &c->rw, c->pid, on_exit_status, c);
    if (exec_errno) note_exec_error(c, spec->argv[0], exec_errno);
    exec_stream_start(loop, &c->out);
    exec_stream_start(loop, &c->err);
    if (spec->timeout > 0) ev_timer_start(loop, &c->timeout);
    return 0;
}

void exec_cmd_signal(struct exec_cmd *c, int sig)
{
    /* Whoever stops us stops the command. */
    if (c->pid > 0) stop_send(c->pid, sig, 1);
}

int exec_cmd_oom_killed(const struct exec_cmd *c)
{
    return oom_killed(c->status, c->stop.killed, c->oom_before, c->oom_after);
}

long long exec_cmd_duration_ms(const struct exec_cmd *c)
{
    long long ms = (long long)(c->end.tv_sec - c->start.tv_sec) * 1000 +
                   (c->end.tv_nsec - c->start.tv_nsec) / 1000000;
    return ms < 0 ? 0 : ms;
}

void exec_cmd_free(struct ev_loop *loop, struct exec_cmd *c)
{
    ev_timer_stop(loop, &c->timeout);
    ev_timer_stop(loop, &c->poll);
    stop_cancel(loop, &c->stop);
    exec_stream_free(loop, &c->out);
    exec_stream_free(loop, &c->err);
}
