/*
 * copy.c - the copy behind a move across filesystems (see files_priv.h): one
 * entry of any type, a directory with everything under it, keeping mode,
 * owner (as root) and times; hard links become separate files.
 *
 * Every source entry is opened without following a symlink, relative to its
 * parent's fd, and every new entry is created exclusively (O_EXCL, mkdirat,
 * symlinkat, mknodat): nothing already there is ever written through. A file
 * is copied only if the fd opened is a regular file (fstat), whatever the
 * lstat before said.
 */
#include "agent/files/files_priv.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two fds per level: a tree deeper than this is refused rather than
 * risking the fd limit in the middle of a copy. */
#define COPY_MAX_DEPTH 128
#define COPY_CHUNK (128 * 1024)

static int copy_entry(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                      const char *spath, int depth, struct files_err *e);

static int copy_data(int in, int out)
{
    static char buf[COPY_CHUNK];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) return 0;
        if (io_write_all(out, buf, (size_t)r) < 0) return -1;
    }
}

/* Owner (best effort, as root), mode and times of st onto the new entry. */
static int copy_meta_fd(int fd, const struct stat *st)
{
    if (geteuid() == 0 && fchown(fd, st->st_uid, st->st_gid) < 0)
        log_debug("fs move: cannot keep an owner: %s", strerror(errno));
    if (fchmod(fd, st->st_mode & 07777) < 0) return -1;
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    return futimens(fd, ts);
}

/* Owner (best effort) and times of st onto dname of dfd, not followed. */
static void copy_meta_at(int dfd, const char *dname, const struct stat *st)
{
    if (geteuid() == 0) fchownat(dfd, dname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    utimensat(dfd, dname, ts, AT_SYMLINK_NOFOLLOW);
}

int files_copy_fd(int in, int dfd, const char *dname, const struct stat *st, const char *spath, struct files_err *e)
{
    /* What was opened, not what the lstat saw: the guest may have swapped a
     * device (endless zeros) or a FIFO (an empty copy) in between. */
    struct stat ist;
    if (fstat(in, &ist) < 0) return files_fail(e, errno, spath);
    if (!S_ISREG(ist.st_mode)) return files_fail(e, FILES_ENOTREG, spath);
    int out = openat(dfd, dname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0) return files_fail(e, errno, spath);
    int r = copy_data(in, out);
    if (r == 0) r = copy_meta_fd(out, st);
    int en = errno;
    if (close(out) < 0 && r == 0) {
        r = -1;
        en = errno;
    }
    return r < 0 ? files_fail(e, en, spath) : 0;
}

static int copy_file(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                     const char *spath, struct files_err *e)
{
    /* O_NONBLOCK: a FIFO swapped in cannot block the open. */
    int in = openat(sfd, sname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (in < 0) return files_fail(e, errno, spath);
    int r = files_copy_fd(in, dfd, dname, st, spath, e);
    close(in);
    return r;
}

/* Every entry of directory sfd into directory dfd. */
static int copy_dir_contents(int sfd, int dfd, const char *spath, int depth, struct files_err *e)
{
    int lfd = dup(sfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        int en = errno;
        if (lfd >= 0) close(lfd);
        return files_fail(e, en, spath);
    }
    int r = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) r = files_fail(e, errno, spath);
            break;
        }
        const char *nm = de->d_name;
        if (files_is_dots(nm)) continue;
        char *cpath = files_join(spath, nm);
        struct stat st;
        if (!cpath) r = files_fail(e, ENOMEM, spath);
        else if (fstatat(sfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
            r = errno == ENOENT ? 0 : files_fail(e, errno, cpath); /* vanished: not copied */
        else
            r = copy_entry(sfd, nm, dfd, nm, &st, cpath, depth, e);
        free(cpath);
        if (r < 0) break;
    }
    closedir(d);
    return r;
}

static int copy_dir(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                    const char *spath, int depth, struct files_err *e)
{
    if (depth >= COPY_MAX_DEPTH) return files_fail(e, ELOOP, spath);
    if (mkdirat(dfd, dname, 0700) < 0) return files_fail(e, errno, spath);
    int in = openat(sfd, sname, FILES_DIR_FLAGS);
    if (in < 0) return files_fail(e, errno, spath);
    int out = openat(dfd, dname, FILES_DIR_FLAGS);
    if (out < 0) {
        int en = errno;
        close(in);
        return files_fail(e, en, spath);
    }
    int r = copy_dir_contents(in, out, spath, depth + 1, e);
    if (r == 0 && copy_meta_fd(out, st) < 0) r = files_fail(e, errno, spath);
    close(in);
    close(out);
    return r;
}

static int copy_symlink(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                        const char *spath, struct files_err *e)
{
    size_t tlen;
    char *t = files_readlink(sfd, sname, &tlen);
    if (!t) return files_fail(e, errno, spath);
    char *tz = realloc(t, tlen + 1);
    if (!tz) {
        free(t);
        return files_fail(e, ENOMEM, spath);
    }
    tz[tlen] = '\0';
    int r = symlinkat(tz, dfd, dname);
    int en = errno;
    free(tz);
    if (r < 0) return files_fail(e, en, spath);
    copy_meta_at(dfd, dname, st);
    return 0;
}

/* A FIFO, socket or device: the node itself is recreated. */
static int copy_node(int dfd, const char *dname, const struct stat *st, const char *spath,
                     struct files_err *e)
{
    if (mknodat(dfd, dname, st->st_mode, st->st_rdev) < 0) return files_fail(e, errno, spath);
    if (geteuid() == 0) fchownat(dfd, dname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
    fchmodat(dfd, dname, st->st_mode & 07777, 0);
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    utimensat(dfd, dname, ts, AT_SYMLINK_NOFOLLOW);
    return 0;
}

static int copy_entry(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                      const char *spath, int depth, struct files_err *e)
{
    if (S_ISREG(st->st_mode)) return copy_file(sfd, sname, dfd, dname, st, spath, e);
    if (S_ISDIR(st->st_mode)) return copy_dir(sfd, sname, dfd, dname, st, spath, depth, e);
    if (S_ISLNK(st->st_mode)) return copy_symlink(sfd, sname, dfd, dname, st, spath, e);
    return copy_node(dfd, dname, st, spath, e);
}

int files_copy_entry(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                  const char *spath, struct files_err *e)
{
    return copy_entry(sfd, sname, dfd, dname, st, spath, 0, e);
}
