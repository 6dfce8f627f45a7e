/*
 * spawn.c - the one child every mode starts (see spawn.h), and the helper
 * fork.
 *
 * The child is made with clone(CLONE_VM) on a stack of its own, as
 * posix_spawn does: the agent's page tables are not copied for every start
 * (its output rings: up to a GiB a channel), nor its pages made
 * copy-on-write until the exec. It shares the agent's memory until then,
 * so it uses nothing of the C library: raw system calls (the library's
 * wrappers write errno, which is the agent's; the sanitizers wrap them),
 * no allocation, no locks, no string functions. It reads only its block (a
 * copy of what it needs, made here, with the signal state and the OOM
 * score it restores) and writes only its stack and the report pipe, a
 * close-on-exec pipe into which a failed step writes its errno before the
 * child exits: the only way to tell "command not found" from a command
 * that itself exits 127. Its signals are blocked from the clone until its
 * dispositions are the workload's, so no handler of the agent's runs in it.
 *
 * Two modes of the same child:
 *   SPAWN_WAIT    CLONE_VFORK: the agent resumes once the child has exec'd
 *                 or exited, so the report is in the pipe when clone
 *                 returns, and the block and stack are free at once.
 *   SPAWN_NOWAIT  no CLONE_VFORK: the child runs beside the agent, which
 *                 reads the report later and keeps the block and stack
 *                 until the pipe's EOF says the child has left its memory
 *                 (exec replaces the memory before the close-on-exec fds
 *                 close; exit releases it before the fds close). Waiting
 *                 is the child's time to get a CPU, not the agent's: with 50
 *                 clients starting `true` on 2 CPUs it was 0.85 ms a Start,
 *                 90% of serve's loop, every other client waiting meanwhile.
 * Only a vfork child may write its OOM score (oom.h), so SPAWN_NOWAIT
 * becomes SPAWN_WAIT while the agent's score is protected. The raw system
 * call is written for x86-64; elsewhere the C library's syscall() stands
 * in, which writes errno: SPAWN_WAIT only, errno put back after the clone.
 */
#include "agent/core/spawn.h"
#include "agent/core/err.h"
#include "agent/core/oom.h"
#include "agent/core/protocol.h"
#include "agent/core/sig.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NSIG
#define NSIG 65
#endif

extern char **environ;

int spawn_exec_exit_code(int exec_errno)
{
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

const char *spawn_exec_reason(int exec_errno)
{
    return exec_errno == ENOENT ? "command not found" : strerror(exec_errno);
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

/* ---- the child's system calls ---- */

/* Only the child's code runs here: none of it may be instrumented (on its
 * own stack AddressSanitizer would see a stack overflow), nor turned into
 * calls of the C library's memcpy or memset. */
#if defined(__clang__)
#define CHILD_CODE __attribute__((no_sanitize("address", "undefined"), no_builtin))
#elif defined(__GNUC__)
#define CHILD_CODE __attribute__((no_sanitize("address", "undefined"), optimize("no-tree-loop-distribute-patterns")))
#else
#define CHILD_CODE
#endif

#if defined(__x86_64__)
#define SPAWN_CAN_NOWAIT 1
/* A system call: the result, or -errno. Nothing else is touched. */
static inline __attribute__((always_inline)) long rsys(long n, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}
#else
#define SPAWN_CAN_NOWAIT 0
/* The C library's: errno written, which only a vfork child may do. */
static CHILD_CODE long rsys(long n, long a, long b, long c, long d)
{
    long r = syscall(n, a, b, c, d);
    return r < 0 ? -errno : r;
}
#endif

/* 32-bit ids where the kernel has both (i386, arm). */
#ifdef SYS_setgid32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETGID SYS_setgid32
#define SYS_SETUID SYS_setuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETGID SYS_setgid
#define SYS_SETUID SYS_setuid
#endif

/* ---- the child's block: everything it reads ---- */

/* This struct, then the groups, argv and envp (pointers, then their
 * strings), cwd and PATH, in one allocation. */
struct child {
    int errfd, cgroup_fd, tty_fd, fd[3];
    int new_pgrp, new_session, ctty, set_ids;
    long uid, gid, ngroups;
    const gid_t *groups;
    char **argv, **envp;
    const char *cwd, *path; /* NULL: none, the agent's */
    const char *oom_adj;    /* NULL: not written (oom_child_adj, static) */
    size_t oom_len;
    sig_kset mask, ignored;
};

static size_t strv_size(char *const *v, size_t *n)
{
    size_t bytes = 0;
    for (*n = 0; v && v[*n]; (*n)++) bytes += strlen(v[*n]) + 1;
    return bytes;
}

/* Copy v (n strings) to ptrs, their text at *text. */
static void strv_copy(char *const *v, size_t n, char **ptrs, char **text)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(v[i]) + 1;
        memcpy(*text, v[i], k);
        ptrs[i] = *text;
        *text += k;
    }
    ptrs[n] = NULL;
}

static char *str_copy(const char *s, char **text)
{
    if (!s) return NULL;
    size_t k = strlen(s) + 1;
    char *d = memcpy(*text, s, k);
    *text += k;
    return d;
}

/* The block for o (malloc'd), or NULL. The OOM score is written by a
 * vfork child only (waits). */
static struct child *child_block(const struct spawn_opts *o, int waits)
{
    char *const *envp = o->envp ? o->envp : environ;
    const char *path = getenv("PATH");
    size_t na, ne, bytes = sizeof(struct child) + o->ngroups * sizeof(gid_t);
    size_t text = strv_size(o->argv, &na) + strv_size(envp, &ne) + (o->cwd ? strlen(o->cwd) + 1 : 0) +
                  (path ? strlen(path) + 1 : 0);
    bytes = (bytes + sizeof(char *) - 1) / sizeof(char *) * sizeof(char *);
    struct child *c = malloc(bytes + (na + ne + 2) * sizeof(char *) + text);
    if (!c) return NULL;
    gid_t *groups = (gid_t *)(c + 1);
    if (o->ngroups) memcpy(groups, o->groups, o->ngroups * sizeof(gid_t));
    char **ptrs = (char **)((char *)c + bytes), *t = (char *)(ptrs + na + ne + 2);
    *c = (struct child){.cgroup_fd = o->cgroup_fd, .tty_fd = o->tty_fd,
                        .fd = {o->stdin_fd, o->stdout_fd, o->stderr_fd}, .new_pgrp = o->new_pgrp,
                        .new_session = o->new_session, .ctty = o->ctty, .set_ids = o->set_ids,
                        .uid = (long)o->uid, .gid = (long)o->gid, .ngroups = (long)o->ngroups,
                        .groups = groups, .argv = ptrs, .envp = ptrs + na + 1};
    strv_copy(o->argv, na, c->argv, &t);
    strv_copy(envp, ne, c->envp, &t);
    c->cwd = str_copy(o->cwd, &t);
    c->path = str_copy(path, &t);
    if (waits) c->oom_adj = oom_child_adj(&c->oom_len);
    sig_initial(&c->mask, &c->ignored);
    return c;
}

/* ---- the child: raw system calls only ---- */

static CHILD_CODE void report(const struct child *c, int e) { rsys(SYS_write, c->errfd, (long)&e, sizeof e, 0); }

/* The OOM score the agent was started with (before the ids drop). */
static CHILD_CODE void child_oom(const struct child *c)
{
    long fd = rsys(SYS_openat, AT_FDCWD, (long)OOM_SCORE_ADJ, O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0) return;
    rsys(SYS_write, fd, (long)c->oom_adj, (long)c->oom_len, 0);
    rsys(SYS_close, fd, 0, 0, 0);
}

/* The workload's signal state (sig.h, sig_initial): the two dispositions
 * the agent changed back, then the start-up mask. */
static CHILD_CODE void child_signals(const struct child *c)
{
    static const int changed[] = {SIGPIPE, SIGCHLD};
    for (int i = 0; i < 2; i++) {
        struct sig_kaction ka = {.handler = (c->ignored & SIG_KBIT(changed[i])) ? SIG_IGN : SIG_DFL};
        rsys(SYS_rt_sigaction, changed[i], (long)&ka, 0, sizeof(sig_kset));
    }
    rsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&c->mask, 0, sizeof(sig_kset));
}

/* execvp's search, as musl's: each PATH entry in turn, EACCES remembered.
 * Returns the errno to report. */
static CHILD_CODE long child_exec(const struct child *c)
{
    const char *file = c->argv[0], *path = c->path ? c->path : "/usr/local/bin:/bin:/usr/bin";
    char b[PATH_MAX + NAME_MAX + 2];
    size_t k = 0;
    int slash = 0;
    while (file[k]) slash |= file[k++] == '/';
    if (!k) return ENOENT;
    if (slash) return -rsys(SYS_execve, (long)file, (long)c->argv, (long)c->envp, 0);
    if (k > NAME_MAX) return ENAMETOOLONG;
    long e = ENOENT;
    int eacces = 0;
    for (const char *p = path;;) {
        const char *z = p;
        while (*z && *z != ':') z++;
        size_t n = (size_t)(z - p);
        if (n + 1 + k + 1 <= sizeof b) { /* a longer entry is skipped */
            for (size_t i = 0; i < n; i++) b[i] = p[i];
            if (n) b[n++] = '/';
            for (size_t i = 0; i <= k; i++) b[n + i] = file[i];
            e = -rsys(SYS_execve, (long)b, (long)c->argv, (long)c->envp, 0);
            if (e == EACCES) eacces = 1;
            else if (e != ENOENT && e != ENOTDIR) return e;
        }
        if (!*z) break;
        p = z + 1;
    }
    return eacces ? EACCES : e;
}

/* fd onto to (dup2's meaning; dup3 refuses fd == to, where dup2 does nothing). */
static CHILD_CODE long child_dup(int fd, int to) { return fd == to ? to : rsys(SYS_dup3, fd, to, 0, 0); }

/* Told with a failed chdir's errno (errno values stay below 4096). */
#define REPORT_CWD (1 << 16)

static CHILD_CODE int child_main(void *arg)
{
    const struct child *c = arg;
    long e;
    int step = 0;
    /* Before anything can fork. A failure is told (negated) and lived with. */
    if (c->cgroup_fd > 0 && (e = rsys(SYS_write, c->cgroup_fd, (long)"0", 1, 0)) != 1)
        report(c, e < 0 ? (int)e : -EIO);
    if (c->new_session) rsys(SYS_setsid, 0, 0, 0, 0);
    else if (c->new_pgrp) rsys(SYS_setpgid, 0, 0, 0, 0);
    /* Still fully blocked here, so SIGTTOU cannot stop us while a background
     * group takes the terminal. */
    if (c->tty_fd >= 0) {
        int pg = (int)rsys(SYS_getpgid, 0, 0, 0, 0);
        rsys(SYS_ioctl, c->tty_fd, TIOCSPGRP, (long)&pg, 0);
    }
    if (c->oom_adj) child_oom(c);
    child_signals(c);
    for (int i = 0; i < 3; i++)
        if (c->fd[i] >= 0 && (e = child_dup(c->fd[i], i)) < 0) goto fail;
    if (c->new_session && c->ctty && (e = rsys(SYS_ioctl, 0, TIOCSCTTY, 0, 0)) < 0) goto fail;
    if (c->set_ids && ((e = rsys(SYS_SETGROUPS, c->ngroups, (long)c->groups, 0, 0)) < 0 ||
                       (e = rsys(SYS_SETGID, c->gid, 0, 0, 0)) < 0 || (e = rsys(SYS_SETUID, c->uid, 0, 0, 0)) < 0))
        goto fail;
    if (c->cwd && (e = rsys(SYS_chdir, (long)c->cwd, 0, 0, 0)) < 0) {
        step = REPORT_CWD;
        goto fail;
    }
    e = -child_exec(c);
fail:
    report(c, (int)-e | step);
    rsys(SYS_exit_group, -e == ENOENT || -e == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC, 0, 0, 0);
    return 0;
}

/* ---- the agent's side ---- */

/* The child's stack: a guard page below it, so that a deep exec path cannot
 * reach the agent's data. A few are kept for the next children. */
#define STACK_SIZE (32u * 1024u)
#define STACK_GUARD 4096u
#define STACKS_KEPT 16

static char *stacks[STACKS_KEPT];
static int nstacks;

static char *stack_get(void)
{
    if (nstacks) return stacks[--nstacks];
    char *p = mmap(NULL, STACK_SIZE + STACK_GUARD, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (mprotect(p, STACK_GUARD, PROT_NONE) < 0) {
        munmap(p, STACK_SIZE + STACK_GUARD);
        return NULL;
    }
    return p;
}

static void stack_put(char *p)
{
    if (nstacks < STACKS_KEPT) stacks[nstacks++] = p;
    else munmap(p, STACK_SIZE + STACK_GUARD);
}

struct spawn_report {
    int fd;           /* the pipe's read end; -1 once complete */
    struct spawn_result res;
    char *stack;      /* the child's (guard page first); NULL once given back */
    struct child *c;  /* its block */
};

/* The child has left the agent's memory: its block and stack are free. */
static void complete(struct spawn_report *r)
{
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->stack) stack_put(r->stack);
    r->stack = NULL;
    free(r->c);
    r->c = NULL;
}

/* What the pipe holds: up to two ints, a cgroup join's errno negated, then
 * the failed step's (REPORT_CWD set for the chdir). Returns 1 at EOF (the
 * child is out of the agent's memory), 0 when there is nothing more for
 * now. */
static int report_read(struct spawn_report *r)
{
    for (;;) {
        int e[2];
        ssize_t n = read(r->fd, e, sizeof e);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) return 1; /* EOF; or cannot happen: then the child keeps what it reads */
        for (ssize_t i = 0; i < n / (ssize_t)sizeof e[0]; i++) {
            if (e[i] < 0) {
                r->res.cgroup_errno = -e[i];
            } else if (e[i] > 0) {
                r->res.exec_errno = e[i] & ~REPORT_CWD;
                r->res.cwd_failed = (e[i] & REPORT_CWD) != 0;
            }
        }
    }
}

/* Start o's child into r (zeroed). */
static pid_t start(const struct spawn_opts *o, enum spawn_mode mode, struct spawn_report *r, char *err)
{
    int pfd[2], saved = errno, waits = mode == SPAWN_WAIT || !SPAWN_CAN_NOWAIT || oom_protected();
    sig_kset old;
    struct child *c = child_block(o, waits);
    char *stack = c ? stack_get() : NULL;
    r->fd = -1;
    if (!stack || pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = !c ? ENOMEM : !stack ? EAGAIN : errno;
        err_set(err, "cannot start a child: %s", strerror(e));
        if (stack) stack_put(stack);
        free(c);
        errno = e;
        return -1;
    }
    c->errfd = pfd[1];
    sig_block_all(&old); /* no handler runs in the child */
    pid_t pid = clone(child_main, stack + STACK_GUARD + STACK_SIZE, CLONE_VM | (waits ? CLONE_VFORK : 0) | SIGCHLD, c);
    int e = errno;
    errno = saved; /* a vfork child's calls may have written it */
    sig_set_mask(&old);
    close(pfd[1]);
    r->fd = pfd[0];
    r->stack = stack;
    r->c = c;
    if (pid < 0) {
        complete(r);
        err_set(err, "clone: %s", strerror(e));
        errno = e;
        return -1;
    }
    if (waits) { /* past its exec: what it wrote is there, if not yet its EOF */
        report_read(r);
        complete(r);
    }
    errno = saved;
    return pid;
}

pid_t spawn_start(const struct spawn_opts *o, enum spawn_mode mode, struct spawn_report **out, char *err)
{
    struct spawn_report *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) {
        err_set(err, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    pid_t pid = start(o, mode, r, err);
    if (pid < 0) {
        int e = errno;
        free(r);
        errno = e;
        return -1;
    }
    *out = r;
    return pid;
}

int spawn_report_fd(const struct spawn_report *r) { return r->fd; }

int spawn_report_poll(struct spawn_report *r, struct spawn_result *res)
{
    if (r->fd >= 0) {
        if (!report_read(r)) return 0;
        complete(r);
    }
    *res = r->res;
    return 1;
}

void spawn_report_free(struct spawn_report *r)
{
    if (!r) return;
    /* Not past its exec yet (its table is going): the child may still read
     * its block and run on its stack, so both stay. */
    if (r->fd >= 0) close(r->fd);
    free(r);
}

pid_t spawn_child(const struct spawn_opts *o, int *exec_errno, char *err)
{
    struct spawn_report r = {0};
    pid_t pid = start(o, SPAWN_WAIT, &r, err);
    *exec_errno = r.res.exec_errno;
    return pid;
}

/* ---- the helper fork ---- */

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
