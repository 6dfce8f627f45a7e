/*
 * fsremove.c - `fs remove` and the tree removal `move` reuses.
 *
 * The tree walk is the dangerous part: the guest owns the tree and may
 * rearrange it while we walk. So every directory is entered with
 * openat(O_DIRECTORY | O_NOFOLLOW) relative to its parent's fd, and every
 * removal is an unlinkat relative to an fd we hold: a symlink is removed,
 * never followed, and a directory renamed away mid-walk is never reached
 * through a path. Only the KEEP_OPEN deepest levels hold an fd; a shallower
 * level is re-entered through "..", checked by device and inode to be the
 * very directory we left, and its listing restarted (everything listed
 * before is removed by then, since the first failure ends the walk). So a
 * tree a million levels deep costs a bounded number of fds.
 */
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
#include "agent/core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEEP_OPEN 32
/* Deeper than any tree a real workload makes; a bound on the frame stack. */
#define MAX_DEPTH 100000

struct frame {
    DIR *d;     /* when set, owns fd */
    int fd;     /* -1 while closed to save fds */
    dev_t dev;
    ino_t ino;
    char *name; /* in the parent (NULL for the root of the walk) */
};

static void frame_close(struct frame *f)
{
    if (f->d) closedir(f->d);
    else if (f->fd >= 0) close(f->fd);
    f->d = NULL;
    f->fd = -1;
}

/* shown/name1/name2/.../leaf for an error report. */
static char *tree_path(const char *shown, struct frame *st, size_t n, const char *leaf)
{
    size_t len = strlen(shown) + 2 + (leaf ? strlen(leaf) : 0);
    for (size_t i = 1; i < n; i++) len += strlen(st[i].name) + 1;
    char *p = malloc(len);
    if (!p) return NULL;
    strcpy(p, shown);
    for (size_t i = 1; i < n; i++) {
        strcat(p, "/");
        strcat(p, st[i].name);
    }
    if (leaf) {
        strcat(p, "/");
        strcat(p, leaf);
    }
    return p;
}

/* The root directory, compared by device and inode with every directory the
 * walk opens: a check on the path before the walk could be raced (the guest
 * swaps a directory for a symlink to / in between), a check on the open fd
 * cannot. A bind mount of / inside the tree is caught the same way. */
static int is_root(const struct stat *sb)
{
    struct stat root;
    return stat("/", &root) == 0 && sb->st_dev == root.st_dev && sb->st_ino == root.st_ino;
}

int fs_remove_tree(int dirfd, const char *name, const char *shown, char **failed)
{
    struct frame *st = NULL;
    size_t n = 0, cap = 0;
    int e = 0;
    const char *leaf = NULL;
    *failed = NULL;

    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        /* Not a directory (any more): it is a single entry. */
        if ((e == ENOTDIR || e == ELOOP) && unlinkat(dirfd, name, 0) == 0) return 0;
        if (e == ENOTDIR || e == ELOOP) e = errno;
        *failed = strdup(shown);
        return e;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || is_root(&sb) || !(st = malloc(16 * sizeof *st))) {
        e = errno ? errno : ENOMEM;
        if (is_root(&sb)) e = EBUSY;
        close(fd);
        *failed = strdup(shown);
        return e;
    }
    cap = 16;
    st[n++] = (struct frame){NULL, fd, sb.st_dev, sb.st_ino, NULL};

    while (n > 0) {
        struct frame *top = &st[n - 1];
        if (!top->d && !(top->d = fdopendir(top->fd))) {
            e = errno;
            break;
        }
        errno = 0;
        struct dirent *de = readdir(top->d);
        if (de) {
            const char *nm = de->d_name;
            if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2]))) continue;
            int is_dir = de->d_type == DT_DIR;
            if (de->d_type == DT_UNKNOWN) {
                if (fstatat(top->fd, nm, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
                    if (errno == ENOENT) continue;
                    e = errno;
                    leaf = nm;
                    break;
                }
                is_dir = S_ISDIR(sb.st_mode);
            }
            if (is_dir) {
                int cfd = openat(top->fd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0 && errno == ENOENT) continue;
                if (cfd < 0 && errno != ENOTDIR && errno != ELOOP) {
                    e = errno;
                    leaf = nm;
                    break;
                }
                if (cfd >= 0) {
                    if (n >= MAX_DEPTH) {
                        close(cfd);
                        e = ELOOP;
                        leaf = nm;
                        break;
                    }
                    if (n == cap) {
                        struct frame *ns = realloc(st, cap * 2 * sizeof *st);
                        if (!ns) {
                            close(cfd);
                            e = ENOMEM;
                            break;
                        }
                        st = ns;
                        cap *= 2;
                        top = &st[n - 1];
                    }
                    char *cname = strdup(nm);
                    if (!cname || fstat(cfd, &sb) < 0 || is_root(&sb)) {
                        e = !cname ? ENOMEM : is_root(&sb) ? EBUSY : errno;
                        free(cname);
                        close(cfd);
                        leaf = nm;
                        break;
                    }
                    st[n++] = (struct frame){NULL, cfd, sb.st_dev, sb.st_ino, cname};
                    if (n > KEEP_OPEN) frame_close(&st[n - 1 - KEEP_OPEN]);
                    continue;
                }
                /* Replaced by a non-directory since readdir: unlink it. */
            }
            if (unlinkat(top->fd, nm, 0) < 0 && errno != ENOENT) {
                e = errno;
                leaf = nm;
                break;
            }
            continue;
        }
        if (errno) {
            e = errno;
            break;
        }
        /* This directory is empty now: remove it from its parent. */
        if (n == 1) {
            frame_close(top);
            n = 0;
            if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                e = errno;
                *failed = strdup(shown);
            }
            break;
        }
        struct frame *parent = &st[n - 2];
        if (parent->fd < 0) {
            int pfd = openat(top->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (pfd < 0 || fstat(pfd, &sb) < 0) {
                e = errno;
                if (pfd >= 0) close(pfd);
                break;
            }
            if (sb.st_dev != parent->dev || sb.st_ino != parent->ino) {
                /* Moved while we were inside: its parent is not ours now. */
                close(pfd);
                e = EBUSY;
                break;
            }
            parent->fd = pfd;
        }
        frame_close(top);
        if (unlinkat(parent->fd, top->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
            e = errno;
            leaf = NULL;
            /* Report the directory itself. */
            *failed = tree_path(shown, st, n, NULL);
            break;
        }
        free(top->name);
        n--;
    }
    if (e && !*failed) *failed = tree_path(shown, st, n, leaf);
    for (size_t i = 0; i < n; i++) {
        frame_close(&st[i]);
        free(st[i].name);
    }
    free(st);
    if (e && !*failed) e = ENOMEM;
    return e;
}

int fs_op_remove(const char *path, int recursive)
{
    struct stat st, root;
    if (lstat(path, &st) < 0) return fs_fail("remove", errno, NULL, path);

    /* Never the root, by whatever name ("/", "//", "/tmp/..", a bind mount). */
    if (S_ISDIR(st.st_mode) && stat("/", &root) == 0 && st.st_dev == root.st_dev &&
        st.st_ino == root.st_ino)
        return fs_fail("remove", EBUSY, "Refusing to remove /", path);
    /* Nor "." or "..", as rm refuses them: their removal means something else. */
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    if ((end - start == 1 && path[start] == '.') ||
        (end - start == 2 && path[start] == '.' && path[start + 1] == '.'))
        return fs_fail("remove", EINVAL, "Refusing to remove '.' or '..'", path);

    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) < 0) return fs_fail("remove", errno, NULL, path);
    } else if (!recursive) {
        if (rmdir(path) < 0) return fs_fail("remove", errno, NULL, path);
    } else {
        char *failed = NULL;
        int e = fs_remove_tree(AT_FDCWD, path, path, &failed);
        if (e) {
            int rc = fs_fail("remove", e, NULL, failed ? failed : path);
            free(failed);
            return rc;
        }
    }
    return fsout_ok();
}
