/*
 * fswrite.c - writing a file from the caller's fd, and creating a directory
 * (see files.h).
 *
 * write replaces a file atomically: the input goes to a temporary file in
 * the same directory (O_CLOEXEC, mode 0600 while being filled), which is
 * fsynced and then renamed over the target, so a reader sees the old file or
 * the new one, never a part. Any failure (input unreadable, disk full, with
 * guard_signals a signal that ends us) unlinks the temporary file and leaves
 * the old file untouched. append writes in place instead (there is nothing
 * atomic to promise).
 */
#include "agent/files/fsint.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (128 * 1024)

/* The temporary file a signal handler must remove. Fixed storage: the
 * handler may use nothing that allocates. */
static char tmp_path[PATH_MAX + 64];

static void on_fatal_signal(int sig)
{
    if (tmp_path[0]) unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_signals(const struct fs_write_opts *o, int on)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXFSZ};
    if (!o->guard_signals) return;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on ? on_fatal_signal : SIG_DFL);
}

/* in to fd until EOF. Returns the byte count, or -1 with errno set and
 * *read_side saying whether in (1) or the file (0) failed. */
static long long copy_in(int in, int fd, int *read_side)
{
    static char buf[COPY_CHUNK];
    long long total = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {in, POLLIN, 0};
                poll(&pf, 1, -1);
                continue;
            }
            *read_side = 1;
            return -1;
        }
        if (r == 0) return total;
        if (io_write_all(fd, buf, (size_t)r) < 0) {
            *read_side = 0;
            return -1;
        }
        total += r;
    }
}

/* The file a write replaces. */
struct target {
    const char *path;  /* what a symlink at the path points to, else the path */
    char *resolved;    /* malloc'd, when path is it */
    struct stat st;
    int exists;
};

/* Write through a symlink as `> path` would: replace what it points to, not
 * the link. A dangling link is replaced itself. */
static int find_target(const char *path, struct target *t, struct fs_err *e)
{
    t->path = path;
    t->resolved = NULL;
    if (lstat(path, &t->st) == 0 && S_ISLNK(t->st.st_mode) && (t->resolved = realpath(path, NULL)))
        t->path = t->resolved;
    t->exists = stat(t->path, &t->st) == 0;
    if (!t->exists && errno != ENOENT) return fs_fail(e, errno, path);
    if (t->exists && S_ISDIR(t->st.st_mode)) return fs_fail(e, EISDIR, path);
    if (t->exists && !S_ISREG(t->st.st_mode)) return fs_fail(e, FS_ENOTREG, path);
    return 0;
}

static int write_append(const char *path, const struct target *t, int in_fd,
                        const struct fs_write_opts *o, long long *bytes, struct fs_err *e)
{
    /* O_NONBLOCK: a FIFO put there since our stat cannot block the open. */
    int fd = open(t->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  o->has_mode ? o->mode : 0666);
    if (fd < 0) return fs_fail(e, errno, path);
    struct stat st;
    int r = 0, read_side = 0;
    if (fstat(fd, &st) < 0) {
        r = fs_fail(e, errno, path);
    } else if (!S_ISREG(st.st_mode)) {
        r = fs_fail(e, FS_ENOTREG, path);
    } else {
        io_set_nonblock(fd, 0);
        *bytes = copy_in(in_fd, fd, &read_side);
        if (*bytes < 0) r = read_side ? fs_fail_fd(e, errno) : fs_fail(e, errno, path);
        else if (o->has_mode && fchmod(fd, o->mode) < 0) r = fs_fail(e, errno, path);
    }
    close(fd);
    return r;
}

/* The mode of the new file: the one asked for, the replaced file's, or what
 * a new file gets under the umask. */
static mode_t new_mode(const struct target *t, const struct fs_write_opts *o)
{
    if (o->has_mode) return o->mode;
    if (t->exists) return t->st.st_mode & 07777;
    mode_t um = umask(0);
    umask(um);
    return 0666 & ~um;
}

/* fs_write_prepared's hook, or none. */
struct prepare {
    fs_prepare_fn fn;
    void *ctx;
};

/* Fill the temporary file fd (closed here) from in_fd. Returns 0, or an
 * errno value with *read_side saying whether in_fd failed. */
static int fill_tmp(int fd, int in_fd, const char *path, const struct target *t,
                    const struct fs_write_opts *o, const struct prepare *pp, long long *bytes,
                    int *read_side)
{
    int e = 0;
    *bytes = copy_in(in_fd, fd, read_side);
    if (*bytes < 0) e = errno;
    if (!e && pp->fn) e = pp->fn(pp->ctx, fd, t->exists ? t->path : NULL);
    /* Replacing someone's file as root keeps it theirs. */
    if (!e && t->exists && geteuid() == 0 && fchown(fd, t->st.st_uid, t->st.st_gid) < 0)
        log_debug("fs write: cannot keep the owner of %s: %s", path, strerror(errno));
    if (!e && (fchmod(fd, new_mode(t, o)) < 0 || fsync(fd) < 0)) e = errno;
    if (close(fd) < 0 && !e) e = errno;
    return e;
}

static int write_atomic(const char *path, const struct target *t, int in_fd,
                        const struct fs_write_opts *o, const struct prepare *pp, long long *bytes,
                        struct fs_err *e)
{
    /* ".NAME.sbx-XXXXXX" beside the target, so the rename stays within one
     * filesystem; the name part is cut short enough to stay under NAME_MAX. */
    int pre = fs_tmp_prefix(tmp_path, sizeof tmp_path, t->path, 16);
    if (pre < 0) return fs_fail(e, ENAMETOOLONG, path);
    memcpy(tmp_path + pre, ".sbx-XXXXXX", sizeof ".sbx-XXXXXX");

    guard_signals(o, 1);
    int fd = mkostemp(tmp_path, O_CLOEXEC);
    int en = fd < 0 ? errno : 0, read_side = 0;
    if (fd >= 0) {
        en = fill_tmp(fd, in_fd, path, t, o, pp, bytes, &read_side);
        if (!en && rename(tmp_path, t->path) < 0) en = errno;
        if (en) unlink(tmp_path);
    }
    tmp_path[0] = '\0';
    guard_signals(o, 0);
    if (!en) return 0;
    return read_side ? fs_fail_fd(e, en) : fs_fail(e, en, path);
}

static int write_file(const char *path, int in_fd, const struct fs_write_opts *o,
                      const struct prepare *pp, long long *bytes, struct fs_err *e)
{
    if (!*path) return fs_fail(e, ENOENT, path);
    if (o->parents && fs_make_parents(path) < 0) return fs_fail(e, errno, path);
    struct target t;
    int r = find_target(path, &t, e);
    if (r == 0) r = o->append ? write_append(path, &t, in_fd, o, bytes, e)
                              : write_atomic(path, &t, in_fd, o, pp, bytes, e);
    free(t.resolved);
    return r;
}

int fs_write(const char *path, int in_fd, const struct fs_write_opts *o, long long *bytes,
             struct fs_err *e)
{
    static const struct prepare none;
    return write_file(path, in_fd, o, &none, bytes, e);
}

int fs_write_prepared(const char *path, int in_fd, const struct fs_write_opts *o,
                      fs_prepare_fn prepare, void *ctx, long long *bytes, struct fs_err *e)
{
    struct fs_write_opts atomic = *o;
    struct prepare pp = {prepare, ctx};
    atomic.append = 0;
    return write_file(path, in_fd, &atomic, &pp, bytes, e);
}

/* mkdir, with the missing parents; an existing directory is not created. */
static int make_dir(const char *path, int parents, mode_t mode, int *created)
{
    *created = 1;
    if (mkdir(path, mode) == 0) return 0;
    int e = errno;
    if (e == ENOENT && parents) {
        if (fs_make_parents(path) < 0) return errno;
        e = mkdir(path, mode) < 0 ? errno : 0;
    }
    struct stat st;
    /* Already a directory: nothing to do, and says so. */
    if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        *created = 0;
        e = 0;
    }
    return e;
}

int fs_mkdir(const char *path, int parents, int has_mode, mode_t mode, int *created, struct fs_err *e)
{
    if (!*path) return fs_fail(e, ENOENT, path);
    int en = make_dir(path, parents, has_mode ? mode : 0777, created);
    if (en) return fs_fail(e, en, path);
    if (!*created || !has_mode) return 0;
    /* The mode is exact, as mkdir -m: the umask does not cut it. Through an
     * fd opened without following a symlink: the guest may have swapped the
     * new directory for a link to /etc/shadow since mkdir, and chmod(path)
     * would follow it. */
    int dfd = open(path, FS_DIR_FLAGS);
    if (dfd < 0) return fs_fail(e, errno, path);
    int r = fchmod(dfd, mode);
    en = errno;
    close(dfd);
    return r < 0 ? fs_fail(e, en, path) : 0;
}
