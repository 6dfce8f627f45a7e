/*
 * write.c - writing a file from the caller's fd (see files.h).
 *
 * write replaces a file atomically: the input goes to a temporary file in
 * the same directory (O_CLOEXEC, mode 0600 while being filled), which is
 * fsynced and then renamed over the target, so a reader sees the old file or
 * the new one, never a part. Its name (".NAME.sbx-K-RANDOM", created
 * O_EXCL) carries whether it replaces a file (files.h: FILES_TMP_MARK_*) and is
 * told to the caller's hook before the file exists, so a caller that can be
 * killed has someone remove it. Any failure (input unreadable, disk full,
 * with guard_signals a signal that ends us) unlinks the temporary file and
 * leaves the old file untouched. append writes in place instead (there is
 * nothing atomic to promise).
 */
#include "agent/files/files_priv.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif
#define COPY_CHUNK (128 * 1024)
#define TMP_PATH_MAX (PATH_MAX + 64)
/* ".sbx-K-" and the random part; names tried before giving up. */
#define TMP_RANDOM 12
#define TMP_SUFFIX_LEN (7 + TMP_RANDOM)
#define TMP_TRIES 8

/* The temporary file a signal handler must remove. Fixed storage: the
 * handler may use nothing that allocates. */
static char tmp_path[TMP_PATH_MAX];

static void on_fatal_signal(int sig)
{
    if (tmp_path[0]) unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_signals(const struct files_write_opts *o, int on)
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
 * the link. A dangling link is replaced itself, and so is every link with
 * replace_link (a new file in its place). */
static int find_target(const char *path, int replace_link, struct target *t, struct files_err *e)
{
    t->path = path;
    t->resolved = NULL;
    if (lstat(path, &t->st) == 0 && S_ISLNK(t->st.st_mode)) {
        if (replace_link) return t->exists = 0;
        if ((t->resolved = realpath(path, NULL))) t->path = t->resolved;
    }
    t->exists = stat(t->path, &t->st) == 0;
    if (!t->exists && errno != ENOENT) return files_fail(e, errno, path);
    if (t->exists && S_ISDIR(t->st.st_mode)) return files_fail(e, EISDIR, path);
    if (t->exists && !S_ISREG(t->st.st_mode)) return files_fail(e, FILES_ENOTREG, path);
    return 0;
}

static int write_append(const char *path, const struct target *t, int in_fd,
                        const struct files_write_opts *o, long long *bytes, struct files_err *e)
{
    /* O_NONBLOCK: a FIFO put there since our stat cannot block the open. */
    int fd = open(t->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  o->has_mode ? o->mode : 0666);
    if (fd < 0) return files_fail(e, errno, path);
    struct stat st;
    int r = 0, read_side = 0;
    if (fstat(fd, &st) < 0) {
        r = files_fail(e, errno, path);
    } else if (!S_ISREG(st.st_mode)) {
        r = files_fail(e, FILES_ENOTREG, path);
    } else {
        io_set_nonblock(fd, 0);
        *bytes = copy_in(in_fd, fd, &read_side);
        if (*bytes < 0) r = read_side ? files_fail_fd(e, errno) : files_fail(e, errno, path);
        else if (o->has_mode && fchmod(fd, o->mode) < 0) r = files_fail(e, errno, path);
    }
    close(fd);
    return r;
}

/* The mode of the new file: the one asked for, the replaced file's, or what
 * a new file gets under the umask. */
static mode_t new_mode(const struct target *t, const struct files_write_opts *o)
{
    if (o->has_mode) return o->mode;
    if (t->exists) return t->st.st_mode & 07777;
    mode_t um = umask(0);
    umask(um);
    return 0666 & ~um;
}

/* Fill the temporary file fd (closed here) from in_fd. Returns 0, or an
 * errno value with *read_side saying whether in_fd failed. */
static int fill_tmp(int fd, int in_fd, const char *path, const struct target *t,
                    const struct files_write_opts *o, const struct files_write_hooks *h, long long *bytes,
                    int *read_side)
{
    int e = 0;
    if (h->fill) e = h->fill(h->ctx, fd, bytes);
    else if ((*bytes = copy_in(in_fd, fd, read_side)) < 0) e = errno;
    if (!e && h->prepare) e = h->prepare(h->ctx, fd, t->exists ? t->path : NULL);
    /* Replacing someone's file as root keeps it theirs. */
    if (!e && t->exists && geteuid() == 0 && fchown(fd, t->st.st_uid, t->st.st_gid) < 0)
        log_debug("fs write: cannot keep the owner of %s: %s", path, strerror(errno));
    if (!e && (fchmod(fd, new_mode(t, o)) < 0 || fsync(fd) < 0)) e = errno;
    if (close(fd) < 0 && !e) e = errno;
    return e;
}

static void fill_random(unsigned char *r, size_t n)
{
    if (getrandom(r, n, GRND_NONBLOCK) == (ssize_t)n) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)r;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        r[i] = (unsigned char)x;
    }
}

/* ".NAME.sbx-K-" and TMP_RANDOM random letters and digits beside target
 * into out (TMP_PATH_MAX bytes), K saying whether it replaces a file
 * (files.h). Returns 0, or -1 when the name would not fit. */
static int tmp_name(char *out, const char *target, int replaces)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    int pre = files_tmp_prefix(out, TMP_PATH_MAX, target, TMP_SUFFIX_LEN + 1);
    if (pre < 0) return -1;
    unsigned char r[TMP_RANDOM];
    fill_random(r, sizeof r);
    char *p = out + pre;
    p += snprintf(p, 8, ".sbx-%c-", replaces ? FILES_TMP_MARK_REPLACES : FILES_TMP_MARK_NEW);
    for (size_t i = 0; i < sizeof r; i++) *p++ = abc[r[i] % (sizeof abc - 1)];
    *p = '\0';
    return 0;
}

/* Something is at the target's name: the rename will replace it. */
static int name_taken(const struct target *t)
{
    struct stat st;
    return lstat(t->path, &st) == 0;
}

/* Create the temporary file (into tmp_path, told to the hook first) under a
 * fresh name marked with *replaces (name_taken now): *fd, or an errno value. */
static int create_tmp(const struct target *t, const struct files_write_hooks *h, int *fd, int *replaces)
{
    *replaces = name_taken(t);
    for (int i = 0; i < TMP_TRIES; i++) {
        if (tmp_name(tmp_path, t->path, *replaces) < 0) return ENAMETOOLONG;
        int en = h->named ? h->named(h->ctx, tmp_path) : 0;
        if (en) return en;
        *fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (*fd >= 0) return 0;
        if (errno != EEXIST) return errno;
    }
    return EEXIST;
}

/* Just before the rename into place: when something came to the target's
 * name or left it since the file was named, the other mark. A failure
 * costs the watchers only the exact event type, so it is not one (the hook
 * is told the name kept). */
static void remark(const struct target *t, const struct files_write_hooks *h, int replaces)
{
    int now = name_taken(t);
    static char other[TMP_PATH_MAX];
    if (now == replaces || tmp_name(other, t->path, now) < 0) return;
    if (h->named && h->named(h->ctx, other) != 0) return;
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, tmp_path, AT_FDCWD, other, RENAME_NOREPLACE) == 0) {
        memcpy(tmp_path, other, strlen(other) + 1);
        return;
    }
#endif
    if (h->named) (void)h->named(h->ctx, tmp_path);
}

static int write_atomic(const char *path, const struct target *t, int in_fd,
                        const struct files_write_opts *o, const struct files_write_hooks *h, long long *bytes,
                        struct files_err *e)
{
    /* Beside the target, so the rename stays within one filesystem. */
    guard_signals(o, 1);
    int fd = -1, read_side = 0, replaces;
    int en = create_tmp(t, h, &fd, &replaces);
    if (!en) {
        en = fill_tmp(fd, in_fd, path, t, o, h, bytes, &read_side);
        if (!en) remark(t, h, replaces);
        if (!en && rename(tmp_path, t->path) < 0) en = errno;
        if (en) unlink(tmp_path);
    }
    tmp_path[0] = '\0';
    guard_signals(o, 0);
    if (!en) return 0;
    return read_side ? files_fail_fd(e, en) : files_fail(e, en, path);
}

static int write_file(const char *path, int in_fd, const struct files_write_opts *o,
                      const struct files_write_hooks *h, long long *bytes, struct files_err *e)
{
    if (!*path) return files_fail(e, ENOENT, path);
    if (o->parents && files_make_parents(path) < 0) return files_fail(e, errno, path);
    struct target t;
    int r = find_target(path, o->replace_link, &t, e);
    if (r == 0) r = o->append ? write_append(path, &t, in_fd, o, bytes, e)
                              : write_atomic(path, &t, in_fd, o, h, bytes, e);
    free(t.resolved);
    return r;
}

int files_write(const char *path, int in_fd, const struct files_write_opts *o, long long *bytes,
             struct files_err *e)
{
    static const struct files_write_hooks none;
    return write_file(path, in_fd, o, &none, bytes, e);
}

int files_write_hooked(const char *path, int in_fd, const struct files_write_opts *o,
                    const struct files_write_hooks *h, long long *bytes, struct files_err *e)
{
    struct files_write_opts atomic = *o;
    atomic.append = 0;
    return write_file(path, in_fd, &atomic, h, bytes, e);
}
