/*
 * probe.c - the tree service's looks at the file system (see tree_priv.h):
 * directories are told apart by inode (st_dev, st_ino), never by path alone.
 *
 * The events are read late: by the time "a created" is handled, the path a
 * may name a later directory, and the first one may be b. So a node's path
 * is trusted only once it resolves to the node's own inode; a child is opened
 * relative to its parent's checked fd; and a watch is added on exactly the
 * directory opened (inotify_add_watch on /proc/self/fd/N, or, without /proc,
 * on the path, the one check left being the fd's).
 */
#include "inotify/tree/tree_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The raw system call: musl's open() follows O_CLOEXEC with an fcntl for
 * kernels that predate it, one wasted call per directory. */
static int open_at(int dfd, const char *path, int flags)
{
    return (int)syscall(SYS_openat, dfd, path, flags | O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int tree_probe_same(const struct tree_model *t, const struct tree_node *n, const struct stat *st)
{
    /* ROOT is taken as named (a symlink is followed): nothing to compare. */
    return n == t->root || (n->dev == st->st_dev && n->ino == st->st_ino);
}

void tree_probe_mark_relist(struct tree *s, struct tree_node *n)
{
    if (n == s->t.root || n->relist) return;
    n->relist = 1;
    s->relist_marks++;
}

int tree_probe_open_node(struct tree *s, const struct tree_node *n)
{
    buf_reset(&s->path);
    if (tree_model_path(&s->t, n, NULL, 0, &s->path) < 0 || !buf_cstr(&s->path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open_at(AT_FDCWD, s->path.data, n == s->t.root ? 0 : O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? TREE_PROBE_STALE : -1;
    struct stat st;
    if (n != s->t.root && (fstat(fd, &st) < 0 || !tree_probe_same(&s->t, n, &st))) {
        close(fd);
        return TREE_PROBE_STALE; /* another directory has the name now */
    }
    return fd;
}

int tree_probe_path_holds(struct tree *s, const struct tree_node *n)
{
    if (n == s->t.root) return 1;
    buf_reset(&s->path);
    struct stat st;
    return tree_model_path(&s->t, n, NULL, 0, &s->path) == 0 && buf_cstr(&s->path) &&
           lstat(s->path.data, &st) == 0 && tree_probe_same(&s->t, n, &st);
}

int tree_probe_open_child(int pfd, const char *name, size_t len, struct stat *st)
{
    char nm[NAME_MAX + 1];
    if (len == 0 || len > NAME_MAX) {
        errno = len ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(nm, name, len);
    nm[len] = '\0';
    int fd = open_at(pfd, nm, O_NOFOLLOW);
    if (fd < 0) return -1;
    if (fstat(fd, st) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int tree_probe_open_found(int dfd, const char *path, dev_t dev, ino_t ino, struct stat *st)
{
    int fd = open_at(dfd, path, O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? TREE_PROBE_STALE : -1;
    if (fstat(fd, st) < 0 || st->st_dev != dev || st->st_ino != ino) {
        close(fd);
        return TREE_PROBE_STALE; /* an earlier component replaced, or the name another's now */
    }
    return fd;
}

int tree_probe_refused(struct tree *s, int dfd, const char *path)
{
    struct stat st;
    return s->admit && fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           !s->admit(s->ctx, -1, &st);
}

enum tree_probe tree_probe(struct tree *s, const struct tree_node *parent, const char *name, size_t len,
                       struct stat *st)
{
    int pfd = tree_probe_open_node(s, parent);
    if (pfd < 0) return TREE_PROBE_UNKNOWN;
    int fd = tree_probe_open_child(pfd, name, len, st);
    int e = errno;
    close(pfd);
    if (fd >= 0) {
        close(fd);
        return TREE_PROBE_FOUND;
    }
    return e == ENOENT || e == ENOTDIR || e == ELOOP ? TREE_PROBE_ABSENT : TREE_PROBE_UNKNOWN;
}

int tree_probe_watch_fd(struct tree *s, int fd, const struct tree_node *parent, const char *name, size_t len,
                uint32_t mask)
{
    if (!s->no_proc) {
        char p[40];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        /* The magic link must be followed: it is the directory itself (even
         * one deleted since it was opened). */
        return inotify_add_watch(s->fd, p, mask & ~(uint32_t)IN_DONT_FOLLOW);
    }
    buf_reset(&s->path);
    if (tree_model_path(&s->t, parent, name, len, &s->path) < 0 || !buf_cstr(&s->path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return inotify_add_watch(s->fd, s->path.data, mask);
}
