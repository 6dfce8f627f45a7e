/*
 * spawn.c - fork/exec with reliable exec errors, and the reaper (see spawn.h).
 *
 * Exec errors travel back through a close-on-exec pipe: a failed exec (or
 * chdir, setuid, ...) writes errno into it before the child exits. That is
 * the only way for the parent to tell "command not found" from a command that
 * itself exits 127.
 *
 * The child is made with clone(CLONE_VM | CLONE_VFORK) on a stack of its
 * own, as posix_spawn does: the parent's page tables are not copied for
 * every start (nor its pages made copy-on-write until the exec), and the
 * parent resumes once the child has exec'd or exited, so whatever the child
 * wrote into the pipe is there to read without waiting. The child shares
 * the parent's memory until its exec, so it runs async-signal-safe calls
 * only, through the raw syscalls where the C library would take locks or
 * touch its own state (set*id), and writes nothing of the parent's but the
 * pipe (errno, which it shares, is put back by the parent).
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
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

size_t spawn_arg_max(void)
{
    const size_t stk_lim = 8u << 20, arg_max = 128u << 10; /* the kernel's _STK_LIM and ARG_MAX */
    size_t limit = stk_lim / 4 * 3;
    struct rlimit r;
    if (getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur / 4 < limit)
        limit = (size_t)(r.rlim_cur / 4);
    return limit > arg_max ? limit : arg_max;
}

int spawn_exit_code(int status)
{
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return EXIT_SIGNAL_BASE + WTERMSIG(status);
    return 255;
}

/* The child runs on a stack of its own in the parent's memory: none of its
 * code is instrumented (AddressSanitizer would take the stack switch for a
 * stack overflow at its first noreturn call). */
#if defined(__GNUC__)
#define CHILD_CODE __attribute__((no_sanitize("address")))
#else
#define CHILD_CODE
#endif

static CHILD_CODE void write_all_raw(int fd, const void *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
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
    sig_set_mask(&none);
}

/* The identity switch through the raw syscalls: the C library's set*id
 * synchronise every thread (locks, signals), which a child sharing the
 * parent's memory must not do, and which a child has no use for. */
#ifdef SYS_setgid32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETGID SYS_setgid32
#define SYS_SETUID SYS_setuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETGID SYS_setgid
#define SYS_SETUID SYS_setuid
#endif

static CHILD_CODE int set_ids(const struct spawn_opts *o)
{
    return syscall(SYS_SETGROUPS, o->ngroups, o->groups) < 0 || syscall(SYS_SETGID, o->gid) < 0 ||
                   syscall(SYS_SETUID, o->uid) < 0
               ? -1
               : 0;
}

/* Runs in the child before exec, in the parent's memory: async-signal-safe
 * calls only, nothing of the parent's written but through errfd. */
static CHILD_CODE void child_setup_and_exec(const struct spawn_opts *o, int errfd)
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
    if (o->set_ids && set_ids(o) < 0) goto fail;
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

/* The child's stack: mapped once, a guard page below it, so that a deep
 * exec path (a long PATH search, a script's argv) cannot reach the
 * parent's data. Only one child is ever between clone and exec. */
#define CHILD_STACK (256u * 1024u)

char *spawn_stack_map(size_t size)
{
    char *p = mmap(NULL, size + SPAWN_GUARD, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (mprotect(p, SPAWN_GUARD, PROT_NONE) < 0) {
        int e = errno;
        munmap(p, size + SPAWN_GUARD);
        errno = e;
        return NULL;
    }
    return p;
}

static char *child_stack_top(void)
{
    static char *top;
    if (top) return top;
    char *p = spawn_stack_map(CHILD_STACK);
    return p ? (top = p + SPAWN_GUARD + CHILD_STACK) : NULL;
}

struct child_args {
    const struct spawn_opts *o;
    int errfd;
};

static CHILD_CODE int child_main(void *arg)
{
    const struct child_args *a = arg;
    child_setup_and_exec(a->o, a->errfd);
    return 127; /* not reached */
}

/* What the child wrote into the pipe before its exec or its exit: up to
 * two ints, a cgroup join's errno negated, then exec's. It is all there
 * once clone returns; an empty pipe means the exec succeeded. */
static void read_report(int fd, const struct spawn_opts *o, int *exec_errno)
{
    int e[2];
    ssize_t r;
    do r = read(fd, e, sizeof e);
    while (r < 0 && errno == EINTR);
    for (ssize_t i = 0; r > 0 && i < r / (ssize_t)sizeof e[0]; i++) {
        if (e[i] < 0 && o->cgroup_errno) *o->cgroup_errno = -e[i];
        else if (e[i] > 0) *exec_errno = e[i];
    }
}

pid_t spawn_child(const struct spawn_opts *o, int *exec_errno, char *err)
{
    int pfd[2], saved = errno;
    sig_kset old;
    char *stack = child_stack_top();

    *exec_errno = 0;
    if (o->cgroup_errno) *o->cgroup_errno = 0;
    if (!stack) {
        err_set(err, "cannot map a stack for the child: %s", strerror(errno));
        errno = EAGAIN;
        return -1;
    }
    /* Non-blocking: the report is read once, after the child is past exec. */
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        err_set(err, "pipe: %s", strerror(e));
        errno = e;
        return -1;
    }
    struct child_args a = {o, pfd[1]};
    /* Block everything across clone so no handler runs in the child (the
     * child unblocks once its dispositions are the workload's). */
    sig_block_all(&old);
    pid_t pid = clone(child_main, stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    int clone_errno = errno;
    errno = saved; /* the child's calls wrote it (and the caller's stays) */
    sig_set_mask(&old);
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        err_set(err, "clone: %s", strerror(clone_errno));
        errno = clone_errno;
        return -1;
    }
    /* The child has set its group (or session) already: clone returned
     * after its exec. */
    read_report(pfd[0], o, exec_errno); /* EAGAIN, for an exec that worked */
    close(pfd[0]);
    errno = saved;
    return pid;
}

pid_t spawn_fork(int new_pgrp)
{
    sig_kset old;
    sig_block_all(&old);
    pid_t pid = fork();
    if (pid == 0) {
        if (new_pgrp) setpgid(0, 0);
        helper_reset_signals();
        return 0;
    }
    int e = errno;
    sig_set_mask(&old);
    if (pid > 0 && new_pgrp) setpgid(pid, pid);
    errno = e;
    return pid;
}
