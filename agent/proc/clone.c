/*
 * clone.c - a Start's child, started without waiting for its exec (see
 * clone.h).
 *
 * spawn_child waits in clone(CLONE_VFORK) until its child has exec'd, and
 * that wait is the child's time to get a CPU, not the agent's own: with 50
 * clients starting `true` on 2 CPUs it was 0.85 ms a Start on average, 90%
 * of the loop's time, every other client waiting meanwhile. A fork would
 * not wait, but copies the agent's page tables (its output rings: up to a
 * GiB a channel) and makes every page the agent writes afterwards fault.
 *
 * So: clone(CLONE_VM) without CLONE_VFORK, as a thread is made but a
 * process of its own (own fds, own signal handlers, SIGCHLD at its exit).
 * The child runs beside the agent, in the agent's memory, until its exec,
 * and therefore uses nothing of the C library: raw system calls (the C
 * library's write errno, which is the agent's), no allocation, no locks,
 * no string functions (the sanitizers wrap those). It reads only its block
 * (a copy of what it needs, made here) and writes only its stack and the
 * report pipe. The agent keeps both until the pipe's EOF says the child has
 * left its memory: exec replaces the memory before the close-on-exec fds
 * close, exit releases it before the fds close. Its signals are blocked
 * from the clone until its dispositions are the workload's (sig.h).
 *
 * The raw system call is written for x86-64; elsewhere, and where the
 * agent lowered its OOM score (oom.h: a child sharing its memory cannot
 * raise its own back without raising the agent's), spawn_child does the
 * work, waiting, and the report is complete at once.
 */
#include "agent/proc/clone.h"
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
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

struct proc_clone {
    int fd;           /* the report's read end (closed by proc_clone_free); -1: none */
    int done;         /* the report is complete */
    int exec_errno, cgroup_errno;
    char *stack;      /* the child's (guard page first); NULL once given back */
    struct child *c;  /* its block */
};

#if defined(__x86_64__)

/* Only the child's code runs here: none of it may be instrumented. */
#if defined(__clang__)
#define CHILD_CODE __attribute__((no_sanitize("address", "undefined"), no_builtin))
#elif defined(__GNUC__)
#define CHILD_CODE __attribute__((no_sanitize("address", "undefined"), optimize("no-tree-loop-distribute-patterns")))
#else
#define CHILD_CODE
#endif

/* A system call: the result, or -errno. Nothing else is touched. */
static inline __attribute__((always_inline)) long rsys(long n, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}

/* The kernel's struct sigaction (sig.c's). */
struct ksigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    sig_kset mask;
};

/* What the child needs, in one block of its own: this struct, the groups,
 * argv and envp (pointers, then their strings), cwd and PATH. */
struct child {
    int errfd, cgroup_fd, tty_fd, fd[3];
    int new_pgrp, new_session, ctty, set_ids;
    long uid, gid, ngroups;
    const gid_t *groups;
    char **argv, **envp;
    const char *cwd, *path; /* NULL: none, the agent's */
    sig_kset mask, ignored;
};

#define STACK_SIZE (32u * 1024u)
#define STACKS_KEPT 16

static char *stacks[STACKS_KEPT];
static int nstacks;

/* A stack, its lowest page a guard. */
static char *stack_get(void)
{
    if (nstacks) return stacks[--nstacks];
    return spawn_stack_map(STACK_SIZE);
}

static void stack_put(char *p)
{
    if (nstacks < STACKS_KEPT) stacks[nstacks++] = p;
    else munmap(p, STACK_SIZE + SPAWN_GUARD);
}

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

/* The block for o (malloc'd), or NULL. */
static struct child *child_block(const struct spawn_opts *o)
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
    sig_initial(&c->mask, &c->ignored);
    return c;
}

/* ---- the child: raw system calls only ---- */

static CHILD_CODE void report(const struct child *c, int e) { rsys(SYS_write, c->errfd, (long)&e, sizeof e, 0); }

/* The workload's signal state (sig_child_restore's, by hand). */
static CHILD_CODE void child_signals(const struct child *c)
{
    static const int changed[] = {SIGPIPE, SIGCHLD};
    for (int i = 0; i < 2; i++) {
        struct ksigaction ka = {.handler = (c->ignored & (1ULL << (changed[i] - 1))) ? SIG_IGN : SIG_DFL};
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

static CHILD_CODE int child_main(void *arg)
{
    const struct child *c = arg;
    long e;
    if (c->cgroup_fd > 0 && (e = rsys(SYS_write, c->cgroup_fd, (long)"0", 1, 0)) != 1)
        report(c, e < 0 ? (int)e : -EIO); /* told (negated) and lived with */
    if (c->new_session) rsys(SYS_setsid, 0, 0, 0, 0);
    else if (c->new_pgrp) rsys(SYS_setpgid, 0, 0, 0, 0);
    if (c->tty_fd >= 0) {
        int pg = (int)rsys(SYS_getpgid, 0, 0, 0, 0);
        rsys(SYS_ioctl, c->tty_fd, TIOCSPGRP, (long)&pg, 0);
    }
    child_signals(c);
    for (int i = 0; i < 3; i++)
        if (c->fd[i] >= 0 && (e = rsys(SYS_dup2, c->fd[i], i, 0, 0)) < 0) goto fail;
    if (c->new_session && c->ctty && (e = rsys(SYS_ioctl, 0, TIOCSCTTY, 0, 0)) < 0) goto fail;
    if (c->set_ids && ((e = rsys(SYS_setgroups, c->ngroups, (long)c->groups, 0, 0)) < 0 ||
                       (e = rsys(SYS_setgid, c->gid, 0, 0, 0)) < 0 || (e = rsys(SYS_setuid, c->uid, 0, 0, 0)) < 0))
        goto fail;
    if (c->cwd && (e = rsys(SYS_chdir, (long)c->cwd, 0, 0, 0)) < 0) goto fail;
    e = -child_exec(c);
fail:
    report(c, (int)-e);
    rsys(SYS_exit_group, -e == ENOENT || -e == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC, 0, 0, 0);
    return 0;
}

/* ---- the agent's side ---- */

static pid_t start_now(const struct spawn_opts *o, struct proc_clone **out, char *err)
{
    int pfd[2];
    sig_kset old;
    struct proc_clone *k = calloc(1, sizeof *k);
    struct child *c = k ? child_block(o) : NULL;
    char *stack = c ? stack_get() : NULL;
    *out = NULL;
    if (!stack || pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = !c ? ENOMEM : !stack ? EAGAIN : errno;
        err_set(err, "cannot start a child: %s", strerror(e));
        if (stack) stack_put(stack);
        free(c);
        free(k);
        errno = e;
        return -1;
    }
    c->errfd = pfd[1];
    sig_block_all(&old); /* no handler runs in the child */
    pid_t pid = clone(child_main, stack + SPAWN_GUARD + STACK_SIZE, CLONE_VM | SIGCHLD, c);
    int e = errno;
    sig_set_mask(&old);
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        stack_put(stack);
        free(c);
        free(k);
        err_set(err, "clone: %s", strerror(e));
        errno = e;
        return -1;
    }
    k->fd = pfd[0];
    k->stack = stack;
    k->c = c;
    *out = k;
    return pid;
}

/* The child has left the agent's memory: its block and stack are free. */
static void complete(struct proc_clone *k)
{
    k->done = 1;
    stack_put(k->stack);
    k->stack = NULL;
    free(k->c);
    k->c = NULL;
}


#endif

/* spawn_child, which waits until the child has exec'd: the report is
 * complete at once. */
static pid_t start_waiting(const struct spawn_opts *o, struct proc_clone **out, char *err)
{
    struct proc_clone *k = calloc(1, sizeof *k);
    *out = NULL;
    if (!k) {
        err_set(err, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    struct spawn_opts so = *o;
    so.cgroup_errno = &k->cgroup_errno;
    pid_t pid = spawn_child(&so, &k->exec_errno, err);
    if (pid < 0) {
        int e = errno;
        free(k);
        errno = e;
        return -1;
    }
    k->fd = -1;
    k->done = 1;
    *out = k;
    return pid;
}

pid_t proc_clone_start(const struct spawn_opts *o, struct proc_clone **out, char *err)
{
#if defined(__x86_64__)
    /* A child that shares the agent's memory cannot write its own
     * oom_score_adj back: the kernel would set the agent's with it (every
     * process of a shared mm gets the same, except a vfork child). */
    if (!oom_protected()) return start_now(o, out, err);
#endif
    return start_waiting(o, out, err);
}

int proc_clone_poll(struct proc_clone *k, int *exec_errno, int *cgroup_errno)
{
#if defined(__x86_64__)
    while (!k->done) {
        int e[2];
        ssize_t r = read(k->fd, e, sizeof e);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return 0;
        if (r == 0) { /* EOF: past its exec, or gone */
            complete(k);
            break;
        }
        if (r < 0) { /* cannot happen; the child may still be in our memory */
            k->done = 1;
            k->stack = NULL; /* left to it */
            k->c = NULL;
            break;
        }
        for (ssize_t i = 0; i < r / (ssize_t)sizeof e[0]; i++) {
            if (e[i] < 0) k->cgroup_errno = -e[i];
            else if (e[i] > 0) k->exec_errno = e[i];
        }
    }
#endif
    *exec_errno = k->exec_errno;
    *cgroup_errno = k->cgroup_errno;
    return 1;
}

int proc_clone_fd(const struct proc_clone *k) { return k->fd; }

void proc_clone_free(struct proc_clone *k)
{
    if (!k) return;
    /* Not past its exec yet (the table is going): the child may still read
     * its block and run on its stack, so both stay. */
    if (k->fd >= 0) close(k->fd);
    free(k);
}
