/*
 * fsread.c - `fs read`: a regular file's bytes, raw, on stdout; the result
 * line on stderr.
 *
 * Hostile input is the point here: the path may name a FIFO that never gets
 * a writer, a device that streams forever, a /proc file that reports size 0
 * and then produces data, or a file that grows while we read. So: stat before
 * open (no device is ever opened), open O_NONBLOCK (a FIFO swapped in after
 * the stat cannot block the open), fstat the opened fd (what we check is
 * what we read), and copy at most the size seen then, never past --max-bytes.
 */
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define PROC_MAGIC 0x9fa0
#define COPY_CHUNK (1024 * 1024)

/* Wait until stdout takes more (it may be a non-blocking pipe we inherited). */
static void wait_writable(void)
{
    struct pollfd pf = {STDOUT_FILENO, POLLOUT, 0};
    poll(&pf, 1, -1);
}

/* Copy up to n bytes from fd at off to stdout. Returns the bytes copied (fewer
 * only at end of file), or -1 with errno set (*read_side tells whose). */
static long long copy_out(int fd, off_t off, long long n, int *read_side)
{
    long long done = 0;
    int use_sendfile = 1;
    static char buf[128 * 1024];
    while (done < n) {
        size_t want = (size_t)(n - done < COPY_CHUNK ? n - done : COPY_CHUNK);
        if (use_sendfile) {
            off_t o = off + done;
            ssize_t w = sendfile(STDOUT_FILENO, fd, &o, want);
            if (w > 0) {
                done += w;
                continue;
            }
            if (w == 0) break;
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                wait_writable();
                continue;
            }
            if (errno == EINVAL || errno == ENOSYS) {
                /* stdout that sendfile cannot write to (O_APPEND file, ...). */
                use_sendfile = 0;
                continue;
            }
            /* Which side failed is not said; EPIPE/ENOSPC are stdout's. */
            *read_side = !(errno == EPIPE || errno == ENOSPC || errno == EBADF);
            return -1;
        }
        if (want > sizeof buf) want = sizeof buf;
        ssize_t r = pread(fd, buf, want, off + done);
        if (r < 0) {
            if (errno == EINTR) continue;
            *read_side = 1;
            return -1;
        }
        if (r == 0) break;
        for (ssize_t k = 0; k < r;) {
            ssize_t w = write(STDOUT_FILENO, buf + k, (size_t)(r - k));
            if (w < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN) {
                    wait_writable();
                    continue;
                }
                *read_side = 0;
                return -1;
            }
            k += w;
        }
        done += r;
    }
    return done;
}

int fs_op_read(const char *path, uint64_t offset, int has_max, uint64_t max)
{
    struct stat st;
    fsout_set_fd(STDERR_FILENO);

    if (stat(path, &st) < 0) return fs_fail("read", errno, NULL, path);
    if (S_ISDIR(st.st_mode)) return fs_fail("read", EISDIR, NULL, path);
    if (!S_ISREG(st.st_mode)) return fs_fail("read", FS_ENOTREG, NULL, path);

    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fs_fail("read", errno, NULL, path);
    struct statfs sfs;
    int rc;
    if (fstat(fd, &st) < 0) {
        rc = fs_fail("read", errno, NULL, path);
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = fs_fail("read", EISDIR, NULL, path);
        goto out;
    }
    /* /proc files are "regular" of size 0 and generated as they are read. */
    if (!S_ISREG(st.st_mode) || (fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_MAGIC)) {
        rc = fs_fail("read", FS_ENOTREG, NULL, path);
        goto out;
    }

    long long size = (long long)st.st_size;
    long long remaining = (long long)offset >= size ? 0 : size - (long long)offset;
    if (has_max && (uint64_t)remaining > max) {
        char msg[160];
        snprintf(msg, sizeof msg, "File too large: %lld bytes from offset %llu, over --max-bytes %llu",
                 remaining, (unsigned long long)offset, (unsigned long long)max);
        rc = fs_fail("read", EFBIG, msg, path);
        goto out;
    }
    int read_side = 1;
    long long len = remaining ? copy_out(fd, (off_t)offset, remaining, &read_side) : 0;
    if (len < 0) {
        rc = fs_fail("read", errno, NULL, read_side ? path : "<stdout>");
        goto out;
    }
    /* eof: nothing left past what we sent. The file may have shrunk (short
     * copy) or grown since the fstat (a one-byte probe finds out). */
    int eof = 1;
    if (len == remaining && remaining > 0) {
        char c;
        ssize_t r;
        do r = pread(fd, &c, 1, (off_t)offset + len);
        while (r < 0 && errno == EINTR);
        eof = r <= 0;
    }
    struct buf b;
    buf_init(&b, 4096);
    rc = 0;
    if (buf_printf(&b, "{\"ok\": true, \"size\": %lld, \"offset\": %llu, \"length\": %lld, \"eof\": %s}",
                   size, (unsigned long long)offset, len, eof ? "true" : "false") < 0 ||
        fsout_line(&b) < 0)
        rc = EXIT_FS_FAILED;
    buf_free(&b);
out:
    close(fd);
    return rc;
}
