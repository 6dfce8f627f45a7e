/*
 * test_stop.c - stopping a process group (agent/core/stop.c), against real
 * processes on a real loop: a group that exits on SIGTERM is not killed; one
 * that ignores it is SIGKILLed (leader and group) when the grace ends; a
 * second stop request does not restart the clock; a stopped group is
 * continued. Every wait is bounded by a loop timer, never a sleep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/spawn.h"
#include "agent/core/stop.h"

#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct run {
    struct ev_loop *loop;
    struct reaper_watch rw;
    struct stop stop;
    ev_timer bound;
    int exited, status, kills;
    ev_tstamp killed_at, begun_at;
};

static void on_exit_cb(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct run *r = ctx;
    r->exited = 1;
    r->status = status;
    stop_cancel(loop, &r->stop);
    ev_break(loop, EVBREAK_ALL);
}

static void on_kill(struct ev_loop *loop, struct stop *s, void *ctx)
{
    (void)s;
    struct run *r = ctx;
    r->kills++;
    r->killed_at = ev_now(loop);
}

static void on_bound(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static pid_t start(struct run *r, const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct spawn_opts o = {.argv = argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
    int exec_errno;
    char err[256];
    static int reaper_started;
    r->loop = ev_default_loop(0);
    if (!reaper_started++) reaper_init(r->loop);
    pid_t pid = spawn_child(&o, &exec_errno, err);
    assert_true(pid > 0);
    assert_int_equal(exec_errno, 0);
    reaper_watch(r->loop, &r->rw, pid, on_exit_cb, r);
    stop_init(&r->stop, on_kill, r);
    ev_timer_init(&r->bound, on_bound, 30., 0.);
    ev_timer_start(r->loop, &r->bound);
    return pid;
}

static void finish(struct run *r)
{
    while (!r->exited && ev_is_active(&r->bound)) ev_run(r->loop, EVRUN_ONCE);
    ev_timer_stop(r->loop, &r->bound);
    assert_true(r->exited);
}

/* The shell sets its trap after it starts: run the loop until
 * /proc/PID/status shows sig in the given mask line (SigCgt: or SigIgn:). */
static void wait_mask(struct run *r, pid_t pid, const char *field, int sig)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    for (;;) {
        FILE *f = fopen(path, "r");
        char line[256];
        int set = 0;
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, field, strlen(field)))
                set = (strtoull(line + strlen(field), NULL, 16) >> (sig - 1)) & 1;
        if (f) fclose(f);
        if (set) return;
        assert_true(ev_is_active(&r->bound));
        ev_run(r->loop, EVRUN_NOWAIT);
    }
}

static void test_term_honoured(void **st)
{
    (void)st;
    struct run r = {0};
    pid_t pid = start(&r, "trap 'exit 7' TERM; while :; do sleep 0.01; done");
    wait_mask(&r, pid, "SigCgt:", SIGTERM);
    stop_begin(r.loop, &r.stop, pid, SIGTERM, 1, 30.);
    finish(&r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 7);
    assert_int_equal(r.kills, 0);
    assert_false(r.stop.armed);
}

static void test_kill_after_grace(void **st)
{
    (void)st;
    struct run r = {0};
    /* Ignores TERM, and so does its background child (same group). */
    pid_t pid = start(&r, "trap '' TERM; sleep 100 & while :; do sleep 0.01; done");
    wait_mask(&r, pid, "SigIgn:", SIGTERM);
    ev_now_update(r.loop);
    r.begun_at = ev_now(r.loop);
    stop_begin(r.loop, &r.stop, pid, SIGTERM, 1, 0.2);
    stop_begin(r.loop, &r.stop, pid, SIGTERM, 1, 0.2); /* does not restart the clock */
    finish(&r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGKILL);
    assert_int_equal(r.kills, 1);
    assert_true(r.stop.killed);
    assert_true(r.killed_at - r.begun_at >= 0.2 - 0.001);
    /* The group went with its leader. */
    /* As a subreaper we inherit the group's orphan and reap it. */
    ev_timer_start(r.loop, &r.bound);
    while (!stop_group_gone(pid) && ev_is_active(&r.bound)) ev_run(r.loop, EVRUN_ONCE);
    ev_timer_stop(r.loop, &r.bound);
    assert_true(stop_group_gone(pid));
}

static void test_stopped_group_continued(void **st)
{
    (void)st;
    struct run r = {0};
    pid_t pid = start(&r, "kill -STOP $$; exit 3");
    /* Wait for the stop (state T) with the loop running. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (;;) {
        FILE *f = fopen(path, "r");
        char buf[512] = "";
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
        }
        char *p = strrchr(buf, ')');
        if (p && p[2] == 'T') break;
        ev_run(r.loop, EVRUN_NOWAIT);
    }
    stop_begin(r.loop, &r.stop, pid, 0, 1, 30.); /* no signal: SIGCONT only */
    finish(&r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3);
}

int main(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_honoured),
        cmocka_unit_test(test_kill_after_grace),
        cmocka_unit_test(test_stopped_group_continued),
    };
    return cmocka_run_group_tests_name("stop", tests, NULL, NULL);
}
