/*
 * remove.c - removing an entry, and the tree removal move reuses.
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
#include "agent/files/files_priv.h"

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

/* One directory of the walk. */
struct frame {
    DIR *d;     /* when set, owns fd */
    int fd;     /* -1 while closed to save fds */
    dev_t dev;
    ino_t ino;
    char *name; /* in the parent (NULL for the root of the walk) */
};

struct walk {
    struct frame *st; /* st[0] the root of the walk, st[n - 1] the directory being emptied */
    size_t n, cap;
    int dirfd;         /* where the root is, by name */
    const char *name;
    const char *shown; /* the root's name in errors */
    int e;             /* the failure: an errno value ... */
    const char *leaf;  /* ... at this entry of the top directory (NULL: the directory) */
};

static void frame_close(struct frame *f)
{
    if (f->d) closedir(f->d);
    else if (f->fd >= 0) close(f->fd);
    f->d = NULL;
    f->fd = -1;
}

/* shown/name1/name2/.../leaf: the path of a failure. */
static char *tree_path(const struct walk *w)
{
    size_t len = strlen(w->shown) + 2 + (w->leaf ? strlen(w->leaf) : 0);
    for (size_t i = 1; i < w->n; i++) len += strlen(w->st[i].name) + 1;
    char *p = malloc(len);
    if (!p) return NULL;
    strcpy(p, w->shown);
    for (size_t i = 1; i < w->n; i++) {
        strcat(p, "/");
        strcat(p, w->st[i].name);
    }
    if (w->leaf) {
        strcat(p, "/");
        strcat(p, w->leaf);
    }
    return p;
}

static int walk_fail(struct walk *w, int e, const char *leaf)
{
    w->e = e;
    w->leaf = leaf;
    return -1;
}

/* Open the root. Returns 0 to walk it, 1 when it was no directory and is
 * removed already, -1 on failure. */
static int walk_open_root(struct walk *w)
{
    int fd = openat(w->dirfd, w->name, FILES_DIR_FLAGS);
    if (fd < 0) {
        int e = errno;
        if (e != ENOTDIR && e != ELOOP) return walk_fail(w, e, NULL);
        /* Not a directory (any more): it is a single entry. */
        return unlinkat(w->dirfd, w->name, 0) == 0 ? 1 : walk_fail(w, errno, NULL);
    }
    struct stat sb;
    int e = fstat(fd, &sb) < 0 ? errno : files_is_root(&sb) ? EBUSY : 0;
    if (!e && !(w->st = malloc(16 * sizeof *w->st))) e = ENOMEM;
    if (e) {
        close(fd);
        return walk_fail(w, e, NULL);
    }
    w->cap = 16;
    w->st[w->n++] = (struct frame){NULL, fd, sb.st_dev, sb.st_ino, NULL};
    return 0;
}

/* Enter the subdirectory nm, open as cfd (taken). */
static int walk_push(struct walk *w, int cfd, const char *nm)
{
    if (w->n >= MAX_DEPTH) {
        close(cfd);
        return walk_fail(w, ELOOP, nm);
    }
    if (w->n == w->cap) {
        struct frame *ns = realloc(w->st, w->cap * 2 * sizeof *ns);
        if (!ns) {
            close(cfd);
            return walk_fail(w, ENOMEM, NULL);
        }
        w->st = ns;
        w->cap *= 2;
    }
    struct stat sb;
    char *cname = strdup(nm);
    int e = !cname ? ENOMEM : fstat(cfd, &sb) < 0 ? errno : files_is_root(&sb) ? EBUSY : 0;
    if (e) {
        free(cname);
        close(cfd);
        return walk_fail(w, e, nm);
    }
    w->st[w->n++] = (struct frame){NULL, cfd, sb.st_dev, sb.st_ino, cname};
    if (w->n > KEEP_OPEN) frame_close(&w->st[w->n - 1 - KEEP_OPEN]);
    return 0;
}

/* One entry of the top directory: descend into a directory, unlink the rest. */
static int walk_entry(struct walk *w, const struct dirent *de)
{
    int fd = w->st[w->n - 1].fd;
    const char *nm = de->d_name;
    int is_dir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
        struct stat sb;
        if (fstatat(fd, nm, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            return errno == ENOENT ? 0 : walk_fail(w, errno, nm);
        is_dir = S_ISDIR(sb.st_mode);
    }
    if (is_dir) {
        int cfd = openat(fd, nm, FILES_DIR_FLAGS);
        if (cfd >= 0) return walk_push(w, cfd, nm);
        if (errno == ENOENT) return 0;
        if (errno != ENOTDIR && errno != ELOOP) return walk_fail(w, errno, nm);
        /* Replaced by a non-directory since readdir: unlink it. */
    }
    if (unlinkat(fd, nm, 0) < 0 && errno != ENOENT) return walk_fail(w, errno, nm);
    return 0;
}

/* The parent of the top directory, re-entered through ".." if its fd was
 * closed: it must be the very directory we left. */
static int walk_reopen_parent(struct walk *w)
{
    struct frame *top = &w->st[w->n - 1], *parent = &w->st[w->n - 2];
    if (parent->fd >= 0) return 0;
    struct stat sb;
    int pfd = openat(top->fd, "..", FILES_DIR_FLAGS);
    if (pfd < 0 || fstat(pfd, &sb) < 0) {
        int e = errno;
        if (pfd >= 0) close(pfd);
        return walk_fail(w, e, NULL);
    }
    if (sb.st_dev != parent->dev || sb.st_ino != parent->ino) {
        /* Moved while we were inside: its parent is not ours now. */
        close(pfd);
        return walk_fail(w, EBUSY, NULL);
    }
    parent->fd = pfd;
    return 0;
}

/* The top directory is empty now: remove it from its parent. */
static int walk_pop(struct walk *w)
{
    struct frame *top = &w->st[w->n - 1];
    if (w->n == 1) {
        frame_close(top);
        w->n = 0;
        if (unlinkat(w->dirfd, w->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            return walk_fail(w, errno, NULL);
        return 0;
    }
    if (walk_reopen_parent(w) < 0) return -1;
    frame_close(top);
    if (unlinkat(w->st[w->n - 2].fd, top->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return walk_fail(w, errno, NULL); /* the directory itself */
    free(top->name);
    w->n--;
    return 0;
}

/* The next entry of the top directory, or its removal once it is empty. */
static int walk_step(struct walk *w)
{
    struct frame *top = &w->st[w->n - 1];
    if (!top->d && !(top->d = fdopendir(top->fd))) return walk_fail(w, errno, NULL);
    errno = 0;
    struct dirent *de = readdir(top->d);
    if (de) return files_is_dots(de->d_name) ? 0 : walk_entry(w, de);
    if (errno) return walk_fail(w, errno, NULL);
    return walk_pop(w);
}

int files_remove_tree(int dirfd, const char *name, const char *shown, struct files_err *e)
{
    struct walk w = {NULL, 0, 0, dirfd, name, shown, 0, NULL};
    int r = walk_open_root(&w);
    while (r == 0 && w.n > 0) r = walk_step(&w);
    /* The path is built before the frames (and the leaf's DIR) go. */
    if (r < 0) {
        char *failed = tree_path(&w);
        if (failed) files_fail_take(e, w.e, failed);
        else files_fail(e, ENOMEM, shown);
    }
    for (size_t i = 0; i < w.n; i++) {
        frame_close(&w.st[i]);
        free(w.st[i].name);
    }
    free(w.st);
    return r < 0 ? -1 : 0;
}

int files_remove(const char *arg, int recursive, struct files_err *e)
{
    /* remove acts on the named entry itself: "link/" must name the symlink,
     * not the directory it points to (the kernel follows a final symlink
     * when the path ends in '/', O_NOFOLLOW or not). */
    char *path = files_strip_slashes(arg);
    if (!path) return files_fail(e, ENOMEM, arg);
    struct stat st;
    size_t nlen;
    const char *name = files_last_name(path, &nlen);
    int r = 0;
    if (!*path || lstat(path, &st) < 0)
        r = files_fail(e, *path ? errno : ENOENT, path);
    /* Never the root, by whatever name ("/", "//", "/tmp/..", a bind mount). */
    else if (S_ISDIR(st.st_mode) && files_is_root(&st))
        r = files_fail_msg(e, EBUSY, path, "Refusing to remove /");
    /* Nor "." or "..", as rm refuses them: their removal means something else. */
    else if ((nlen == 1 && name[0] == '.') || (nlen == 2 && name[0] == '.' && name[1] == '.'))
        r = files_fail_msg(e, EINVAL, path, "Refusing to remove '.' or '..'");
    else if (!S_ISDIR(st.st_mode))
        r = unlink(path) < 0 ? files_fail(e, errno, path) : 0;
    else if (!recursive)
        r = rmdir(path) < 0 ? files_fail(e, errno, path) : 0;
    else
        r = files_remove_tree(AT_FDCWD, path, path, e);
    free(path);
    return r;
}
