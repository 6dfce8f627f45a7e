/*
 * test_proc.c - the process table (agent/proc/proc.h) with a real event loop
 * and real children: exit codes and status texts, both channels, signal
 * deaths, commands that cannot run, a pty (controlling terminal, resize),
 * stdin piping and its bound, timeouts that stop a whole group, the bounded
 * drain past a background child, tags, subscribers and the slow reader, the
 * finished records kept (the count, the bytes, the time after their end
 * went out), users, environment (POST /init's defaults used, not kept; the
 * room left for them, checked against real execs at the kernel's bound)
 * and cwd, shutdown; a setsid daemon
 * reached by a signal and a stop, with a cgroup where the machine allows
 * one and through /proc without; background children that outlive a
 * normal exit, and the table's end killing what is left in a cgroup.
 *
 * Every wait runs the loop until a condition holds, bounded by a timer;
 * nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/cgroup.h"
#include "agent/core/descendants.h"
#include "agent/core/err.h"
#include "agent/core/sig.h"
#include "agent/core/spawn.h"
#include "agent/core/stop.h"
#include "agent/proc/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOUND 10.0 /* seconds any wait may take before the test fails */

static struct ev_loop *loop;
static int ends;

static void on_end(struct proc *p, void *ctx)
{
    (void)p;
    (void)ctx;
    ends++;
}

/* A table whose paced subscribers are waited for stall seconds (0: never). */
static struct proc_table *table_paced(size_t retain, size_t keep, char *const *base_env, double stall)
{
    struct proc_table_opts o = {.retain = retain, .keep_finished = keep, .grace = 0.3, .base_env = base_env,
                                .stall = stall, .on_end = on_end};
    char err[ERR_LEN];
    struct proc_table *t = proc_table_new(loop, &o, err);
    assert_non_null(t);
    return t;
}

static struct proc_table *table(size_t retain, size_t keep, char *const *base_env)
{
    return table_paced(retain, keep, base_env, 0);
}

static void on_guard(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)revents;
    *(int *)w->data = 1;
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)w;
    (void)revents;
}

/* Run the loop until cond(ctx) holds; fails the test after BOUND seconds. A
 * tick re-checks conditions on state outside the loop (a process group). */
static void run_until(int (*cond)(void *), void *ctx)
{
    int fired = 0;
    ev_timer guard, tick;
    ev_timer_init(&guard, on_guard, BOUND, 0.);
    guard.data = &fired;
    ev_timer_init(&tick, on_tick, 0.01, 0.01);
    ev_timer_start(loop, &guard);
    ev_timer_start(loop, &tick);
    while (!cond(ctx) && !fired) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &guard);
    ev_timer_stop(loop, &tick);
    assert_false(fired);
}

static int has_ended(void *p) { return proc_end(p) != NULL; }
static void wait_end(struct proc *p) { run_until(has_ended, p); }

/* Everything retained on ch, from offset 0, as a string. */
static const char *output(struct proc *p, enum proc_chan ch)
{
    static char out[1 << 16];
    uint64_t off = 0;
    size_t len = 0, n;
    while ((n = proc_read(p, ch, &off, out + len, sizeof out - 1 - len, NULL)) > 0) len += n;
    out[len] = '\0';
    return out;
}

struct want_output {
    struct proc *p;
    enum proc_chan ch;
    const char *text;
};

static int has_output(void *ctx)
{
    struct want_output *w = ctx;
    return strstr(output(w->p, w->ch), w->text) != NULL;
}

static void wait_output(struct proc *p, enum proc_chan ch, const char *text)
{
    struct want_output w = {p, ch, text};
    run_until(has_output, &w);
}

static struct proc *start(struct proc_table *t, struct proc_start *s)
{
    char err[ERR_LEN];
    struct proc *p = proc_start(t, s, err);
    if (!p) fail_msg("proc_start: %s", err);
    return p;
}

static struct proc *start_sh(struct proc_table *t, const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct proc_start s = {.argv = argv};
    return start(t, &s);
}

static void test_exit_code_and_both_channels(void **st)
{
    (void)st;
    struct proc_table *t = table(1 << 20, 16, NULL);
    int before = ends;
    struct proc *p = start_sh(t, "echo hi; echo err >&2; exit 3");
    assert_true(proc_running(p));
    assert_ptr_equal(proc_by_pid(t, proc_pid(p)), p);
    wait_end(p);
    assert_int_equal(ends, before + 1);
    assert_string_equal(output(p, PROC_STDOUT), "hi\n");
    assert_string_equal(output(p, PROC_STDERR), "err\n");
    assert_false(proc_has_chan(p, PROC_PTY));
    const struct proc_end *e = proc_end(p);
    assert_int_equal(e->exit_code, 3);
    assert_int_equal(e->exited, 1);
    assert_string_equal(e->status, "exit status 3");
    assert_string_equal(e->error, "exit status 3");
    /* Kept after its end, no longer signallable. */
    assert_ptr_equal(proc_by_pid(t, proc_pid(p)), p);
    char err[ERR_LEN];
    assert_int_equal(proc_signal(p, SIGTERM, err), -1);
    assert_int_equal(errno, ESRCH);
    assert_int_equal(proc_table_running(t), 0);
    proc_table_free(t);
}

static void test_signal_death(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    struct proc *p = start_sh(t, "kill -9 $$");
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, -1);
    assert_int_equal(proc_end(p)->exited, 0);
    assert_string_equal(proc_end(p)->status, "signal: killed");
    assert_string_equal(proc_end(p)->error, "signal: killed");

    /* SendSignal reaches the group. */
    p = start_sh(t, "sleep 100; echo not reached");
    char err[ERR_LEN];
    assert_int_equal(proc_signal(p, SIGTERM, err), 0);
    wait_end(p);
    assert_string_equal(proc_end(p)->status, "signal: terminated");
    assert_string_equal(output(p, PROC_STDOUT), "");
    proc_table_free(t);
}

static void test_command_that_cannot_run(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    char *argv[] = {"no-such-command-sa", "x", NULL};
    struct proc_start s = {.argv = argv};
    struct proc *p = start(t, &s);
    assert_true(proc_pid(p) > 0);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 127);
    assert_string_equal(proc_end(p)->status, "exit status 127");
    assert_string_equal(proc_end(p)->error, "cannot run 'no-such-command-sa': command not found");

    char *noexec[] = {"/etc/passwd", NULL};
    s.argv = noexec;
    p = start(t, &s);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 126);
    assert_string_equal(proc_end(p)->error, "cannot run '/etc/passwd': Permission denied");

    char err[ERR_LEN];
    char *empty[] = {NULL};
    s.argv = empty;
    assert_null(proc_start(t, &s, err));
    assert_int_equal(errno, EINVAL);
    proc_table_free(t);
}

static void test_pty_tty_and_resize(void **st)
{
    (void)st;
    struct proc_table *t = table(1 << 16, 16, NULL);
    /* /dev/tty opens only on a controlling terminal. */
    char *argv[] = {"/bin/sh", "-c", "tty; stty size; echo ctty >/dev/tty", NULL};
    struct proc_start s = {.argv = argv, .pty = 1, .cols = 80, .rows = 24};
    struct proc *p = start(t, &s);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 0);
    assert_true(proc_has_pty(p));
    assert_false(proc_has_chan(p, PROC_STDOUT));
    const char *out = output(p, PROC_PTY);
    assert_memory_equal(out, "/dev/pts/", 9);
    assert_non_null(strstr(out, "\r\n24 80\r\n"));
    assert_non_null(strstr(out, "ctty\r\n"));

    char *argv2[] = {"/bin/sh", "-c", "read x; stty size", NULL};
    s.argv = argv2;
    p = start(t, &s);
    char err[ERR_LEN];
    assert_int_equal(proc_resize(p, 100, 30, err), 0);
    assert_int_equal(proc_send_input(p, 1, "\n", 1, err), 0);
    wait_end(p);
    assert_non_null(strstr(output(p, PROC_PTY), "30 100\r\n"));
    /* Stdin input and CloseStdin are for pipes. */
    p = start(t, &s);
    assert_int_equal(proc_send_input(p, 0, "x", 1, err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(proc_close_stdin(p, err), -1);
    assert_int_equal(proc_send_input(p, 1, "\n", 1, err), 0);
    wait_end(p);
    proc_table_free(t);
}

static void test_stdin_pipe(void **st)
{
    (void)st;
    struct proc_table *t = table(1 << 16, 16, NULL);
    char *argv[] = {"cat", NULL};
    struct proc_start s = {.argv = argv, .stdin_pipe = 1};
    struct proc *p = start(t, &s);
    char err[ERR_LEN];
    assert_int_equal(proc_send_input(p, 0, "hello\n", 6, err), 0);
    wait_output(p, PROC_STDOUT, "hello\n");
    assert_true(proc_running(p));
    assert_int_equal(proc_send_input(p, 1, "x", 1, err), -1);
    assert_int_equal(errno, ENOTTY);
    assert_int_equal(proc_close_stdin(p, err), 0);
    assert_int_equal(proc_send_input(p, 0, "late", 4, err), -1);
    assert_int_equal(errno, EPIPE);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 0);
    assert_string_equal(output(p, PROC_STDOUT), "hello\n");

    /* Without a stdin pipe the child reads /dev/null: EOF at once. */
    s.stdin_pipe = 0;
    p = start(t, &s);
    assert_int_equal(proc_send_input(p, 0, "x", 1, err), -1);
    assert_int_equal(errno, EPIPE);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 0);
    proc_table_free(t);
}

static void test_input_queue_is_bounded(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    char *argv[] = {"sleep", "100", NULL};
    struct proc_start s = {.argv = argv, .stdin_pipe = 1};
    struct proc *p = start(t, &s);
    char err[ERR_LEN];
    char *big = calloc(1, PROC_INPUT_MAX);
    assert_non_null(big);
    /* The pipe takes some, the queue holds the rest, the loop never waits. */
    assert_int_equal(proc_send_input(p, 0, big, PROC_INPUT_MAX, err), 0);
    assert_int_equal(proc_send_input(p, 0, big, PROC_INPUT_MAX, err), -1);
    assert_int_equal(errno, ENOSPC);
    assert_non_null(strstr(err, "input queue full"));
    free(big);
    /* The queue stays closable; the process ends with its signal. */
    assert_int_equal(proc_close_stdin(p, err), 0);
    assert_int_equal(proc_signal(p, SIGKILL, err), 0);
    wait_end(p);
    assert_string_equal(proc_end(p)->status, "signal: killed");
    proc_table_free(t);
}

static int group_gone(void *pid) { return stop_group_gone(*(pid_t *)pid); }

static void test_timeout_stops_the_group(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    char *argv[] = {"/bin/sh", "-c", "sleep 100 & echo $!; sleep 100", NULL};
    struct proc_start s = {.argv = argv, .timeout = 1.0};
    struct proc *p = start(t, &s);
    pid_t pid = proc_pid(p);
    wait_end(p);
    pid_t bg = (pid_t)atoi(output(p, PROC_STDOUT));
    assert_true(bg > 0);
    assert_int_equal(proc_end(p)->exit_code, -1);
    assert_string_equal(proc_end(p)->status, "signal: terminated");
    /* The grandchild went with its group. */
    run_until(group_gone, &pid);
    assert_int_equal(kill(bg, 0), -1);
    proc_table_free(t);
}

static void test_drain_is_bounded(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    /* The background sleep holds stdout open; the end must not wait for it. */
    struct proc *p = start_sh(t, "sleep 100 & echo done");
    pid_t pid = proc_pid(p);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 0);
    assert_string_equal(output(p, PROC_STDOUT), "done\n");
    assert_false(stop_group_gone(pid));
    stop_kill(pid);
    run_until(group_gone, &pid);
    proc_table_free(t);
}

static void test_tags(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    char *argv[] = {"sleep", "100", NULL};
    struct proc_start s = {.argv = argv, .tag = "web"};
    struct proc *a = start(t, &s);
    assert_string_equal(proc_tag(a), "web");
    assert_ptr_equal(proc_by_tag(t, "web"), a);
    assert_null(proc_by_tag(t, "db"));
    char err[ERR_LEN];
    assert_null(proc_start(t, &s, err));
    assert_int_equal(errno, EEXIST);
    assert_int_equal(proc_signal(a, SIGKILL, err), 0);
    wait_end(a);
    /* Finished, it is still found by its tag, until a running one has it. */
    assert_ptr_equal(proc_by_tag(t, "web"), a);
    struct proc *b = start(t, &s);
    assert_ptr_equal(proc_by_tag(t, "web"), b);
    /* List: both, in start order. */
    assert_ptr_equal(proc_first(t), a);
    assert_ptr_equal(proc_next(a), b);
    assert_null(proc_next(b));
    assert_int_equal(proc_signal(b, SIGKILL, err), 0);
    wait_end(b);
    proc_table_free(t);
}

struct counter {
    struct proc_sub sub;
    int calls, saw_end;
    int stay; /* stay subscribed after the end */
};

static void on_ready(struct proc_sub *s, void *ctx)
{
    struct counter *c = ctx;
    c->calls++;
    if (proc_end(s->p)) {
        c->saw_end = 1;
        if (!c->stay) proc_unsubscribe(s);
    }
}

static int saw_end(void *c) { return ((struct counter *)c)->saw_end; }

static void test_subscribers_and_slow_reader(void **st)
{
    (void)st;
    struct proc_table *t = table(1024, 16, NULL);
    struct proc *p = start_sh(t, "i=0; while [ $i -lt 200 ]; do echo 0123456789abcdefghijklmnopqrstu; i=$((i+1)); done");
    struct counter c = {0};
    proc_subscribe(p, &c.sub, on_ready, &c);
    run_until(saw_end, &c);
    assert_true(c.calls >= 2);
    assert_null(c.sub.p);
    /* 200 lines of 32 bytes; the ring kept the last 1024. A reader from 0
     * jumps over what is gone. */
    assert_int_equal(proc_read_end(p, PROC_STDOUT), 6400);
    uint64_t off = 0, skipped = 0;
    char buf[4096];
    size_t n = proc_read(p, PROC_STDOUT, &off, buf, sizeof buf, &skipped);
    assert_int_equal(skipped, 6400 - 1024);
    assert_int_equal(n, 1024);
    assert_memory_equal(buf, "0123456789", 10);
    assert_int_equal(proc_read(p, PROC_STDOUT, &off, buf, sizeof buf, &skipped), 0);

    /* Unsubscribing never touches the process. */
    p = start_sh(t, "sleep 100");
    proc_subscribe(p, &c.sub, on_ready, &c);
    proc_unsubscribe(&c.sub);
    assert_true(proc_running(p));
    char err[ERR_LEN];
    assert_int_equal(proc_signal(p, SIGKILL, err), 0);
    wait_end(p);
    proc_table_free(t);
}

/* A paced reader (proc_pace_sub) that takes everything it is told of. */
struct paced {
    struct proc_sub sub;
    uint64_t pos[PROC_CHANS];
    uint64_t got, skipped;
    int reads, saw_end;
    int bad; /* a byte not of the pattern */
};

static void on_ready_paced(struct proc_sub *s, void *ctx)
{
    struct paced *r = ctx;
    char buf[4096];
    size_t n;
    uint64_t skipped;
    if (!r->reads) {
        while ((n = proc_read(s->p, PROC_STDOUT, &r->pos[PROC_STDOUT], buf, sizeof buf, &skipped)) > 0) {
            r->skipped += skipped;
            for (size_t i = 0; i < n; i++)
                if (buf[i] != "0123456789abcdefghijklmnopqrstu\n"[(r->got + i) % 32]) r->bad = 1;
            r->got += n;
            proc_pace_moved(s);
        }
    }
    if (proc_end(s->p) && proc_read_end(s->p, PROC_STDOUT) <= r->pos[PROC_STDOUT]) {
        r->saw_end = 1;
        proc_unsubscribe(s);
    }
}

static int paced_saw_end(void *r) { return ((struct paced *)r)->saw_end; }

static void test_paced_reader_gets_every_byte_a_stalled_one_is_left(void **st)
{
    (void)st;
    struct proc_table *t = table_paced(1024, 16, NULL, 0.3);
    const char *script = "i=0; while [ $i -lt 2000 ]; do echo 0123456789abcdefghijklmnopqrstu; i=$((i+1)); done";
    /* 64,000 bytes through a 1 KiB ring: the child waits for the reader. */
    struct proc *p = start_sh(t, script);
    struct paced a = {0};
    proc_subscribe(p, &a.sub, on_ready_paced, &a);
    proc_pace_sub(&a.sub, a.pos);
    run_until(paced_saw_end, &a);
    assert_int_equal(a.got, 64000);
    assert_int_equal(a.skipped, 0);
    assert_false(a.bad);

    /* A paced reader that reads nothing holds the child for the stall
     * time, then is left to skip: the child finishes. */
    p = start_sh(t, script);
    struct paced b = {.reads = 1};
    proc_subscribe(p, &b.sub, on_ready_paced, &b);
    proc_pace_sub(&b.sub, b.pos);
    assert_true(b.sub.moved > 0);
    wait_end(p);
    assert_true(b.sub.stalled);
    assert_int_equal(proc_read_end(p, PROC_STDOUT), 64000);
    char buf[2048];
    uint64_t skipped = 0;
    assert_int_equal(proc_read(p, PROC_STDOUT, &b.pos[PROC_STDOUT], buf, sizeof buf, &skipped), 1024);
    assert_int_equal(skipped, 64000 - 1024);
    proc_unsubscribe(&b.sub);
    proc_table_free(t);
}

/* A paced reader that takes one byte on every tick of a timer: it always
 * reads (never stalls), and never makes room for a quarter ring (the
 * channel stays held). */
struct trickle {
    struct proc_sub sub;
    uint64_t pos[PROC_CHANS];
    ev_timer tick;
};

static void on_trickle(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)revents;
    struct trickle *r = w->data;
    char byte;
    if (r->sub.p && proc_read(r->sub.p, PROC_STDOUT, &r->pos[PROC_STDOUT], &byte, 1, NULL) > 0)
        proc_pace_moved(&r->sub);
}

static void on_ready_nothing(struct proc_sub *s, void *ctx) { (void)s, (void)ctx; }

static void test_held_output_after_the_exit_waits_for_the_stall_time_only(void **st)
{
    (void)st;
    struct proc_table *t = table_paced(65536, 16, NULL, 0.3);
    /* The leader exits at once; a background child writes 50 MB to the
     * same pipe, far more than the reader takes within BOUND: the end
     * comes the stall time after the exit, the rest skipped. */
    struct proc *p = start_sh(t, "(yes | head -c 50000000) & echo started");
    struct trickle r = {0};
    proc_subscribe(p, &r.sub, on_ready_nothing, &r);
    proc_pace_sub(&r.sub, r.pos);
    ev_timer_init(&r.tick, on_trickle, 0.01, 0.01);
    r.tick.data = &r;
    ev_timer_start(loop, &r.tick);
    wait_end(p);
    ev_timer_stop(loop, &r.tick);
    assert_true(proc_read_end(p, PROC_STDOUT) < 50000000);
    proc_unsubscribe(&r.sub);
    proc_table_free(t);
}

/* A reader that reads the end as it is told (a stream sending its end
 * event), then leaves. */
static void on_ready_forget(struct proc_sub *s, void *ctx)
{
    struct counter *c = ctx;
    c->calls++;
    if (!proc_end(s->p)) return;
    c->saw_end = 1;
    proc_end_sent(s->p);
    proc_unsubscribe(s);
}

static void test_forget_while_ending_and_with_readers(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    /* Read as it ends: never kept. */
    struct proc *p = start_sh(t, "echo x");
    pid_t pid = proc_pid(p);
    struct counter c = {0};
    proc_subscribe(p, &c.sub, on_ready_forget, &c);
    run_until(saw_end, &c);
    assert_null(proc_by_pid(t, pid));
    assert_null(proc_first(t));
    /* Read by one of two readers: kept until the other leaves too. */
    p = start_sh(t, "echo y");
    pid = proc_pid(p);
    struct counter first = {0}, other = {.stay = 1};
    proc_subscribe(p, &other.sub, on_ready, &other);
    proc_subscribe(p, &first.sub, on_ready_forget, &first);
    run_until(saw_end, &first);
    assert_ptr_equal(proc_by_pid(t, pid), p);
    assert_string_equal(output(p, PROC_STDOUT), "y\n");
    proc_unsubscribe(&other.sub);
    assert_null(proc_by_pid(t, pid));
    proc_table_free(t);
}

static void test_env_builder(void **st)
{
    (void)st;
    char *base[] = {"A=1", "HOME=/old", "PWD=/stale", NULL};
    struct proc_table *t = table(4096, 16, base);
    struct user_info u;
    user_self("/nonexistent", "/nonexistent", &u);
    snprintf(u.home, sizeof u.home, "/home/x");
    snprintf(u.name, sizeof u.name, "x");
    char *defaults[] = {"A=d", "C=d", "HOME=/d", NULL};
    char *req[] = {"A=2", "B=3", NULL};
    char **env = proc_launch_env(t, &u, "/work", defaults, req);
    assert_non_null(env);
    /* The defaults after the login variables (theirs win), before the request's (which win). */
    const char *want[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                          "USER=x", "LOGNAME=x", "SHELL=/bin/sh", "PWD=/work", "C=d", "HOME=/d", "A=2",
                          "B=3", NULL};
    for (size_t i = 0; want[i]; i++) {
        if (!env[i]) fail_msg("missing %s", want[i]);
        assert_string_equal(env[i], want[i]);
    }
    proc_launch_env_free(env);
    proc_table_free(t);
    /* A base PATH wins over a login's. */
    char *base2[] = {"PATH=/mine", NULL};
    t = table(4096, 16, base2);
    env = proc_launch_env(t, NULL, NULL, NULL, NULL);
    assert_string_equal(env[0], "PATH=/mine");
    assert_null(env[1]);
    proc_launch_env_free(env);
    proc_table_free(t);
}

static void test_finished_cap(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 3, NULL);
    pid_t pids[6];
    struct proc *first = start_sh(t, "echo 0");
    struct counter c = {.stay = 1};
    proc_subscribe(first, &c.sub, on_ready, &c); /* a reader keeps it past the cap */
    pids[0] = proc_pid(first);
    for (int i = 1; i < 6; i++) {
        struct proc *p = start_sh(t, "exit 0");
        pids[i] = proc_pid(p);
        wait_end(p);
    }
    run_until(saw_end, &c);
    /* 6 finished, 3 kept: the one being read, and the newest otherwise. */
    int kept = 0;
    for (struct proc *p = proc_first(t); p; p = proc_next(p)) kept++;
    assert_int_equal(kept, 3);
    assert_ptr_equal(proc_first(t), first);
    for (int i = 1; i < 4; i++) assert_null(proc_by_pid(t, pids[i]));
    for (int i = 4; i < 6; i++) assert_non_null(proc_by_pid(t, pids[i]));
    /* Its reader gone, it is the oldest: the next finished one pushes it out. */
    proc_unsubscribe(&c.sub);
    assert_ptr_equal(proc_by_pid(t, pids[0]), first);
    struct proc *p = start_sh(t, "exit 0");
    wait_end(p);
    assert_null(proc_by_pid(t, pids[0]));
    assert_ptr_equal(proc_first(t), proc_by_pid(t, pids[4]));
    /* Or it is dropped when its end went out (keep_sent 0). */
    proc_end_sent(proc_by_pid(t, pids[4]));
    assert_null(proc_by_pid(t, pids[4]));
    /* A running record is never forgotten. */
    p = start_sh(t, "sleep 100");
    proc_end_sent(p);
    assert_ptr_equal(proc_by_pid(t, proc_pid(p)), p);
    char err[ERR_LEN];
    assert_int_equal(proc_signal(p, SIGKILL, err), 0);
    wait_end(p);
    proc_table_free(t);
}

/* ---- POST /init's defaults: used by the exec, not kept; the room for them ---- */

/* Strings "PREFIXnnnnn=xxx..." of the given cost each (SPAWN_ARG_COST), at most
 * SPAWN_ARG_STRLEN a string, totalling exactly `bytes` (the last one
 * smaller): a NULL-terminated array; free with free_fill. */
static char **fill(const char *prefix, size_t bytes)
{
    size_t most = SPAWN_ARG_COST(SPAWN_ARG_STRLEN - 1), n = bytes / most + 2, k = 0;
    char **v = calloc(n + 1, sizeof *v);
    assert_non_null(v);
    while (bytes >= SPAWN_ARG_COST(16)) {
        size_t cost = bytes < most ? bytes : most;
        if (bytes - cost && bytes - cost < SPAWN_ARG_COST(16)) cost -= SPAWN_ARG_COST(16); /* room for one more */
        size_t len = cost - SPAWN_ARG_COST(0);
        char *e = malloc(len + 1);
        assert_non_null(e);
        memset(e, 'x', len);
        e[len] = '\0';
        int w = snprintf(e, len, "%s%05zu", prefix, k);
        e[w] = '='; /* snprintf's NUL: the value of x's follows */
        v[k++] = e;
        bytes -= cost;
    }
    assert_true(bytes < SPAWN_ARG_COST(16));
    return v;
}

static size_t cost_of(char *const *v)
{
    size_t n = 0;
    for (size_t i = 0; v && v[i]; i++) n += SPAWN_ARG_COST(strlen(v[i]));
    return n;
}

static void free_fill(char **v)
{
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
}

static void test_defaults_used_not_kept_and_their_room(void **st)
{
    (void)st;
    char *base[] = {"PATH=/usr/bin:/bin", NULL};
    struct proc_table *t = table(1 << 16, 16, base);
    size_t max = spawn_arg_max(), room = proc_launch_env_room(t), own = PROC_START_ROOM(max);
    /* The kernel's bound less a quarter, the base and the login variables at their longest. */
    size_t fixed = max - own - cost_of(base);
    assert_true(room < fixed && room > fixed - 20000);
    printf("(the kernel's bound here: %zu bytes; room for the defaults: %zu, for a Start's own: %zu)\n", max,
           room, own);

    /* Defaults filling the room, and a Start whose own argv and envs fill
     * its quarter: it runs, with both; its record keeps only its own envs. */
    char **defaults = fill("D", room), **mine = fill("E", own / 2);
    size_t argv_cost = own - cost_of(mine);
    char **big = fill("A", argv_cost - SPAWN_ARG_COST(7) - SPAWN_ARG_COST(2) - SPAWN_ARG_COST(29));
    size_t nbig = 0;
    while (big[nbig]) nbig++;
    char **argv = calloc(nbig + 4, sizeof *argv);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = "echo $D00000 $E00000 | wc -c"; /* 29 bytes */
    memcpy(argv + 3, big, nbig * sizeof *argv);
    assert_int_equal(cost_of(defaults), room);
    assert_true(cost_of(argv) + cost_of(mine) <= own && cost_of(argv) + cost_of(mine) > own - 100);
    struct proc_start s = {.argv = argv, .defaults = defaults, .envs = mine};
    struct proc *p = start(t, &s);
    wait_end(p);
    assert_string_equal(proc_end(p)->status, "exit status 0");
    char want[32];
    snprintf(want, sizeof want, "%zu\n", strlen(defaults[0]) - 7 + 1 + strlen(mine[0]) - 7 + 1); /* "D00000=" */
    assert_string_equal(output(p, PROC_STDOUT), want);
    size_t n = 0;
    while (proc_envs(p)[n]) {
        assert_string_equal(proc_envs(p)[n], mine[n]);
        n++;
    }
    assert_null(mine[n]);

    /* The bound is the kernel's: the same exec with the defaults 4 KiB past
     * it (the room kept for the login variables at their longest aside)
     * fails. */
    char **over = fill("D", fixed + 4096);
    s.defaults = over;
    p = start(t, &s);
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 126);
    assert_string_equal(proc_end(p)->error, "cannot run '/bin/sh': Argument list too long");
    free_fill(over);
    free_fill(defaults);
    free_fill(mine);
    free_fill(big);
    free(argv);
    proc_table_free(t);
}

/* ---- finished records: the time after their end went out, the bytes ---- */

static struct proc_table *table_keep(size_t retain, size_t keep_bytes, double keep_sent)
{
    struct proc_table_opts o = {.retain = retain, .keep_finished = 16, .keep_bytes = keep_bytes,
                                .keep_sent = keep_sent, .grace = 0.3, .on_end = on_end};
    char err[ERR_LEN];
    struct proc_table *t = proc_table_new(loop, &o, err);
    assert_non_null(t);
    return t;
}

struct gone {
    struct proc_table *t;
    pid_t pid;
};

static int is_gone(void *ctx)
{
    struct gone *g = ctx;
    return proc_by_pid(g->t, g->pid) == NULL;
}

static int time_reached(void *at) { return ev_now(loop) >= *(ev_tstamp *)at; }

/* Run the loop for d seconds of its clock. */
static void run_for(double d)
{
    ev_now_update(loop);
    ev_tstamp at = ev_now(loop) + d;
    run_until(time_reached, &at);
}

static struct proc *finished(struct proc_table *t, const char *script)
{
    struct proc *p = start_sh(t, script);
    wait_end(p);
    return p;
}

static void test_kept_for_a_time_after_the_end_went_out(void **st)
{
    (void)st;
    struct proc_table *t = table_keep(4096, 0, 0.3);
    /* Its end went out: still there (a client may reconnect), gone 0.3 s later. */
    struct proc *p = finished(t, "echo k");
    struct gone g = {t, proc_pid(p)};
    ev_now_update(loop);
    ev_tstamp sent = ev_now(loop);
    proc_end_sent(p);
    assert_ptr_equal(proc_by_pid(t, g.pid), p);
    assert_string_equal(output(p, PROC_STDOUT), "k\n");
    run_until(is_gone, &g);
    assert_true(ev_now(loop) - sent >= 0.3);

    /* Each end sent counts the time again. */
    p = finished(t, "exit 2");
    g.pid = proc_pid(p);
    proc_end_sent(p);
    run_for(0.2);
    ev_now_update(loop);
    sent = ev_now(loop);
    proc_end_sent(p);
    run_for(0.2); /* 0.4 s after the first */
    assert_ptr_equal(proc_by_pid(t, g.pid), p);
    run_until(is_gone, &g);
    assert_true(ev_now(loop) - sent >= 0.3);

    /* A reader holds it past its time; it goes with the reader. */
    p = finished(t, "exit 3");
    g.pid = proc_pid(p);
    struct counter c = {.stay = 1};
    proc_subscribe(p, &c.sub, on_ready, &c);
    proc_end_sent(p);
    run_for(0.4);
    assert_ptr_equal(proc_by_pid(t, g.pid), p);
    proc_unsubscribe(&c.sub);
    assert_null(proc_by_pid(t, g.pid));

    /* No end went out: kept (as long as the caps allow). */
    p = finished(t, "exit 4");
    run_for(0.4);
    assert_ptr_equal(proc_by_pid(t, proc_pid(p)), p);
    proc_table_free(t);
}

static void test_finished_bytes_cap(void **st)
{
    (void)st;
    /* Two of 3000 bytes of output each do not fit in 6000 with their
     * records: the older goes; the newer stays, and a quiet one fits beside it. */
    struct proc_table *t = table_keep(4096, 6000, 0);
    struct proc *a = finished(t, "head -c 3000 /dev/zero");
    pid_t pa = proc_pid(a);
    assert_int_equal(proc_read_end(a, PROC_STDOUT), 3000);
    struct proc *b = finished(t, "head -c 3000 /dev/zero");
    assert_null(proc_by_pid(t, pa));
    assert_ptr_equal(proc_by_pid(t, proc_pid(b)), b);
    struct proc *c = finished(t, "exit 0");
    assert_ptr_equal(proc_by_pid(t, proc_pid(b)), b);
    assert_ptr_equal(proc_by_pid(t, proc_pid(c)), c);
    proc_table_free(t);
    /* A bound smaller than one record: the newest is kept all the same. */
    t = table_keep(4096, 1, 0);
    a = finished(t, "echo one");
    pa = proc_pid(a);
    assert_ptr_equal(proc_by_pid(t, pa), a);
    b = finished(t, "echo two");
    assert_null(proc_by_pid(t, pa));
    assert_string_equal(output(b, PROC_STDOUT), "two\n");
    proc_table_free(t);
}

static void test_env_and_cwd(void **st)
{
    (void)st;
    char *base[] = {"PATH=/usr/bin:/bin", "FOO=base", "KEEP=1", "HOME=/nowhere", NULL};
    struct proc_table *t = table(4096, 16, base);
    char home[] = "/tmp/test_proc.XXXXXX", sub[64];
    assert_non_null(mkdtemp(home));
    snprintf(sub, sizeof sub, "%s/sub", home);
    assert_int_equal(mkdir(sub, 0755), 0);
    struct user_info u;
    user_self("/nonexistent", "/nonexistent", &u);
    snprintf(u.home, sizeof u.home, "%s", home);
    snprintf(u.name, sizeof u.name, "someone");
    char *argv[] = {"/bin/sh", "-c", "echo $FOO $KEEP $HOME $USER $LOGNAME $SHELL $PWD; pwd", NULL};
    char *envs[] = {"FOO=one", "FOO=two", NULL};
    /* dir, resolved by the caller, is where it runs; cwd is kept as asked. */
    struct proc_start s = {.argv = argv, .envs = envs, .user = &u, .cwd = "~/sub", .dir = sub};
    struct proc *p = start(t, &s);
    wait_end(p);
    char want[1024];
    snprintf(want, sizeof want, "two 1 %s someone someone /bin/sh %s\n%s\n", home, sub, sub);
    assert_string_equal(output(p, PROC_STDOUT), want);
    assert_string_equal(proc_envs(p)[1], "FOO=two");
    assert_string_equal(proc_cwd(p), "~/sub");
    /* No dir: the agent's own (no PWD given: the shell sets its own). */
    char here[256];
    assert_non_null(getcwd(here, sizeof here));
    s.cwd = s.dir = NULL;
    p = start(t, &s);
    wait_end(p);
    snprintf(want, sizeof want, "two 1 %s someone someone /bin/sh %s\n%s\n", home, here, here);
    assert_string_equal(output(p, PROC_STDOUT), want);
    assert_null(proc_cwd(p));
    /* Checked before anything starts: there, and a directory. */
    char err[ERR_LEN], missing[96];
    snprintf(missing, sizeof missing, "%s/missing", home);
    s.dir = missing;
    assert_null(proc_start(t, &s, err));
    assert_int_equal(errno, EINVAL);
    snprintf(want, sizeof want, "cwd '%s' does not exist", missing);
    assert_string_equal(err, want);
    s.dir = "/dev/null";
    assert_null(proc_start(t, &s, err));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(err, "cwd '/dev/null' is not a directory");
    rmdir(sub);
    rmdir(home);
    proc_table_free(t);
}

static void on_helper_exit(struct ev_loop *l, pid_t pid, int status, void *ctx)
{
    (void)l;
    (void)pid;
    *(int *)ctx = status;
}

static int helper_done(void *status) { return *(int *)status != -1; }

static void test_user_switch(void **st)
{
    (void)st;
    if (geteuid() != 0) skip();
    struct proc_table *t = table(4096, 16, NULL);
    struct user_info u = {.uid = 4321, .gid = 4321, .ngroups = 2, .groups = {4321, 4322}};
    snprintf(u.name, sizeof u.name, "tester");
    snprintf(u.home, sizeof u.home, "/");
    snprintf(u.shell, sizeof u.shell, "/bin/sh");
    char *argv[] = {"/bin/sh", "-c", "id -u; id -g; id -G; echo $USER", NULL};
    struct proc_start s = {.argv = argv, .user = &u};
    struct proc *p = start(t, &s);
    wait_end(p);
    assert_string_equal(output(p, PROC_STDOUT), "4321\n4321\n4321 4322\ntester\n");

    /* Not root: switching is refused before anything starts. */
    int status = -1;
    struct reaper_watch rw;
    pid_t pid = spawn_fork(0);
    if (pid == 0) {
        char err[ERR_LEN];
        if (setuid(65534) < 0) _exit(2);
        errno = 0;
        _exit(proc_start(t, &s, err) == NULL && errno == EPERM && strstr(err, "needs the agent to run as root")
                  ? 0 : 1);
    }
    assert_true(pid > 0);
    reaper_watch(loop, &rw, pid, on_helper_exit, &status);
    run_until(helper_done, &status);
    assert_int_equal(status, 0);
    proc_table_free(t);
}

static void test_shutdown(void **st)
{
    (void)st;
    struct proc_table *t = table(4096, 16, NULL);
    struct proc *a = start_sh(t, "sleep 100");
    struct proc *b = start_sh(t, "trap '' TERM; echo ready; while :; do sleep 1; done");
    wait_output(b, PROC_STDOUT, "ready");
    proc_table_shutdown(t, 0.2);
    char err[ERR_LEN];
    wait_end(a);
    wait_end(b);
    assert_string_equal(proc_end(a)->status, "signal: terminated");
    assert_string_equal(proc_end(b)->status, "signal: killed");
    assert_int_equal(proc_table_running(t), 0);
    char *argv[] = {"true", NULL};
    struct proc_start s = {.argv = argv};
    assert_null(proc_start(t, &s, err));
    assert_int_equal(errno, ESHUTDOWN);
    proc_table_free(t);
}

/* ---- what a process started goes with it (proc_group.c, proc_tree.c) ---- */

static int pid_dead(void *ctx)
{
    char state;
    unsigned long long start;
    return descendants_stat(*(pid_t *)ctx, &state, &start) < 0 || state == 'Z';
}

static int path_gone(void *ctx) { return access(ctx, F_OK) < 0; }

static struct proc_table *table_cg(enum cgroup_want want)
{
    struct proc_table_opts o = {.retain = 4096, .keep_finished = 16, .grace = 0.3, .on_end = on_end,
                                .cgroups = want};
    char err[ERR_LEN];
    struct proc_table *t = proc_table_new(loop, &o, err);
    assert_non_null(t);
    return t;
}

/* A setsid daemon (outside the group) whose parent lives: a signal, or the
 * stop (a timeout), reaches it, with a cgroup or through /proc. */
static void daemon_goes(enum cgroup_want want, int sig)
{
    char err[ERR_LEN], cg[CGROUP_PATH_MAX] = "";
    struct proc_table *t = table_cg(want);
    struct proc *p = start_sh(t, "setsid sh -c 'sleep 100 & echo $!; wait' & wait");
    wait_output(p, PROC_STDOUT, "\n");
    pid_t d = (pid_t)atoi(output(p, PROC_STDOUT));
    assert_true(d > 0);
    if (proc_cgroup(p)) snprintf(cg, sizeof cg, "%s", proc_cgroup(p));
    if (want == CGROUP_WANT_OFF) assert_string_equal(cg, "");
    else if (!*cg) printf("(no cgroups on this machine: the /proc walk again)\n");
    if (sig) assert_int_equal(proc_signal(p, sig, err), 0);
    else proc_stop(p);
    wait_end(p);
    run_until(pid_dead, &d);
    if (*cg) run_until(path_gone, cg); /* empty: removed */
    proc_table_free(t);
}

static void test_a_daemon_goes_with_a_signal_or_a_stop(void **st)
{
    (void)st;
    daemon_goes(CGROUP_WANT_OFF, SIGKILL);
    daemon_goes(CGROUP_WANT_OFF, SIGTERM);
    daemon_goes(CGROUP_WANT_OFF, 0);
    daemon_goes(CGROUP_WANT_AUTO, SIGKILL);
    daemon_goes(CGROUP_WANT_AUTO, SIGTERM);
    daemon_goes(CGROUP_WANT_AUTO, 0);
    daemon_goes(CGROUP_WANT_V1, SIGTERM);
}

/* A normal exit leaves `sleep &` running, in its cgroup until it is gone;
 * the table's end kills what is left in a cgroup (and removes it). */
static void test_background_children_outlive_a_normal_exit(void **st)
{
    (void)st;
    struct proc_table *t = table_cg(CGROUP_WANT_AUTO);
    struct proc *p = start_sh(t, "sleep 100 & echo $!");
    wait_end(p);
    assert_int_equal(proc_end(p)->exit_code, 0);
    pid_t bg = (pid_t)atoi(output(p, PROC_STDOUT));
    assert_false(pid_dead(&bg));
    char cg[CGROUP_PATH_MAX] = "", base[CGROUP_PATH_MAX] = "";
    if (proc_cgroup(p)) snprintf(cg, sizeof cg, "%s", proc_cgroup(p));
    p = start_sh(t, "sleep 100 & echo $!");
    wait_end(p);
    pid_t bg2 = (pid_t)atoi(output(p, PROC_STDOUT));
    kill(bg, SIGKILL);
    run_until(pid_dead, &bg);
    if (*cg) {
        run_until(path_gone, cg);
        snprintf(base, sizeof base, "%s", cg);
        *strrchr(base, '/') = '\0';
    }
    proc_table_free(t);
    if (*cg) {
        /* bg2 was in a cgroup: killed, and every directory is gone. */
        run_until(pid_dead, &bg2);
        assert_true(path_gone(base));
    } else {
        assert_false(pid_dead(&bg2));
        kill(bg2, SIGKILL);
    }
}

int main(void)
{
    /* Orphaned grandchildren come back to us and are reaped by the loop. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    sig_ignore_pipe();
    loop = ev_default_loop(0);
    reaper_init(loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_and_both_channels),
        cmocka_unit_test(test_signal_death),
        cmocka_unit_test(test_command_that_cannot_run),
        cmocka_unit_test(test_pty_tty_and_resize),
        cmocka_unit_test(test_stdin_pipe),
        cmocka_unit_test(test_input_queue_is_bounded),
        cmocka_unit_test(test_timeout_stops_the_group),
        cmocka_unit_test(test_drain_is_bounded),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_subscribers_and_slow_reader),
        cmocka_unit_test(test_paced_reader_gets_every_byte_a_stalled_one_is_left),
        cmocka_unit_test(test_held_output_after_the_exit_waits_for_the_stall_time_only),
        cmocka_unit_test(test_finished_cap),
        cmocka_unit_test(test_forget_while_ending_and_with_readers),
        cmocka_unit_test(test_kept_for_a_time_after_the_end_went_out),
        cmocka_unit_test(test_finished_bytes_cap),
        cmocka_unit_test(test_env_builder),
        cmocka_unit_test(test_defaults_used_not_kept_and_their_room),
        cmocka_unit_test(test_env_and_cwd),
        cmocka_unit_test(test_user_switch),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_a_daemon_goes_with_a_signal_or_a_stop),
        cmocka_unit_test(test_background_children_outlive_a_normal_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
