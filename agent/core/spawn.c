/*
 * spawn.c - fork/exec with reliable exec errors, and the reaper (see spawn.h).
 *
 * Exec errors travel back through a close-on-exec pipe: a successful exec
 * closes it (read sees EOF), a failed one writes errno into it first. That is
 * the only way for the parent to tell "command not found" from a command that
 * itself exits 127.
 */
#include "agent/core/spawn.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/oom.h"
#include "agent/core/protocol.h"
#include "agent/core/sig.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef NSIG
#define NSIG 65
#endif

int spawn_exec_exit_code(int exec_errno)
{
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

int spawn_exit_code(int status)
{
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return EXIT_SIGNAL_BASE + WTERMSIG(status);
    return 255;
}

static void write_all_raw(int fd, const void *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
}

/*
 * Blocking "everything" around fork, and restoring afterwards, goes through
 * the raw syscall: the C library's sigprocmask() hides the signals it
 * reserves (32-34) from the old mask it returns, so restoring that mask
 * would silently unblock the signals sig.c reads from its signalfd.
 */
static void block_all(sig_kset *old)
{
    sig_kset all = ~0ULL;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, old, sizeof all);
}

static void restore_mask(const sig_kset *old)
{
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, sizeof *old);
}

/* In a helper child that runs our own code (spawn_fork), with every signal
 * still blocked: default dispositions, then an empty mask. They must be reset
 * before unblocking, since a libev handler running in the child would write
 * into the parent's wakeup pipe, and SIG_IGN (SIGPIPE) would hide EPIPE. */
static void helper_reset_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
    sig_kset none = 0;
    restore_mask(&none);
}

/* Runs in the child between fork and exec: async-signal-safe calls only. */
static void child_setup_and_exec(const struct spawn_opts *o, int errfd)
{
    int e;

    /* Before anything can fork. A failure is told (negated) and lived with. */
    if (o->cgroup_fd > 0 && write(o->cgroup_fd, "0", 1) != 1) {
        e = -errno;
        write_all_raw(errfd, &e, sizeof e);
    }
    if (o->new_session) setsid();
    else if (o->new_pgrp) setpgid(0, 0);
    /* Still fully blocked here, so SIGTTOU cannot stop us while a background
     * group takes the terminal. */
    if (o->tty_fd >= 0) tcsetpgrp(o->tty_fd, getpgrp());
    /* The workload gets the signal state the agent was started with, and
     * its OOM score (never the agent's -1000; before the ids drop). */
    sig_child_restore();
    oom_child_reset();

    if (o->stdin_fd >= 0 && dup2(o->stdin_fd, 0) < 0) goto fail;
    if (o->stdout_fd >= 0 && dup2(o->stdout_fd, 1) < 0) goto fail;
    if (o->stderr_fd >= 0 && dup2(o->stderr_fd, 2) < 0) goto fail;
    if (o->new_session && o->ctty && ioctl(0, TIOCSCTTY, 0) < 0) goto fail;
    if (o->set_ids && (setgroups(o->ngroups, o->groups) < 0 || setgid(o->gid) < 0 || setuid(o->uid) < 0))
        goto fail;
    if (o->cwd && chdir(o->cwd) < 0) goto fail;
    if (o->envp) execvpe(o->argv[0], o->argv, o->envp);
    else execvp(o->argv[0], o->argv);
fail:
    e = errno;
    write_all_raw(errfd, &e, sizeof e);
    _exit(spawn_exec_exit_code(e));
}

const char *spawn_exec_reason(int exec_errno)
{
    return exec_errno == ENOENT ? "command not found" : strerror(exec_errno);
}

pid_t spawn_child(const struct spawn_opts *o, int *exec_errno, char *err)
{
    int pfd[2];
    sig_kset old;
    pid_t pid;

    *exec_errno = 0;
    if (o->cgroup_errno) *o->cgroup_errno = 0;
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        int e = errno;
        err_set(err, "pipe: %s", strerror(e));
        errno = e;
        return -1;
    }
    /* Block everything across fork so no handler runs in the child. */
    block_all(&old);
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        child_setup_and_exec(o, pfd[1]);
    }
    int fork_errno = errno;
    restore_mask(&old);
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        err_set(err, "fork: %s", strerror(fork_errno));
        errno = fork_errno;
        return -1;
    }
    /* Both sides set the group, so it exists before either relies on it.
     * Not for a new session: setsid fails in a group leader. */
    if (o->new_pgrp && !o->new_session) setpgid(pid, pid);
    /* Up to two messages: a cgroup join's errno negated, then exec's. */
    for (int got = 0; got < 2;) {
        int e;
        ssize_t r = read(pfd[0], &e, sizeof e);
        if (r < 0 && errno == EINTR) continue;
        if (r != (ssize_t)sizeof e) break;
        got++;
        if (e < 0 && o->cgroup_errno) *o->cgroup_errno = -e;
        else if (e > 0) *exec_errno = e;
    }
    close(pfd[0]);
    return pid;
}

pid_t spawn_fork(int new_pgrp)
{
    sig_kset old;
    block_all(&old);
    pid_t pid = fork();
    if (pid == 0) {
        if (new_pgrp) setpgid(0, 0);
        helper_reset_signals();
        return 0;
    }
    int e = errno;
    restore_mask(&old);
    if (pid > 0 && new_pgrp) setpgid(pid, pid);
    errno = e;
    return pid;
}
