/*
 * test_spawn.c - the one child (agent/core/spawn.c), each test run in both
 * of its modes, waiting (CLONE_VFORK) and not: the report once the child
 * is past its exec (exec's errno: not found, not executable, PATH searched
 * as execvp does; a failed chdir told as such, as the user it switched to; a failed
 * cgroup join, told and lived with), a command's own exit 127 told apart,
 * the environment given, the group or session and controlling terminal it
 * leads, the ids it switches to, the signal state the agent was started
 * with given back (what the agent ignores or handles itself is not
 * inherited), the caller's errno untouched by a child sharing its memory,
 * many children at once and in a row, the OOM score a child writes back,
 * and the kernel's bound on argv + envp. Children are waited for with
 * waitpid (no loop runs here); reports with bounded polls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/core/oom.h"
#include "agent/core/sig.h"
#include "agent/core/spawn.h"
#include "procstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const enum spawn_mode WAIT = SPAWN_WAIT, NOWAIT = SPAWN_NOWAIT;
#define MODE(st) (*(const enum spawn_mode *)*(st))
#define BOTH(fn) cmocka_unit_test_prestate(fn, (void *)&WAIT), cmocka_unit_test_prestate(fn, (void *)&NOWAIT)

/* The report, waited for: the pipe's EOF always comes (the child execs or
 * exits); a child stuck before its exec fails the test after 30 s, never
 * hangs it. In wait mode it is complete at once. */
static void report(enum spawn_mode mode, struct spawn_report *r, struct spawn_result *res)
{
    if (mode == SPAWN_WAIT) assert_int_equal(spawn_report_fd(r), -1);
    while (!spawn_report_poll(r, res)) {
        struct pollfd p = {spawn_report_fd(r), POLLIN, 0};
        assert_int_equal(poll(&p, 1, 30000), 1);
    }
    assert_int_equal(spawn_report_poll(r, res), 1); /* and stays complete */
    assert_int_equal(spawn_report_fd(r), -1);
}

static int wait_code(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return spawn_exit_code(st);
}

struct run {
    int exec_errno, cwd_failed, cgroup_errno, code;
    char out[4096];
};

static void read_all(int fd, char *out, size_t cap)
{
    size_t n = 0;
    ssize_t got;
    while (n < cap - 1 && (got = read(fd, out + n, cap - 1 - n)) > 0) n += (size_t)got;
    out[n] = '\0';
}

/* Start o in mode with its stdout into a pipe (stdin and stderr as o has
 * them, else inherited); the report, the output, the exit code. */
static void run(enum spawn_mode mode, struct spawn_opts *o, struct run *r)
{
    char err[ERR_LEN];
    int fds[2];
    struct spawn_report *k;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    o->tty_fd = -1;
    if (!o->stdin_fd) o->stdin_fd = -1;
    o->stderr_fd = -1;
    o->stdout_fd = fds[1];
    pid_t pid = spawn_start(o, mode, &k, err);
    assert_true(pid > 0);
    close(fds[1]);
    read_all(fds[0], r->out, sizeof r->out);
    close(fds[0]);
    r->code = wait_code(pid);
    struct spawn_result res;
    report(mode, k, &res);
    spawn_report_free(k);
    r->exec_errno = res.exec_errno;
    r->cwd_failed = res.cwd_failed;
    r->cgroup_errno = res.cgroup_errno;
}

static void test_exec_report(void **st)
{
    enum spawn_mode m = MODE(st);
    struct run r;
    char *ok[] = {"/bin/echo", "hi", NULL};
    run(m, &(struct spawn_opts){.argv = ok}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.out, "hi\n");

    char *missing[] = {"/nonexistent/command", NULL};
    run(m, &(struct spawn_opts){.argv = missing, .cwd = "/tmp"}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.cwd_failed, 0); /* the exec's */
    assert_int_equal(r.code, 127);

    /* A command that exits 127 itself is not an exec error. */
    char *own[] = {"/bin/sh", "-c", "exit 127", NULL};
    run(m, &(struct spawn_opts){.argv = own}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_int_equal(r.code, 127);

    /* Searched in the agent's PATH, as execvp does. */
    char *searched[] = {"echo", "found", NULL};
    run(m, &(struct spawn_opts){.argv = searched}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_string_equal(r.out, "found\n");
    char *unknown[] = {"no-such-command-anywhere", NULL};
    run(m, &(struct spawn_opts){.argv = unknown}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.code, 127);

    /* A file found but not executable: EACCES, 126, by its path and
     * through PATH, even when a later entry has nothing. */
    char dir[] = "/tmp/test_spawn_XXXXXX", file[64], path[160];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/tool", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    char *noexec[] = {file, NULL};
    run(m, &(struct spawn_opts){.argv = noexec}, &r);
    assert_int_equal(r.exec_errno, EACCES);
    assert_int_equal(r.code, 126);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(path, sizeof path, "%s:/nonexistent", dir);
    setenv("PATH", path, 1);
    char *tool[] = {"tool", NULL};
    run(m, &(struct spawn_opts){.argv = tool}, &r);
    if (saved) setenv("PATH", saved, 1);
    else unsetenv("PATH");
    free(saved);
    assert_int_equal(r.exec_errno, EACCES);
    assert_int_equal(r.code, 126);
    unlink(file);
    rmdir(dir);

    /* A cwd that is not there: chdir's errno. */
    char *pwd[] = {"/bin/pwd", NULL};
    run(m, &(struct spawn_opts){.argv = pwd, .cwd = "/nonexistent/dir"}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.cwd_failed, 1);
    assert_int_equal(r.code, 127);
    run(m, &(struct spawn_opts){.argv = pwd, .cwd = "/tmp"}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_int_equal(r.cwd_failed, 0);
    assert_string_equal(r.out, "/tmp\n");
}

static void test_environment_and_group(void **st)
{
    enum spawn_mode m = MODE(st);
    struct run r;
    char *sh[] = {"/bin/sh", "-c", "echo \"$FOO\"; cut -d' ' -f5 /proc/self/stat; echo $$", NULL};
    char *env[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
    run(m, &(struct spawn_opts){.argv = sh, .envp = env, .new_pgrp = 1}, &r);
    assert_int_equal(r.exec_errno, 0);
    char foo[64];
    int pgid = 0, pid = -1;
    assert_int_equal(sscanf(r.out, "%63[^\n]\n%d\n%d", foo, &pgid, &pid), 3);
    assert_string_equal(foo, "bar baz");
    assert_int_equal(pgid, pid); /* it leads its own group */

    /* Waited for, it leads its group as soon as spawn_start returns. */
    if (m != SPAWN_WAIT) return;
    char err[ERR_LEN];
    int e;
    char *sleeper[] = {"/bin/sleep", "5", NULL};
    struct spawn_opts o = {.argv = sleeper, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1,
                           .stderr_fd = -1};
    pid_t child = spawn_child(&o, &e, err);
    assert_true(child > 0);
    assert_int_equal(e, 0);
    assert_int_equal(getpgid(child), child);
    kill(child, SIGKILL);
    assert_int_equal(wait_code(child), 128 + SIGKILL);
}

/* A new session whose controlling terminal is fd 0, a pty's slave. */
static void test_session_and_terminal(void **st)
{
    enum spawn_mode m = MODE(st);
    struct run r;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    char name[64];
    assert_int_equal(ptsname_r(master, name, sizeof name), 0);
    int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(slave > 2);
    struct stat sb;
    assert_int_equal(fstat(slave, &sb), 0);
    /* Fields 6 and 7 of stat: its session and its terminal's device. */
    char *sh[] = {"/bin/sh", "-c", "cut -d' ' -f6,7 /proc/self/stat; echo $$", NULL};
    run(m, &(struct spawn_opts){.argv = sh, .stdin_fd = slave, .new_session = 1, .ctty = 1}, &r);
    close(slave);
    close(master);
    assert_int_equal(r.exec_errno, 0);
    long sid = -1, tty = -1, pid = 0;
    assert_int_equal(sscanf(r.out, "%ld %ld\n%ld", &sid, &tty, &pid), 3);
    assert_int_equal(sid, pid);
    assert_int_equal(tty, (long)sb.st_rdev);
}

/* The ids it switches to, before its chdir: a directory only root may
 * enter is refused as the user (EACCES, 126). Root only. */
static void test_ids_then_cwd(void **st)
{
    enum spawn_mode m = MODE(st);
    if (geteuid() != 0) skip();
    struct run r;
    gid_t groups[] = {65534, 4242};
    char *id[] = {"/bin/sh", "-c", "id -u; id -g; id -G", NULL};
    run(m, &(struct spawn_opts){.argv = id, .set_ids = 1, .uid = 65534, .gid = 65534, .groups = groups,
                                .ngroups = 2},
        &r);
    assert_int_equal(r.exec_errno, 0);
    assert_string_equal(r.out, "65534\n65534\n65534 4242\n");

    char dir[] = "/tmp/test_spawn_XXXXXX";
    assert_non_null(mkdtemp(dir)); /* 0700, root's */
    char *pwd[] = {"/bin/pwd", NULL};
    run(m, &(struct spawn_opts){.argv = pwd, .cwd = dir, .set_ids = 1, .uid = 65534, .gid = 65534}, &r);
    assert_int_equal(r.exec_errno, EACCES);
    assert_int_equal(r.cwd_failed, 1);
    assert_int_equal(r.code, 126);
    run(m, &(struct spawn_opts){.argv = pwd, .cwd = dir}, &r); /* root may */
    assert_int_equal(r.exec_errno, 0);
    rmdir(dir);
}

static void test_cgroup_join_failure_is_told(void **st)
{
    enum spawn_mode m = MODE(st);
    struct run r;
    int ro = open("/dev/null", O_RDONLY | O_CLOEXEC); /* a write to it fails: EBADF */
    assert_true(ro > 2);
    char *ok[] = {"/bin/echo", "joined or not", NULL};
    run(m, &(struct spawn_opts){.argv = ok, .cgroup_fd = ro}, &r);
    close(ro);
    assert_int_equal(r.cgroup_errno, EBADF);
    assert_int_equal(r.exec_errno, 0); /* and it ran on */
    assert_string_equal(r.out, "joined or not\n");
}

static void on_chld(int sig) { (void)sig; }

static void test_errno_and_signals(void **st)
{
    enum spawn_mode m = MODE(st);
    char err[ERR_LEN];
    struct spawn_report *k;
    /* Started with what this test was started with (make ignores some
     * real-time signals), SIGUSR1 blocked and SIGHUP ignored; then the
     * agent's own changes (SIGPIPE ignored, a SIGCHLD handler, SIGTERM
     * blocked: read from a signalfd), which the child must not get. */
    unsigned long long blk0 = procstatus_own("SigBlk:\t"), ign0 = procstatus_own("SigIgn:\t");
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    signal(SIGHUP, SIG_IGN);
    sig_record_initial();
    sig_ignore_pipe();
    signal(SIGCHLD, on_chld);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);

    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    char *cat[] = {"/bin/cat", "/proc/self/status", NULL};
    struct spawn_opts o = {.argv = cat, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = fds[1], .stderr_fd = -1};
    errno = 4242;
    pid_t pid = spawn_start(&o, m, &k, err);
    assert_int_equal(errno, 4242); /* the child's system calls are its own */
    assert_true(pid > 0);
    close(fds[1]);
    char out[4096];
    read_all(fds[0], out, sizeof out);
    close(fds[0]);
    assert_int_equal(wait_code(pid), 0);
    struct spawn_result res;
    report(m, k, &res);
    spawn_report_free(k);
    assert_int_equal(procstatus_mask(out, "SigBlk:\t"), blk0 | 1ull << (SIGUSR1 - 1));
    assert_int_equal(procstatus_mask(out, "SigIgn:\t"), ign0 | 1ull << (SIGHUP - 1));
    assert_int_equal(procstatus_mask(out, "SigCgt:\t"), 0);

    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    sig_record_initial();
}

/* Many started before any is waited for (each no-wait child on a stack of
 * its own), then many in a row (the stacks kept and reused). */
static void test_many(void **st)
{
    enum spawn_mode m = MODE(st);
    enum { N = 40 };
    char err[ERR_LEN];
    struct spawn_report *k[N];
    pid_t pid[N];
    char *three[] = {"/bin/sh", "-c", "exit 3", NULL};
    for (int i = 0; i < N; i++) {
        struct spawn_opts o = {.argv = three, .new_pgrp = i & 1, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1,
                               .stderr_fd = -1};
        pid[i] = spawn_start(&o, m, &k[i], err);
        assert_true(pid[i] > 0);
    }
    for (int i = 0; i < N; i++) {
        struct spawn_result res;
        assert_int_equal(wait_code(pid[i]), 3);
        report(m, k[i], &res);
        assert_int_equal(res.exec_errno, 0);
        spawn_report_free(k[i]);
    }
    char *t[] = {"/bin/true", NULL};
    for (int i = 0; i < 200; i++) {
        struct spawn_result res;
        struct spawn_report *r;
        struct spawn_opts o = {.argv = t, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
        pid_t p = spawn_start(&o, m, &r, err);
        assert_true(p > 0);
        assert_int_equal(wait_code(p), 0);
        report(m, r, &res);
        assert_int_equal(res.exec_errno, 0);
        spawn_report_free(r);
    }
}

/* Where the agent may lower its OOM score (CAP_SYS_RESOURCE): a child gets
 * the score the agent started with, and the agent keeps -1000, whatever
 * the mode asked (a no-wait child may not write it: it waits). Last: the
 * protection stays for the process. */
static void test_oom_score(void **st)
{
    enum spawn_mode m = MODE(st);
    char before[16] = "", agent[16] = "";
    int fd = open(OOM_SCORE_ADJ, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_true(read(fd, before, sizeof before - 1) > 0);
    close(fd);
    oom_protect();
    if (!oom_protected()) skip();
    struct run r;
    char *cat[] = {"/bin/cat", OOM_SCORE_ADJ, NULL};
    run(m, &(struct spawn_opts){.argv = cat}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_string_equal(r.out, strcmp(before, "-1000\n") ? before : "0\n");
    fd = open(OOM_SCORE_ADJ, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_true(read(fd, agent, sizeof agent - 1) > 0);
    close(fd);
    assert_string_equal(agent, "-1000\n");
}

/* The stack's soft limit set to soft (kept under the hard one): the bound. */
static size_t arg_max_with(rlim_t soft)
{
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_STACK, &r), 0);
    struct rlimit s = {.rlim_cur = soft, .rlim_max = r.rlim_max};
    if (r.rlim_max != RLIM_INFINITY && soft > r.rlim_max) s.rlim_cur = r.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_STACK, &s), 0);
    size_t n = spawn_arg_max();
    assert_int_equal(setrlimit(RLIMIT_STACK, &r), 0);
    return n;
}

static void test_arg_max(void **st)
{
    (void)st;
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_STACK, &r), 0);
    assert_int_equal(arg_max_with(8u << 20), 2u << 20);       /* a quarter */
    assert_int_equal(arg_max_with(1u << 20), 256u << 10);
    assert_int_equal(arg_max_with(256u << 10), 128u << 10);   /* never below ARG_MAX */
    if (r.rlim_max == RLIM_INFINITY) {
        assert_int_equal(arg_max_with(64u << 20), 6u << 20);  /* never above 3/4 of _STK_LIM */
        assert_int_equal(arg_max_with(RLIM_INFINITY), 6u << 20);
    }
    assert_int_equal(SPAWN_ARG_COST(3), 3 + 1 + sizeof(char *));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_exec_report),
        BOTH(test_environment_and_group),
        BOTH(test_session_and_terminal),
        BOTH(test_ids_then_cwd),
        BOTH(test_cgroup_join_failure_is_told),
        BOTH(test_errno_and_signals),
        BOTH(test_many),
        cmocka_unit_test(test_arg_max),
        BOTH(test_oom_score),
    };
    return cmocka_run_group_tests_name("spawn", tests, NULL, NULL);
}
