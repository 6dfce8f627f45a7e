/*
 * move.c - moving an entry: rename(2), and across filesystems a copy then
 * a removal, as mv does (see files.h).
 *
 * DST is the new name (mv -T): a directory at DST is replaced (when empty,
 * with overwrite), never moved into. Without overwrite an existing DST is
 * refused atomically with renameat2(RENAME_NOREPLACE) where the filesystem
 * has it. Across filesystems the copy (copy.c) is built under a temporary
 * name beside DST and renamed into place only when complete, so DST never
 * holds half a tree; SRC is removed (remove.c) only after that.
 */
#include "agent/files/files_priv.h"
#include "agent/core/log.h"

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
#define TMP_MAX_LEN (PATH_MAX + 64)
/* Attempts at a free temporary name. */
#define TMP_TRIES 100

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

/* The reason rename(2) would refuse to put src over dst, as an errno, or 0.
 * An empty directory at dst is removed (rename would replace it). */
static int replace_check(const struct stat *src, const char *dst)
{
    struct stat dt;
    if (lstat(dst, &dt) < 0) return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(src->st_mode) && !S_ISDIR(dt.st_mode)) return ENOTDIR;
    if (!S_ISDIR(src->st_mode) && S_ISDIR(dt.st_mode)) return EISDIR;
    if (S_ISDIR(dt.st_mode) && rmdir(dst) < 0 && errno != ENOENT) return errno;
    return 0;
}

/* Copy src to a free temporary name: tmp holds ".NAME" beside dst (pre
 * bytes), to which ".sbx-<pid>-<n>" is added. */
static int copy_to_tmp(const char *src, const struct stat *st, char *tmp, int pre, struct files_err *e)
{
    int r = -1;
    for (int attempt = 0; attempt < TMP_TRIES; attempt++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(tmp + pre, TMP_MAX_LEN - (size_t)pre, ".sbx-%d-%lx", (int)getpid(),
                 (unsigned long)(now.tv_nsec ^ attempt));
        if (attempt) files_err_free(e);
        r = files_copy_entry(AT_FDCWD, src, AT_FDCWD, tmp, st, src, e);
        /* Only the temporary name itself being taken is worth another try. */
        if (r == 0 || e->errnum != EEXIST || !e->path || strcmp(e->path, src) != 0) break;
    }
    return r;
}

/* Leave no half copy behind. */
static void remove_tmp(const char *tmp, const struct stat *st)
{
    struct files_err e;
    if (!S_ISDIR(st->st_mode)) {
        unlink(tmp);
    } else if (files_remove_tree(AT_FDCWD, tmp, tmp, &e) < 0) {
        if (e.errnum != ENOENT) log_warn("fs move: cannot clean up %s", tmp);
        files_err_free(&e);
    }
}

/* The copy is in place; now the original goes. */
static int remove_src(const char *src, const struct stat *st, struct files_err *e)
{
    static const char msg[] = "Copied, but the source could not be removed";
    int r = S_ISDIR(st->st_mode) ? files_remove_tree(AT_FDCWD, src, src, e)
            : unlink(src) < 0   ? files_fail(e, errno, src)
                                : 0;
    if (r < 0) err_set(e->message, "%s", msg);
    return r;
}

static int move_across(const char *src, const char *dst, const struct stat *st, int overwrite,
                       struct files_err *e)
{
    struct stat dt;
    if (!overwrite && lstat(dst, &dt) == 0) return files_fail(e, EEXIST, dst);
    int en = overwrite ? replace_check(st, dst) : 0;
    if (en) return files_fail(e, en, dst);

    char tmp[TMP_MAX_LEN];
    int pre = files_tmp_prefix(tmp, sizeof tmp, dst, 40);
    if (pre < 0) return files_fail(e, ENAMETOOLONG, dst);
    if (copy_to_tmp(src, st, tmp, pre, e) < 0) {
        remove_tmp(tmp, st);
        return -1;
    }
    if (overwrite ? rename(tmp, dst) : rename_noreplace(tmp, dst)) {
        files_fail(e, errno, dst);
        remove_tmp(tmp, st);
        return -1;
    }
    return remove_src(src, st, e);
}

/* Both names without trailing slashes: "link/" names the symlink itself. */
static int move_stripped(const char *src, const char *dst, int overwrite, struct files_err *e)
{
    struct stat st;
    if (!*src) return files_fail(e, ENOENT, src);
    if (!*dst) return files_fail(e, ENOENT, dst);
    if (lstat(src, &st) < 0) return files_fail(e, errno, src);
    if (S_ISDIR(st.st_mode) && files_is_root(&st)) return files_fail_msg(e, EBUSY, src, "Refusing to move /");
    if ((overwrite ? rename(src, dst) : rename_noreplace(src, dst)) == 0) return 0;
    int en = errno;
    if (en == EXDEV) return move_across(src, dst, &st, overwrite, e);
    /* Errors about the destination name it; the rest the source. */
    int at_dst = en == EEXIST || en == ENOTEMPTY || en == EISDIR || en == ENOTDIR || en == ENOENT;
    return files_fail(e, en, at_dst ? dst : src);
}

int files_move(const char *src, const char *dst, int overwrite, struct files_err *e)
{
    char *s = files_strip_slashes(src), *d = files_strip_slashes(dst);
    int r = s && d ? move_stripped(s, d, overwrite, e) : files_fail(e, ENOMEM, src);
    free(s);
    free(d);
    return r;
}
