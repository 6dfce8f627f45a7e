/*
 * fswrite.c - `fs write` and `fs mkdir`.
 *
 * write replaces a file atomically: stdin goes to a temporary file in the
 * same directory (O_CLOEXEC, mode 0600 while being filled), which is fsynced
 * and then renamed over the target, so a reader sees the old file or the new
 * one, never a part. Any failure (stdin unreadable, disk full, a signal that
 * ends us) unlinks the temporary file and leaves the old file untouched.
 * --append writes in place instead (there is nothing atomic to promise).
 */
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
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

/* The temporary file a signal handler must remove. Fixed storage: the
 * handler may use nothing that allocates. */
static char tmp_path[PATH_MAX + 64];

static void on_fatal_signal(int sig)
{
    if (tmp_path[0]) unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_signals(int on)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXFSZ};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on ? on_fatal_signal : SIG_DFL);
}

/* stdin to fd until EOF. Returns the byte count, or -1 with errno set and
 * *read_side saying whether stdin (1) or the file (0) failed. */
static long long copy_stdin(int fd, int *read_side)
{
    static char buf[128 * 1024];
    long long total = 0;
    for (;;) {
        ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {STDIN_FILENO, POLLIN, 0};
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

static int report_bytes(long long n)
{
    struct buf b;
    buf_init(&b, 256);
    int rc = 0;
    if (buf_printf(&b, "{\"ok\": true, \"bytes\": %lld}", n) < 0 || fsout_line(&b) < 0) rc = EXIT_FS_FAILED;
    buf_free(&b);
    return rc;
}

/* Create the parent directories of path (--parents). */
static int make_parents(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" names a/b */
    while (n > 0 && path[n - 1] != '/') n--;
    while (n > 1 && path[n - 1] == '/') n--;
    if (n <= 1) return 0; /* no parent, or / */
    char *dir = malloc(n + 1);
    if (!dir) return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    int r = io_mkdir_p(dir, 0777);
    int e = errno;
    free(dir);
    errno = e;
    return r;
}

static int write_append(const char *path, const char *target, int has_mode, mode_t mode)
{
    /* O_NONBLOCK: a FIFO put there since our stat cannot block the open. */
    int fd = open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  has_mode ? mode : 0666);
    if (fd < 0) return fs_fail("write", errno, NULL, path);
    struct stat st;
    int rc;
    if (fstat(fd, &st) < 0) {
        rc = fs_fail("write", errno, NULL, path);
    } else if (!S_ISREG(st.st_mode)) {
        rc = fs_fail("write", FS_ENOTREG, NULL, path);
    } else {
        io_set_nonblock(fd, 0);
        int read_side = 0;
        long long n = copy_stdin(fd, &read_side);
        if (n < 0)
            rc = fs_fail("write", errno, NULL, read_side ? "<stdin>" : path);
        else if (has_mode && fchmod(fd, mode) < 0)
            rc = fs_fail("write", errno, NULL, path);
        else
            rc = report_bytes(n);
    }
    close(fd);
    return rc;
}

int fs_op_write(const char *path, int has_mode, mode_t mode, int parents, int append)
{
    if (parents && make_parents(path) < 0) return fs_fail("write", errno, NULL, path);

    /* Write through a symlink as `> path` would: replace what it points to,
     * not the link. A dangling link is replaced itself. */
    char *resolved = NULL;
    struct stat st;
    const char *target = path;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (resolved = realpath(path, NULL)))
        target = resolved;
    int exists = stat(target, &st) == 0;
    int rc;
    if (!exists && errno != ENOENT) {
        rc = fs_fail("write", errno, NULL, path);
        goto out;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        rc = fs_fail("write", EISDIR, NULL, path);
        goto out;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        rc = fs_fail("write", FS_ENOTREG, NULL, path);
        goto out;
    }
    if (append) {
        rc = write_append(path, target, has_mode, mode);
        goto out;
    }

    /* The temporary file: ".NAME.sbx-XXXXXX" beside the target, so the
     * rename stays within one filesystem. The name part is cut short enough
     * that the whole stays under NAME_MAX. */
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = target + dirlen;
    size_t blen = strlen(base);
    if (blen > 200) blen = 200;
    if (dirlen + blen + 16 >= sizeof tmp_path) {
        rc = fs_fail("write", ENAMETOOLONG, NULL, path);
        goto out;
    }
    memcpy(tmp_path, target, dirlen);
    snprintf(tmp_path + dirlen, sizeof tmp_path - dirlen, ".%.*s.sbx-XXXXXX", (int)blen, base);

    guard_signals(1);
    int fd = mkostemp(tmp_path, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        tmp_path[0] = '\0';
        guard_signals(0);
        rc = fs_fail("write", e, NULL, path);
        goto out;
    }
    int read_side = 0;
    long long n = copy_stdin(fd, &read_side);
    int e = n < 0 ? errno : 0;
    const char *failed = read_side ? "<stdin>" : path;
    if (!e) {
        mode_t m;
        if (has_mode) {
            m = mode;
        } else if (exists) {
            m = st.st_mode & 07777;
        } else {
            mode_t um = umask(0);
            umask(um);
            m = 0666 & ~um;
        }
        /* Replacing someone's file as root keeps it theirs. */
        if (exists && geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid) < 0)
            log_debug("fs write: cannot keep the owner of %s: %s", path, strerror(errno));
        if (fchmod(fd, m) < 0 || fsync(fd) < 0) e = errno;
    }
    if (close(fd) < 0 && !e) e = errno;
    if (!e && rename(tmp_path, target) < 0) e = errno;
    if (e) {
        unlink(tmp_path);
        tmp_path[0] = '\0';
        guard_signals(0);
        rc = fs_fail("write", e, NULL, failed);
        goto out;
    }
    tmp_path[0] = '\0';
    guard_signals(0);
    rc = report_bytes(n);
out:
    free(resolved);
    return rc;
}

int fs_op_mkdir(const char *path, int parents, int has_mode, mode_t mode)
{
    int created = 1;
    if (mkdir(path, has_mode ? mode : 0777) < 0) {
        int e = errno;
        if (e == ENOENT && parents) {
            if (make_parents(path) < 0) return fs_fail("mkdir", errno, NULL, path);
            if (mkdir(path, has_mode ? mode : 0777) < 0) e = errno;
            else e = 0;
        }
        if (e == EEXIST) {
            /* Already a directory: nothing to do, and says so. */
            struct stat st;
            if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                created = 0;
                e = 0;
            }
        }
        if (e) return fs_fail("mkdir", e, NULL, path);
    }
    /* --mode is the mode, as mkdir -m: the umask does not cut it. Through an
     * fd opened without following a symlink: the guest may have swapped the
     * new directory for a link to /etc/shadow since mkdir, and chmod(path)
     * would follow it. */
    if (created && has_mode) {
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) return fs_fail("mkdir", errno, NULL, path);
        int r = fchmod(dfd, mode), e = errno;
        close(dfd);
        if (r < 0) return fs_fail("mkdir", e, NULL, path);
    }
    struct buf b;
    buf_init(&b, 256);
    int rc = 0;
    if (buf_printf(&b, "{\"ok\": true, \"created\": %s}", created ? "true" : "false") < 0 ||
        fsout_line(&b) < 0)
        rc = EXIT_FS_FAILED;
    buf_free(&b);
    return rc;
}
