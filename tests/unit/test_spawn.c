/*
 * test_spawn.c - starting a child (agent/core/spawn.c, a clone that shares
 * the agent's memory until its exec): exec errors told apart from the
 * command's own exit (127 not found, 126 not executable, a failed chdir),
 * the group it leads, the signal state the agent was started with given
 * back (what the agent ignores or handles itself is not inherited), the
 * caller's errno untouched, many starts in a row on the one stack, and
 * the kernel's bound on argv + envp as the stack limit sets it. Children
 * are waited for with waitpid: no loop runs here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/core/sig.h"
#include "agent/core/spawn.h"
#include "procstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int wait_code(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return spawn_exit_code(st);
}

/* Run argv with its stdout into a pipe; its output (NUL-terminated) and exit code. */
static int run_out(char *const *argv, char *out, size_t cap, int *exec_errno)
{
    char err[ERR_LEN];
    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    struct spawn_opts o = {.argv = argv, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = fds[1], .stderr_fd = -1};
    pid_t pid = spawn_child(&o, exec_errno, err);
    assert_true(pid > 0);
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(fds[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    return wait_code(pid);
}

static void test_exec_errors(void **st)
{
    (void)st;
    char err[ERR_LEN], out[64];
    int e = -1;
    char *missing[] = {"/nonexistent/command", NULL};
    assert_int_equal(run_out(missing, out, sizeof out, &e), 127);
    assert_int_equal(e, ENOENT);

    char path[] = "/tmp/test_spawn_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    chmod(path, 0600); /* not executable */
    char *noexec[] = {path, NULL};
    assert_int_equal(run_out(noexec, out, sizeof out, &e), 126);
    assert_int_equal(e, EACCES);
    unlink(path);

    /* A command that exits 127 itself is not an exec error. */
    char *own[] = {"/bin/sh", "-c", "exit 127", NULL};
    assert_int_equal(run_out(own, out, sizeof out, &e), 127);
    assert_int_equal(e, 0);

    /* A cwd that is not there: told as chdir's errno. */
    char *pwd[] = {"/bin/pwd", NULL};
    struct spawn_opts o = {.argv = pwd, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1,
                           .cwd = "/nonexistent/dir"};
    pid_t pid = spawn_child(&o, &e, err);
    assert_true(pid > 0);
    assert_int_equal(e, ENOENT);
    assert_int_equal(wait_code(pid), 127);
}

static void test_group_and_errno(void **st)
{
    (void)st;
    char err[ERR_LEN];
    int e;
    char *argv[] = {"/bin/sleep", "5", NULL};
    struct spawn_opts o = {.argv = argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1,
                           .stderr_fd = -1};
    errno = 4242;
    pid_t pid = spawn_child(&o, &e, err);
    assert_int_equal(errno, 4242); /* the child's calls wrote the shared errno: put back */
    assert_true(pid > 0);
    assert_int_equal(e, 0);
    /* It leads its group as soon as spawn_child returns. */
    assert_int_equal(getpgid(pid), pid);
    kill(pid, SIGKILL);
    assert_int_equal(wait_code(pid), 128 + SIGKILL);
}

static void on_chld(int sig) { (void)sig; }

static void test_signal_state(void **st)
{
    (void)st;
    /* What the agent was "started with": what this test was started with
     * (make ignores some real-time signals), SIGUSR1 blocked, SIGHUP
     * ignored. */
    unsigned long long ign0 = procstatus_own("SigIgn:\t"), blk0 = procstatus_own("SigBlk:\t");
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    signal(SIGHUP, SIG_IGN);
    sig_record_initial();
    /* What the agent then changes: SIGPIPE ignored, a SIGCHLD handler,
     * SIGTERM blocked (read from a signalfd). */
    sig_ignore_pipe();
    signal(SIGCHLD, on_chld);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);

    char out[4096];
    int e;
    char *cat[] = {"/bin/cat", "/proc/self/status", NULL};
    assert_int_equal(run_out(cat, out, sizeof out, &e), 0);
    unsigned long long bit_usr1 = 1ull << (SIGUSR1 - 1), bit_hup = 1ull << (SIGHUP - 1);
    assert_int_equal(procstatus_mask(out, "SigBlk:\t"), blk0 | bit_usr1);
    assert_int_equal(procstatus_mask(out, "SigIgn:\t"), ign0 | bit_hup);
    assert_int_equal(procstatus_mask(out, "SigCgt:\t"), 0);

    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    sig_record_initial();
}

static void test_many_in_a_row(void **st)
{
    (void)st;
    char err[ERR_LEN];
    char *argv[] = {"/bin/true", NULL};
    for (int i = 0; i < 200; i++) {
        int e = -1;
        struct spawn_opts o = {.argv = argv, .new_pgrp = i & 1, .tty_fd = -1, .stdin_fd = -1, .stdout_fd = -1,
                               .stderr_fd = -1};
        pid_t pid = spawn_child(&o, &e, err);
        assert_true(pid > 0);
        assert_int_equal(e, 0);
        assert_int_equal(wait_code(pid), 0);
    }
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
        cmocka_unit_test(test_exec_errors),
        cmocka_unit_test(test_group_and_errno),
        cmocka_unit_test(test_signal_state),
        cmocka_unit_test(test_many_in_a_row),
        cmocka_unit_test(test_arg_max),
    };
    return cmocka_run_group_tests_name("spawn", tests, NULL, NULL);
}
