/*
 * compose.c - several files into one (see files.h, files_compose): the
 * sources checked, then written in order into the destination by write.c's
 * atomic write (its fill hook), then removed.
 *
 * No byte goes through the process where the kernel can avoid it: the
 * first source is cloned into the empty temporary file (FICLONE: btrfs,
 * xfs share the extents), every other byte goes by copy_file_range(2)
 * (within one filesystem the kernel copies, and reflinks where it can).
 * Whatever it does not copy (another filesystem, an old kernel, a
 * filesystem that copies nothing) goes by read and write.
 */
#include "agent/files/files_priv.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FICLONE
#define FICLONE _IOW(0x94, 9, int)
#endif
/* copy_file_range per call; the read/write fallback's buffer. */
#define RANGE_CHUNK (1u << 30)
#define COPY_CHUNK (128 * 1024)

struct compose {
    const char *const *srcs;
    size_t n;
    const struct files_write_hooks *caller;
    struct files_err err; /* a source's failure, when src_failed */
    int src_failed;
};

/* From *in of src to *out of dst until src's end, by read and write. */
static int copy_rest(int src, off_t *in, int dst, off_t *out)
{
    static char buf[COPY_CHUNK];
    if (lseek(dst, *out, SEEK_SET) < 0) return errno;
    for (;;) {
        ssize_t r = pread(src, buf, sizeof buf, *in);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return 0;
        if (io_write_all(dst, buf, (size_t)r) < 0) return errno;
        *in += r, *out += r;
    }
}

/* All of src at *at of dst, *at moved past it. Returns 0 or an errno value. */
static int append(int dst, int src, off_t *at)
{
    off_t in = 0;
    struct stat st;
    if (*at == 0 && ioctl(dst, FICLONE, src) == 0) {
        if (fstat(dst, &st) < 0) return errno;
        *at = st.st_size;
        return 0;
    }
    for (;;) {
        ssize_t k = copy_file_range(src, &in, dst, at, RANGE_CHUNK, 0);
        if (k > 0) continue;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP &&
            errno != ENOTSUP && errno != EBADF && errno != EPERM)
            return errno; /* ENOSPC, EDQUOT, EIO: the write fails */
        break; /* its end, or what the kernel does not copy: the rest below */
    }
    return copy_rest(src, &in, dst, at);
}

/* write.c's fill: the sources in order. */
static int fill(void *ctx, int fd, long long *bytes)
{
    struct compose *c = ctx;
    off_t at = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct files_reader f;
        if (files_read_open(c->srcs[i], &f, &c->err) < 0) {
            c->src_failed = 1;
            return c->err.errnum;
        }
        int en = append(fd, f.fd, &at);
        files_read_close(&f);
        if (en) return en;
    }
    *bytes = (long long)at;
    return 0;
}

static int prepare(void *ctx, int fd, const char *replaced)
{
    const struct compose *c = ctx;
    return c->caller->prepare ? c->caller->prepare(c->caller->ctx, fd, replaced) : 0;
}

static int named(void *ctx, const char *tmp)
{
    const struct compose *c = ctx;
    return c->caller->named ? c->caller->named(c->caller->ctx, tmp) : 0;
}

/* Each source before anything is made: not dst, there, a regular file. */
static int check_sources(const char *const *srcs, size_t n, const char *dst, struct files_err *e)
{
    struct stat st;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(srcs[i], dst)) return files_fail_msg(e, EINVAL, srcs[i], "a source is the destination");
        if (!*srcs[i]) return files_fail(e, ENOENT, srcs[i]);
        if (stat(srcs[i], &st) < 0) return files_fail(e, errno, srcs[i]);
        if (!S_ISREG(st.st_mode)) return files_fail(e, S_ISDIR(st.st_mode) ? EISDIR : FILES_ENOTREG, srcs[i]);
    }
    return 0;
}

int files_compose(const char *const *srcs, size_t n, const char *dst, const struct files_write_hooks *h,
                  long long *bytes, struct files_err *e)
{
    if (check_sources(srcs, n, dst, e) < 0) return -1;
    struct compose c = {srcs, n, h, {0}, 0};
    struct files_write_hooks mine = {prepare, named, &c, fill};
    struct files_write_opts o = {.parents = 1, .replace_link = 1};
    if (files_write_hooked(dst, -1, &o, &mine, bytes, e) < 0) {
        if (c.src_failed) { /* the source's own failure, naming it */
            files_err_free(e);
            *e = c.err;
        }
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (unlink(srcs[i]) < 0 && errno != ENOENT)
            log_warn("compose: %s is composed into %s but cannot be removed: %s", srcs[i], dst, strerror(errno));
    return 0;
}
