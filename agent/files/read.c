/*
 * read.c - reading a regular file's bytes to the caller's fd (see files.h).
 *
 * Hostile input is the point here: the path may name a FIFO that never gets
 * a writer, a device that streams forever, a /proc file that reports size 0
 * and then produces data, or a file that grows while we read. So: stat before
 * open (no device is ever opened), open O_NONBLOCK (a FIFO swapped in after
 * the stat cannot block the open), fstat the opened fd (what we check is
 * what we read), and the caller copies at most the size seen then.
 */
#include "agent/files/files_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define PROC_MAGIC 0x9fa0
/* sendfile per call; the pread fallback's buffer. */
#define SENDFILE_CHUNK (1024 * 1024)
#define COPY_CHUNK (128 * 1024)

/* Why st is not readable as a file: EISDIR, FILES_ENOTREG, or 0. */
static int refusal(const struct stat *st)
{
    return S_ISDIR(st->st_mode) ? EISDIR : S_ISREG(st->st_mode) ? 0 : FILES_ENOTREG;
}

int files_read_open(const char *path, struct files_reader *f, struct files_err *e)
{
    struct stat st;
    int en;
    if (!*path) return files_fail(e, ENOENT, path);
    if (stat(path, &st) < 0) return files_fail(e, errno, path);
    if ((en = refusal(&st))) return files_fail(e, en, path);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return files_fail(e, errno, path);
    struct statfs sfs;
    en = fstat(fd, &st) < 0 ? errno : refusal(&st);
    /* /proc files are "regular" of size 0 and generated as they are read. */
    if (!en && fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_MAGIC) en = FILES_ENOTREG;
    if (en) {
        close(fd);
        return files_fail(e, en, path);
    }
    *f = (struct files_reader){fd, (long long)st.st_size, path};
    return 0;
}

void files_read_close(struct files_reader *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

/* Wait until out takes more (it may be a non-blocking pipe). */
static void wait_writable(int out)
{
    struct pollfd pf = {out, POLLOUT, 0};
    poll(&pf, 1, -1);
}

/* sendfile as much as it takes. Returns the bytes sent (0 at end of file),
 * -2 when out is something sendfile cannot write to, -1 with errno set
 * (*read_side says whose). */
static long long send_some(int fd, off_t off, size_t want, int out, int *read_side)
{
    for (;;) {
        off_t o = off;
        ssize_t w = sendfile(out, fd, &o, want);
        if (w >= 0) return w;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            wait_writable(out);
            continue;
        }
        /* out that sendfile cannot write to (an O_APPEND file, ...). */
        if (errno == EINVAL || errno == ENOSYS) return -2;
        /* Which side failed is not said; EPIPE/ENOSPC/EBADF are out's. */
        *read_side = !(errno == EPIPE || errno == ENOSPC || errno == EBADF);
        return -1;
    }
}

/* pread then write, one buffer. Returns as send_some (never -2). */
static long long copy_some(int fd, off_t off, size_t want, int out, int *read_side)
{
    static char buf[COPY_CHUNK];
    if (want > sizeof buf) want = sizeof buf;
    ssize_t r;
    do r = pread(fd, buf, want, off);
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
        *read_side = 1;
        return r;
    }
    for (ssize_t k = 0; k < r;) {
        ssize_t w = write(out, buf + k, (size_t)(r - k));
        if (w >= 0) {
            k += w;
        } else if (errno == EAGAIN) {
            wait_writable(out);
        } else if (errno != EINTR) {
            *read_side = 0;
            return -1;
        }
    }
    return r;
}

/* Copy up to n bytes from fd at off to out. Returns the bytes copied (fewer
 * only at end of file), or -1 with errno set (*read_side tells whose). */
static long long copy_out(int fd, off_t off, long long n, int out, int *read_side)
{
    long long done = 0;
    int use_sendfile = 1;
    while (done < n) {
        size_t want = (size_t)(n - done < SENDFILE_CHUNK ? n - done : SENDFILE_CHUNK);
        long long w = use_sendfile ? send_some(fd, off + done, want, out, read_side)
                                   : copy_some(fd, off + done, want, out, read_side);
        if (w == -2) {
            use_sendfile = 0;
            continue;
        }
        if (w < 0) return -1;
        if (w == 0) break;
        done += w;
    }
    return done;
}

/* Nothing left at `at`: the file may have grown since the fstat (a one-byte
 * probe finds out). */
static int at_eof(int fd, off_t at)
{
    char c;
    ssize_t r;
    do r = pread(fd, &c, 1, at);
    while (r < 0 && errno == EINTR);
    return r <= 0;
}

int files_read_copy(struct files_reader *f, uint64_t offset, long long len, int out_fd, long long *length,
                 int *eof, struct files_err *e)
{
    int read_side = 1;
    long long n = len ? copy_out(f->fd, (off_t)offset, len, out_fd, &read_side) : 0;
    if (n < 0) return read_side ? files_fail(e, errno, f->path) : files_fail_fd(e, errno);
    /* A short copy: the file shrank, so nothing is left. Otherwise a slice
     * (or length 0) may stop short of the end: a one-byte probe tells. */
    *eof = n < len ? 1 : at_eof(f->fd, (off_t)offset + n);
    *length = n;
    return 0;
}
