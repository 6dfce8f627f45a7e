/*
 * fsmove.c - `fs move SRC DST [--overwrite]`: rename(2), and across
 * filesystems a copy then a removal, as mv does.
 *
 * DST is the new name (mv -T): a directory at DST is replaced (when empty,
 * with --overwrite), never moved into. Without --overwrite an existing DST is
 * refused atomically with renameat2(RENAME_NOREPLACE) where the filesystem
 * has it. Across filesystems the copy is built under a temporary name beside
 * DST and renamed into place only when complete, so DST never holds half a
 * tree; SRC is removed only after that. Copies keep mode, owner (as root),
 * and times; hard links become separate files.
 */
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif
/* Two fds per level: a tree deeper than this is refused rather than
 * risking the fd limit in the middle of a copy. */
#define COPY_MAX_DEPTH 128

/* rename without replacing; -1/errno. Falls back to a check-then-rename on
 * filesystems (or kernels) without RENAME_NOREPLACE. */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
    struct stat st;
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

static int copy_data(int in, int out)
{
    static char buf[128 * 1024];
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

struct copy_err {
    int e;
    char *path; /* malloc'd */
};

static int fail_at(struct copy_err *ce, int e, const char *path)
{
    ce->e = e;
    ce->path = strdup(path);
    return -1;
}

static int copy_dir_contents(int sfd, int dfd, const char *spath, int depth, struct copy_err *ce);

/* Copy the entry sname of sfd (already lstat'ed into st) to dname of dfd. */
static int copy_entry(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                      const char *spath, int depth, struct copy_err *ce)
{
    if (S_ISREG(st->st_mode)) {
        int in = openat(sfd, sname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (in < 0) return fail_at(ce, errno, spath);
        int out = openat(dfd, dname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out < 0) {
            close(in);
            return fail_at(ce, errno, spath);
        }
        int r = copy_data(in, out);
        if (r == 0) r = copy_meta_fd(out, st);
        int e = errno;
        close(in);
        if (close(out) < 0 && r == 0) {
            r = -1;
            e = errno;
        }
        return r < 0 ? fail_at(ce, e, spath) : 0;
    }
    if (S_ISDIR(st->st_mode)) {
        if (depth >= COPY_MAX_DEPTH) return fail_at(ce, ELOOP, spath);
        if (mkdirat(dfd, dname, 0700) < 0) return fail_at(ce, errno, spath);
        int in = openat(sfd, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0) return fail_at(ce, errno, spath);
        int out = openat(dfd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (out < 0) {
            close(in);
            return fail_at(ce, errno, spath);
        }
        int r = copy_dir_contents(in, out, spath, depth + 1, ce);
        if (r == 0 && copy_meta_fd(out, st) < 0) r = fail_at(ce, errno, spath);
        close(in);
        close(out);
        return r;
    }
    if (S_ISLNK(st->st_mode)) {
        size_t tlen;
        char *t = fs_readlink(sfd, sname, &tlen);
        if (!t) return fail_at(ce, errno, spath);
        char *tz = realloc(t, tlen + 1);
        if (!tz) {
            free(t);
            return fail_at(ce, ENOMEM, spath);
        }
        tz[tlen] = '\0';
        int r = symlinkat(tz, dfd, dname);
        free(tz);
        if (r < 0) return fail_at(ce, errno, spath);
        if (geteuid() == 0) fchownat(dfd, dname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        utimensat(dfd, dname, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
    }
    /* FIFO, socket, device: recreate the node itself. */
    if (mknodat(dfd, dname, st->st_mode, st->st_rdev) < 0) return fail_at(ce, errno, spath);
    if (geteuid() == 0) fchownat(dfd, dname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
    fchmodat(dfd, dname, st->st_mode & 07777, 0);
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    utimensat(dfd, dname, ts, AT_SYMLINK_NOFOLLOW);
    return 0;
}

static int copy_dir_contents(int sfd, int dfd, const char *spath, int depth, struct copy_err *ce)
{
    int lfd = dup(sfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0) close(lfd);
        return fail_at(ce, errno, spath);
    }
    int r = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) r = fail_at(ce, errno, spath);
            break;
        }
        const char *nm = de->d_name;
        if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2]))) continue;
        char *cpath = fs_join(spath, nm);
        if (!cpath) {
            r = fail_at(ce, ENOMEM, spath);
            break;
        }
        struct stat st;
        if (fstatat(sfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT) {
                free(cpath);
                continue;
            }
            r = fail_at(ce, errno, cpath);
        } else {
            r = copy_entry(sfd, nm, dfd, nm, &st, cpath, depth, ce);
        }
        free(cpath);
        if (r < 0) break;
    }
    closedir(d);
    return r;
}

/* The reason rename(2) would refuse to put src over dst, as an errno, or 0. */
static int replace_check(const struct stat *src, const char *dst)
{
    struct stat dt;
    if (lstat(dst, &dt) < 0) return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(src->st_mode) && !S_ISDIR(dt.st_mode)) return ENOTDIR;
    if (!S_ISDIR(src->st_mode) && S_ISDIR(dt.st_mode)) return EISDIR;
    if (S_ISDIR(dt.st_mode) && rmdir(dst) < 0 && errno != ENOENT) return errno;
    return 0;
}

static int move_across(const char *src, const char *dst, const struct stat *st, int overwrite)
{
    struct stat dt;
    if (!overwrite && lstat(dst, &dt) == 0) return fs_fail("move", EEXIST, NULL, dst);
    if (overwrite) {
        int e = replace_check(st, dst);
        if (e) return fs_fail("move", e, NULL, dst);
    }
    /* A temporary name beside DST: ".NAME.sbx-<pid>-<n>". */
    char tmp[PATH_MAX + 64];
    const char *slash = strrchr(dst, '/');
    size_t dirlen = slash ? (size_t)(slash - dst) + 1 : 0;
    size_t blen = strlen(dst + dirlen);
    if (blen > 200) blen = 200;
    if (dirlen + blen + 40 >= sizeof tmp) return fs_fail("move", ENAMETOOLONG, NULL, dst);
    memcpy(tmp, dst, dirlen);

    struct copy_err ce = {0, NULL};
    int r = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(tmp + dirlen, sizeof tmp - dirlen, ".%.*s.sbx-%d-%lx", (int)blen, dst + dirlen,
                 (int)getpid(), (unsigned long)(now.tv_nsec ^ attempt));
        free(ce.path);
        ce.path = NULL;
        const char *sname = src;
        r = copy_entry(AT_FDCWD, sname, AT_FDCWD, tmp, st, src, 0, &ce);
        if (r == 0 || ce.e != EEXIST || strcmp(ce.path, src) != 0) break;
    }
    if (r == 0) {
        if (overwrite ? rename(tmp, dst) : rename_noreplace(tmp, dst)) {
            ce.e = errno;
            free(ce.path);
            ce.path = strdup(dst);
            r = -1;
        }
    }
    if (r < 0) {
        /* Leave no half copy behind. */
        char *failed = NULL;
        if (S_ISDIR(st->st_mode)) {
            if (fs_remove_tree(AT_FDCWD, tmp, tmp, &failed) && errno != ENOENT)
                log_warn("fs move: cannot clean up %s", tmp);
        } else {
            unlink(tmp);
        }
        free(failed);
        int rc = fs_fail("move", ce.e ? ce.e : ENOMEM, NULL, ce.path ? ce.path : src);
        free(ce.path);
        return rc;
    }
    free(ce.path);
    /* The copy is in place; now the original goes. */
    if (S_ISDIR(st->st_mode)) {
        char *failed = NULL;
        int e = fs_remove_tree(AT_FDCWD, src, src, &failed);
        if (e) {
            int rc = fs_fail("move", e, "Copied, but the source could not be removed", failed ? failed : src);
            free(failed);
            return rc;
        }
    } else if (unlink(src) < 0) {
        return fs_fail("move", errno, "Copied, but the source could not be removed", src);
    }
    return 0;
}

int fs_op_move(const char *src, const char *dst, int overwrite)
{
    struct stat st, root;
    if (lstat(src, &st) < 0) return fs_fail("move", errno, NULL, src);
    if (S_ISDIR(st.st_mode) && stat("/", &root) == 0 && st.st_dev == root.st_dev &&
        st.st_ino == root.st_ino)
        return fs_fail("move", EBUSY, "Refusing to move /", src);
    int r = overwrite ? rename(src, dst) : rename_noreplace(src, dst);
    if (r < 0) {
        int e = errno;
        if (e != EXDEV) {
            /* Errors about the destination name it; the rest the source. */
            int at_dst = e == EEXIST || e == ENOTEMPTY || e == EISDIR || e == ENOTDIR || e == ENOENT;
            return fs_fail("move", e, NULL, at_dst ? dst : src);
        }
        int rc = move_across(src, dst, &st, overwrite);
        if (rc) return rc;
    }
    return fsout_ok();
}
