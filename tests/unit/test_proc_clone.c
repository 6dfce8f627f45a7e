/*
 * test_proc_clone.c - a Start's child started without waiting (agent/proc/
 * clone.c): the report once the child is past its exec (exec's errno: not
 * found, not executable, PATH searched as execvp does, a failed chdir; a
 * failed cgroup join, told and lived with), the caller's errno untouched by
 * a child sharing its memory, the signal state the agent started with,
 * the environment given, many children at once. Waits are bounded polls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/core/sig.h"
#include "agent/proc/clone.h"
#include "procstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The report, waited for (10 s at most). */
static void report(struct proc_clone *k, int *exec_errno, int *cgroup_errno)
{
    /* The pipe's EOF always comes (the child execs or exits); a child
     * stuck before its exec fails the test after 30 s, never hangs it. */
    while (!proc_clone_poll(k, exec_errno, cgroup_errno)) {
        struct pollfd p = {proc_clone_fd(k), POLLIN, 0};
        assert_int_equal(poll(&p, 1, 30000), 1);
    }
    assert_int_equal(proc_clone_poll(k, exec_errno, cgroup_errno), 1); /* and stays complete */
}

static int wait_code(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return spawn_exit_code(st);
}

struct run {
    int exec_errno, cgroup_errno, code;
    char out[4096];
};

/* Start o with its stdout into a pipe; the report, the output, the exit code. */
static void run(struct spawn_opts *o, struct run *r)
{
    char err[ERR_LEN];
    int fds[2];
    struct proc_clone *k;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    o->tty_fd = -1;
    o->stdin_fd = o->stderr_fd = -1;
    o->stdout_fd = fds[1];
    pid_t pid = proc_clone_start(o, &k, err);
    assert_true(pid > 0);
    close(fds[1]);
    size_t n = 0;
    ssize_t got;
    while (n < sizeof r->out - 1 && (got = read(fds[0], r->out + n, sizeof r->out - 1 - n)) > 0) n += (size_t)got;
    r->out[n] = '\0';
    close(fds[0]);
    r->code = wait_code(pid);
    report(k, &r->exec_errno, &r->cgroup_errno);
    proc_clone_free(k);
}

static void test_exec_report(void **st)
{
    (void)st;
    struct run r;
    char *ok[] = {"/bin/echo", "hi", NULL};
    run(&(struct spawn_opts){.argv = ok}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.out, "hi\n");

    char *missing[] = {"/nonexistent/command", NULL};
    run(&(struct spawn_opts){.argv = missing}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.code, 127);

    /* Searched in the agent's PATH, as execvp does. */
    char *searched[] = {"echo", "found", NULL};
    run(&(struct spawn_opts){.argv = searched}, &r);
    assert_int_equal(r.exec_errno, 0);
    assert_string_equal(r.out, "found\n");
    char *unknown[] = {"no-such-command-anywhere", NULL};
    run(&(struct spawn_opts){.argv = unknown}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.code, 127);

    /* A file found but not executable: EACCES, 126, even when a later
     * entry has nothing. */
    char dir[] = "/tmp/test_proc_clone_XXXXXX", file[64], path[160];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/tool", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(path, sizeof path, "%s:/nonexistent", dir);
    setenv("PATH", path, 1);
    char *tool[] = {"tool", NULL};
    run(&(struct spawn_opts){.argv = tool}, &r);
    if (saved) setenv("PATH", saved, 1);
    else unsetenv("PATH");
    free(saved);
    assert_int_equal(r.exec_errno, EACCES);
    assert_int_equal(r.code, 126);
    unlink(file);
    rmdir(dir);

    /* A cwd that is not there: chdir's errno. */
    char *pwd[] = {"/bin/pwd", NULL};
    run(&(struct spawn_opts){.argv = pwd, .cwd = "/nonexistent/dir"}, &r);
    assert_int_equal(r.exec_errno, ENOENT);
    assert_int_equal(r.code, 127);
    run(&(struct spawn_opts){.argv = pwd, .cwd = "/tmp"}, &r);
    assert_string_equal(r.out, "/tmp\n");
}

static void test_environment_and_group(void **st)
{
    (void)st;
    struct run r;
    char *sh[] = {"/bin/sh", "-c", "echo \"$FOO\"; cut -d' ' -f5 /proc/self/stat; echo $$", NULL};
    char *env[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", NULL};
    run(&(struct spawn_opts){.argv = sh, .envp = env, .new_pgrp = 1}, &r);
    assert_int_equal(r.exec_errno, 0);
    char foo[64];
    int pgid = 0, pid = -1;
    assert_int_equal(sscanf(r.out, "%63[^\n]\n%d\n%d", foo, &pgid, &pid), 3);
    assert_string_equal(foo, "bar baz");
    assert_int_equal(pgid, pid); /* it leads its own group */
}

static void test_cgroup_join_failure_is_told(void **st)
{
    (void)st;
    struct run r;
    int ro = open("/dev/null", O_RDONLY | O_CLOEXEC); /* a write to it fails: EBADF */
    assert_true(ro > 2);
    char *ok[] = {"/bin/echo", "joined or not", NULL};
    run(&(struct spawn_opts){.argv = ok, .cgroup_fd = ro}, &r);
    close(ro);
    assert_int_equal(r.cgroup_errno, EBADF);
    assert_int_equal(r.exec_errno, 0); /* and it ran on */
    assert_string_equal(r.out, "joined or not\n");
}

static void test_errno_and_signals(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct proc_clone *k;
    /* Started with what this test was started with (make ignores some
     * real-time signals), SIGUSR1 blocked and SIGHUP ignored; then the
     * agent's own changes, which the child must not get. */
    unsigned long long blk0 = procstatus_own("SigBlk:\t"), ign0 = procstatus_own("SigIgn:\t");
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    signal(SIGHUP, SIG_IGN);
    sig_record_initial();
    sig_ignore_pipe();
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);

    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    char *cat[] = {"/bin/cat", "/proc/self/status", NULL};
    struct spawn_opts o = {.argv = cat, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = fds[1], .stderr_fd = -1};
    errno = 4242;
    pid_t pid = proc_clone_start(&o, &k, err);
    assert_int_equal(errno, 4242); /* the child's system calls are its own */
    assert_true(pid > 0);
    close(fds[1]);
    char out[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)got;
    out[n] = '\0';
    close(fds[0]);
    assert_int_equal(wait_code(pid), 0);
    int e, cg;
    report(k, &e, &cg);
    proc_clone_free(k);
    assert_int_equal(procstatus_mask(out, "SigBlk:\t"), blk0 | 1ull << (SIGUSR1 - 1));
    assert_int_equal(procstatus_mask(out, "SigIgn:\t"), ign0 | 1ull << (SIGHUP - 1));

    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    sig_record_initial();
}

static void test_many_at_once(void **st)
{
    (void)st;
    enum { N = 40 };
    char err[ERR_LEN];
    struct proc_clone *k[N];
    pid_t pid[N];
    char *sleeper[] = {"/bin/sh", "-c", "exit 3", NULL};
    for (int i = 0; i < N; i++) {
        struct spawn_opts o = {.argv = sleeper, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
        pid[i] = proc_clone_start(&o, &k[i], err);
        assert_true(pid[i] > 0);
    }
    for (int i = 0; i < N; i++) {
        int e, cg;
        assert_int_equal(wait_code(pid[i]), 3);
        report(k[i], &e, &cg);
        assert_int_equal(e, 0);
        proc_clone_free(k[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_report),
        cmocka_unit_test(test_environment_and_group),
        cmocka_unit_test(test_cgroup_join_failure_is_told),
        cmocka_unit_test(test_errno_and_signals),
        cmocka_unit_test(test_many_at_once),
    };
    return cmocka_run_group_tests_name("proc_clone", tests, NULL, NULL);
}
