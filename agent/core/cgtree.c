/*
 * cgtree.c - a cgroup's subtree, walked within bounds (see cgtree.h).
 *
 * The walk stands in one directory at a time: it goes down with an openat
 * of a name below it and back up with "..", and keeps per level only the
 * names of the groups still to enter there, so neither its fds nor any path
 * grow with the depth. Every step down or up is an openat2 that may not
 * cross a mount point nor follow a link (RESOLVE_NO_XDEV, Linux 5.6); where
 * the kernel has no openat2, an openat that follows no link, whose device
 * must be the top's (a mount of another filesystem is not entered, a bind
 * mount of the same hierarchy cannot be told there). Groups are removed on
 * the way up, each once everything below it was, so one walk removes a
 * whole tree of empty groups.
 */
#include "agent/core/cgtree.h"
#include "agent/core/buf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* openat2(2)'s argument and resolve flags (musl has no header for them). */
struct how {
    uint64_t flags, mode, resolve;
};
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04

/* Bytes of names one walk keeps (the groups still to enter, every level):
 * more siblings than that are left to a later walk. */
#define NAMES_MAX (4u << 20)

/* A group's member lists, in the order tried: its processes, else its
 * threads (a v2 threaded group's cgroup.procs cannot be read; v1's tasks):
 * kill() of any thread's id signals the whole process. */
static const char *const MEMBER_FILES[] = {"cgroup.procs", "cgroup.threads", "tasks"};

/* One level of the walk: the names below the directory it stands for. */
struct level {
    struct buf names; /* each NUL-terminated, one after another */
    size_t next;      /* offset of the next to enter */
    size_t last;      /* offset of the one entered last */
};

struct walk {
    int flags;
    struct pid_list *l;
    struct cgtree *w;
    dev_t dev;
    size_t max, budget; /* groups to visit, name bytes left */
    double deadline;
    struct level *lv;
    size_t depth, cap;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The directory name below (or "..", above) dir, in the walk's mount. */
static int open_dir(int dir, const char *name, dev_t dev)
{
    static int no_openat2;
    int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, fd = -1;
    if (!no_openat2) {
        struct how h = {(uint64_t)flags, 0, RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS};
        fd = (int)syscall(SYS_openat2, dir, name, &h, sizeof h);
        if (fd < 0 && errno == ENOSYS) no_openat2 = 1;
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return fd; /* EPERM: a seccomp filter's */
    }
    fd = openat(dir, name, flags);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev)) {
        close(fd);
        errno = EXDEV;
        return -1;
    }
    return fd;
}

/* Append the members of the group open at fd. */
static int read_members(int fd, struct pid_list *l)
{
    for (size_t i = 0; i < sizeof MEMBER_FILES / sizeof MEMBER_FILES[0]; i++) {
        int m = openat(fd, MEMBER_FILES[i], O_RDONLY | O_CLOEXEC);
        if (m < 0) continue;
        int r = descendants_read_fd(m, l), e = errno;
        close(m);
        if (r >= 0 || e == ENOMEM) return r;
    }
    return 0;
}

/* Thaw the v1 freezer group open at fd (nothing where there is none). */
static void thaw(int fd)
{
    int f = openat(fd, "freezer.state", O_WRONLY | O_CLOEXEC);
    if (f < 0) return;
    ssize_t r = write(f, "THAWED", 6); /* best effort: the group may be going */
    (void)r;
    close(f);
}

/* The names of the directories below fd into lv. Returns 1 when some did
 * not fit the walk's budget, 0, or -1 when fd cannot be listed. */
static int read_names(struct walk *k, int fd, struct level *lv)
{
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0), full = 0;
    DIR *dir = d >= 0 ? fdopendir(d) : NULL;
    if (!dir) {
        if (d >= 0) close(d);
        return -1;
    }
    for (struct dirent *e; (e = readdir(dir));) {
        if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t n = strlen(e->d_name) + 1;
        if (n > k->budget || buf_append(&lv->names, e->d_name, n) < 0) {
            full = 1;
            break;
        }
        k->budget -= n;
    }
    closedir(dir);
    return full;
}

/* Stand in the group open at fd: a new level, its members listed. */
static int enter(struct walk *k, int fd)
{
    if (k->depth == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 16;
        struct level *n = realloc(k->lv, cap * sizeof *n);
        if (!n) return -1;
        k->lv = n;
        k->cap = cap;
    }
    struct level *lv = &k->lv[k->depth++];
    memset(lv, 0, sizeof *lv);
    buf_init(&lv->names, NAMES_MAX);
    if (k->flags & CGTREE_THAW) thaw(fd);
    if ((k->flags & CGTREE_MEMBERS) && read_members(fd, k->l) < 0) return -1;
    int r = read_names(k, fd, lv);
    if (r > 0) k->w->cut = CGTREE_CUT_NAMES; /* the rest is left to a later walk */
    else if (r < 0 && errno == ENOMEM) return -1;
    return 0;
}

/* rmdir name below dir, counted. */
static void remove_one(struct cgtree *w, int dir, const char *name)
{
    if (unlinkat(dir, name, AT_REMOVEDIR) == 0) w->removed++;
    else if (errno == EBUSY || errno == ENOTEMPTY || errno == EEXIST) w->busy++;
    else if (errno != ENOENT && !w->err) w->err = errno;
}

/* The walk proper, from the top open at fd: returns the fd it ends in. */
static int walk(struct walk *k, int fd)
{
    struct cgtree *w = k->w;
    if (enter(k, fd) < 0) {
        w->err = errno;
        return fd;
    }
    while (k->depth > 0) {
        struct level *lv = &k->lv[k->depth - 1];
        if (lv->next < lv->names.len) {
            const char *name = lv->names.data + lv->next;
            lv->last = lv->next;
            lv->next += strlen(name) + 1;
            if (w->groups >= k->max || now() >= k->deadline) {
                w->cut = w->groups >= k->max ? CGTREE_CUT_COUNT : CGTREE_CUT_TIME;
                return fd;
            }
            int c = open_dir(fd, name, k->dev);
            if (c < 0) continue; /* gone meanwhile, or not a group of this mount */
            w->groups++;
            close(fd);
            fd = c;
            if (enter(k, fd) < 0) {
                w->err = errno;
                return fd;
            }
            continue;
        }
        buf_free(&lv->names);
        if (--k->depth == 0) break;
        int up = open_dir(fd, "..", k->dev);
        close(fd);
        if ((fd = up) < 0) {
            w->err = errno;
            return fd;
        }
        lv = &k->lv[k->depth - 1];
        if (k->flags & CGTREE_REMOVE) remove_one(w, fd, lv->names.data + lv->last);
    }
    return fd;
}

int cgtree_walk(const char *path, int flags, struct pid_list *l, struct cgtree *w)
{
    double t0 = now();
    struct walk k = {flags, l, w, 0, w->max ? w->max : CGTREE_MAX, NAMES_MAX,
                     t0 + (w->seconds > 0 ? w->seconds : CGTREE_SECONDS), NULL, 0, 0};
    struct stat st;
    w->groups = w->removed = w->busy = 0;
    w->cut = w->err = 0;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (errno != ENOENT) w->err = errno;
        if (fd >= 0) close(fd);
    } else {
        k.dev = st.st_dev;
        fd = walk(&k, fd);
        for (size_t i = 0; i < k.depth; i++) buf_free(&k.lv[i].names);
        free(k.lv);
        if (fd >= 0) close(fd);
        if ((flags & CGTREE_REMOVE) && !w->cut && !w->err) remove_one(w, AT_FDCWD, path);
    }
    w->took = now() - t0;
    return w->cut || w->err || w->busy ? -1 : 0;
}

const char *cgtree_why(const struct cgtree *w, char *out, size_t cap)
{
    if (w->err) snprintf(out, cap, "%s", strerror(w->err));
    else if (w->cut == CGTREE_CUT_COUNT) snprintf(out, cap, "more than %zu groups below it (one walk's bound)", w->groups);
    else if (w->cut == CGTREE_CUT_TIME) snprintf(out, cap, "a walk of its %zu groups took more than %.3g s", w->groups,
                                                 w->seconds > 0 ? w->seconds : CGTREE_SECONDS);
    else if (w->cut) snprintf(out, cap, "more names below it than one walk keeps");
    else if (w->busy) snprintf(out, cap, "%zu of its groups are not empty (members left)", w->busy);
    else snprintf(out, cap, "nothing left");
    return out;
}
