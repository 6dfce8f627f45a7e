/*
 * descendants.c - reading /proc children files whole, and killing every
 * descendant within a deadline (see descendants.h).
 *
 * Why every level at once: SIGKILLing only our own children goes one level
 * per round (a killed process's children are reparented to us only once it
 * has died), so a chain of processes that each wait for the next outlives
 * any fixed number of rounds, and one that keeps forking at the bottom can
 * outgrow a round a level. A sweep reads each process's children before
 * killing it, so the whole tree /proc shows dies in one pass; what was forked
 * meanwhile is reparented to us and found by the next sweep.
 *
 * Our own children cannot be reused pids: they are ours to reap, and nothing
 * is reaped during a sweep. A deeper pid was read from its parent's children
 * file microseconds before the kill; for it to name another process by then,
 * it would have to be reaped by that parent and the kernel's pid counter
 * would have to wrap all the way around to it.
 */
#include "agent/core/descendants.h"
#include "agent/core/buf.h"
#include "agent/core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* "PID " is at most 8 bytes for pids up to the kernel's limit (4194304). */
#define PID_LIMIT 4194304L
#define CHILDREN_FILE_MAX (4u << 20)
/* Processes visited in one sweep: the kernel's own limit. */
#define SWEEP_MAX ((size_t)PID_LIMIT)
/* Longest wait for a reap before the next sweep (a process that is slow to
 * die, e.g. in uninterruptible sleep, is signalled again). */
#define SWEEP_TICK 0.02

void descendants_list_free(struct pid_list *l)
{
    free(l->pid);
    memset(l, 0, sizeof *l);
}

static int pid_list_add(struct pid_list *l, pid_t p)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        pid_t *np = realloc(l->pid, cap * sizeof *np);
        if (!np) return -1;
        l->pid = np;
        l->cap = cap;
    }
    l->pid[l->n++] = p;
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

int descendants_parse(const char *text, size_t len, struct pid_list *l)
{
    int added = 0;
    size_t i = 0;
    while (i < len) {
        if (!is_digit(text[i])) {
            i++;
            continue;
        }
        long v = 0;
        for (; i < len && is_digit(text[i]); i++)
            if (v <= PID_LIMIT) v = v * 10 + (text[i] - '0');
        if (i == len) break; /* no separator after it: it may be cut short */
        if (v < 1 || v > PID_LIMIT) continue;
        if (pid_list_add(l, (pid_t)v) < 0) return -1;
        added++;
    }
    return added;
}

int descendants_read_fd(int fd, struct pid_list *l)
{
    struct buf b;
    buf_init(&b, CHILDREN_FILE_MAX);
    char chunk[4096];
    int first = 1;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && first) { /* nothing readable (a v2 threaded group's cgroup.procs) */
            int e = errno;
            buf_free(&b);
            errno = e;
            return -1;
        }
        first = 0;
        /* An error (the process died meanwhile) or the bound ends the
         * read; what was read whole still counts. */
        if (n <= 0 || buf_append(&b, chunk, (size_t)n) < 0) break;
    }
    int r = descendants_parse(b.data ? b.data : "", b.len, l);
    buf_free(&b);
    return r;
}

int descendants_read(const char *path, struct pid_list *l)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = descendants_read_fd(fd, l);
    int e = errno;
    close(fd);
    errno = e;
    /* A children file that cannot be read at all: its process is gone. */
    return r < 0 && e != ENOMEM ? 0 : r;
}

int descendants_children(pid_t pid, struct pid_list *l)
{
    char dir[48], path[48 + 256 + 16];
    if (pid) snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    else snprintf(dir, sizeof dir, "/proc/self/task");
    DIR *d = opendir(dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_digit(e->d_name[0])) continue;
        snprintf(path, sizeof path, "%s/%s/children", dir, e->d_name);
        if (descendants_read(path, l) < 0 && errno == ENOMEM) break;
    }
    closedir(d);
    return 0;
}

int descendants_stat(pid_t pid, char *state, unsigned long long *start)
{
    char path[48], text[1024];
    if (pid) snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    else snprintf(path, sizeof path, "/proc/self/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = '\0';
    /* The command name may hold anything, ")" too: the fields start after
     * the last ")". State is the first, the start time the 20th. */
    char *p = strrchr(text, ')');
    if (!p || p[1] != ' ' || !p[2]) return -1;
    *state = p[2];
    p += 2;
    for (int field = 1; field < 20 && p; field++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    if (!p) return -1;
    *start = strtoull(p, NULL, 10);
    return 0;
}

/* One pass over the tree: each process's children are listed before it is
 * killed. Returns how many children of our own it saw (0: none left), or
 * -1 when /proc cannot tell. */
static long sweep_tree(void)
{
    struct pid_list l = {NULL, 0, 0};
    if (descendants_children(0, &l) < 0) return -1;
    size_t ours = l.n;
    pid_t self = getpid();
    for (size_t i = 0; i < l.n && i < SWEEP_MAX; i++) {
        pid_t p = l.pid[i];
        if (p <= 1 || p == self) continue;
        descendants_children(p, &l);
        kill(p, SIGKILL);
    }
    descendants_list_free(&l);
    return (long)ours;
}

/* As PID 1, every other process of the namespace is ours to kill; kill(-1,
 * 0) succeeds while any is left, zombies included (no /proc needed). */
static long sweep_namespace(void)
{
    kill(-1, SIGKILL);
    return kill(-1, 0) == 0 ? 1 : 0;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents; /* only ends ev_run's iteration */
}

int descendants_kill(struct ev_loop *loop, double seconds)
{
    int as_init = getpid() == 1;
    double deadline = mono_now() + seconds;
    ev_timer tick;
    ev_timer_init(&tick, on_tick, SWEEP_TICK, 0.);
    for (;;) {
        long left = as_init ? sweep_namespace() : sweep_tree();
        if (left == 0) return 0;
        if (left < 0) {
            log_warn("cannot list the job's leftover processes in /proc: %s", strerror(errno));
            return -1;
        }
        double remaining = deadline - mono_now();
        if (remaining <= 0) {
            log_warn("leftover processes of the job still alive after %.3g s of SIGKILL", seconds);
            return -1;
        }
        /* One loop iteration: the reaper runs on SIGCHLD, or the tick ends it. */
        ev_timer_set(&tick, remaining < SWEEP_TICK ? remaining : SWEEP_TICK, 0.);
        ev_timer_start(loop, &tick);
        ev_run(loop, EVRUN_ONCE);
        ev_timer_stop(loop, &tick);
    }
}
