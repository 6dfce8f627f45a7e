/*
 * mailbox.c - the mailbox tailer (see mailbox.h).
 *
 * Reads with pread at our own offset: the offset is the single truth for
 * "how much has been handed on", which is what makes pausing mid-chunk and
 * detecting truncation simple: the file is smaller than the offset, or it no
 * longer holds, just before the offset, the bytes we last read there (it was
 * truncated and written past the old offset before we looked).
 */
#include "agent/session/mailbox.h"
#include "agent/core/err.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCH_MASK (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
                    IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

static void check(struct mailbox *mb);

static void remember_tail(struct mailbox *mb, const char *p, size_t n)
{
    const size_t cap = sizeof mb->tail;
    if (n >= cap) {
        memcpy(mb->tail, p + n - cap, cap);
        mb->tail_len = cap;
        return;
    }
    size_t keep = mb->tail_len + n > cap ? cap - n : mb->tail_len;
    memmove(mb->tail, mb->tail + mb->tail_len - keep, keep);
    memcpy(mb->tail + keep, p, n);
    mb->tail_len = keep + n;
}

/* 1 when the file still holds our remembered tail just before off. */
static int tail_intact(struct mailbox *mb)
{
    char now[sizeof mb->tail];
    if (!mb->tail_len) return 1;
    ssize_t r = pread(mb->fd, now, mb->tail_len, mb->off - (off_t)mb->tail_len);
    return r == (ssize_t)mb->tail_len && !memcmp(now, mb->tail, mb->tail_len);
}

enum drained { DRAINED_END, DRAINED_STOP, DRAINED_MORE };

/* Hand on what the open file holds past our offset, until EOF (END), a pause
 * or a read error (STOP), or until a slice is read (MORE: the idle watcher
 * reads on once the loop has served what is pending). */
static enum drained drain(struct mailbox *mb)
{
    size_t got = 0;
    while (!mb->paused && !mb->stopped && mb->fd >= 0) {
        if (got >= MAILBOX_SLICE) {
            ev_idle_start(mb->loop, &mb->more);
            return DRAINED_MORE;
        }
        ssize_t r = pread(mb->fd, mb->chunk, MAILBOX_CHUNK, mb->off);
        if (r < 0) {
            if (errno == EINTR) continue;
            log_warn("cannot read the mailbox %s: %s", mb->path, strerror(errno));
            return DRAINED_STOP;
        }
        if (r == 0) return DRAINED_END;
        got += (size_t)r;
        size_t used = lsplit_feed(&mb->split, mb->chunk, (size_t)r, mb->fn, mb->ctx);
        mb->off += (off_t)used;
        remember_tail(mb, mb->chunk, used);
        if (used < (size_t)r) return DRAINED_STOP; /* paused inside the callback */
    }
    return DRAINED_STOP;
}

static void close_file(struct mailbox *mb)
{
    if (mb->fd >= 0) close(mb->fd);
    mb->fd = -1;
    if (lsplit_pending(&mb->split))
        log_warn("mailbox: %zu bytes of an unfinished last line dropped", lsplit_pending(&mb->split));
    lsplit_reset(&mb->split);
}

static void open_file(struct mailbox *mb)
{
    int fd = open(mb->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno != ENOENT && !mb->warned_open) {
            log_warn("cannot open the mailbox %s: %s (retrying)", mb->path, strerror(errno));
            mb->warned_open = 1;
        }
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        /* A FIFO or device would block or never end: only regular files. */
        if (!mb->warned_type) {
            log_warn("the mailbox %s is not a regular file; waiting for one", mb->path);
            mb->warned_type = 1;
        }
        close(fd);
        return;
    }
    mb->warned_open = mb->warned_type = 0;
    mb->fd = fd;
    mb->dev = st.st_dev;
    mb->ino = st.st_ino;
    mb->off = 0;
    mb->tail_len = 0;
    lsplit_reset(&mb->split);
    log_debug("reading the mailbox %s (inode %lu)", mb->path, (unsigned long)st.st_ino);
}

static void check(struct mailbox *mb)
{
    if (mb->stopped || mb->paused || mb->in_check) return;
    mb->in_check = 1;
    if (mb->fd >= 0) {
        struct stat ps;
        if (stat(mb->path, &ps) == 0 && (ps.st_dev != mb->dev || ps.st_ino != mb->ino)) {
            /* Replaced: finish what the old file held, then switch. */
            if (drain(mb) == DRAINED_MORE || mb->paused || mb->stopped) goto out;
            log_info("the mailbox %s was replaced; reading the new file from the start", mb->path);
            close_file(mb);
        }
    }
    if (mb->fd < 0) open_file(mb);
    if (mb->fd >= 0) {
        struct stat st;
        if (fstat(mb->fd, &st) == 0 && (st.st_size < mb->off || !tail_intact(mb))) {
            log_info("the mailbox %s was truncated; reading from the start", mb->path);
            mb->off = 0;
            mb->tail_len = 0;
            lsplit_reset(&mb->split);
        }
        drain(mb);
    }
out:
    mb->in_check = 0;
}

static void add_watch(struct mailbox *mb)
{
    if (mb->ifd < 0 || mb->wd >= 0) return;
    mb->wd = inotify_add_watch(mb->ifd, mb->dir, WATCH_MASK);
    if (mb->wd < 0) log_debug("cannot watch %s: %s; polling", mb->dir, strerror(errno));
    /* The poll stays as a safety net; it is only slow when events work. */
    mb->poll.repeat = mb->wd >= 0 ? MAILBOX_POLL_SLOW : MAILBOX_POLL_FAST;
    if (ev_is_active(&mb->poll)) ev_timer_again(mb->loop, &mb->poll);
}

static void on_inotify(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct mailbox *mb = w->data;
    /* Aligned for struct inotify_event; holds at least one full event. */
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int relevant = 0;
    for (;;) {
        ssize_t r = read(mb->ifd, ev, sizeof ev);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (ssize_t i = 0; i + (ssize_t)sizeof(struct inotify_event) <= r;) {
            const struct inotify_event *e = (const struct inotify_event *)(ev + i);
            if (e->mask & IN_Q_OVERFLOW) relevant = 1;
            if (e->wd == mb->wd) {
                if (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                    /* The directory itself went away: the poll re-adds it. */
                    if (e->mask & IN_IGNORED) mb->wd = -1;
                    relevant = 1;
                } else if (!e->len || !strcmp(e->name, mb->base)) {
                    relevant = 1;
                }
            }
            i += (ssize_t)sizeof(struct inotify_event) + (ssize_t)e->len;
        }
    }
    if (mb->wd < 0) add_watch(mb);
    if (relevant) check(mb);
}

/* The next slice, after the loop has served signals and timers. */
static void on_more(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    ev_idle_stop(loop, w);
    check(w->data);
}

static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct mailbox *mb = w->data;
    add_watch(mb);
    check(mb);
}

static void free_names(struct mailbox *mb)
{
    free(mb->path);
    free(mb->dir);
    free(mb->base);
    free(mb->chunk);
    mb->path = mb->dir = mb->base = mb->chunk = NULL;
}

int mailbox_start(struct mailbox *mb, struct ev_loop *loop, const char *path, size_t line_max,
                  lsplit_fn fn, void *ctx, char *err)
{
    memset(mb, 0, sizeof *mb);
    mb->loop = loop;
    mb->fd = mb->ifd = mb->wd = -1;
    mb->fn = fn;
    mb->ctx = ctx;
    size_t n = strlen(path);
    if (n == 0 || path[n - 1] == '/') {
        err_set(err, "the mailbox path '%.200s' names no file", path);
        return -1;
    }
    mb->path = strdup(path);
    const char *slash = strrchr(path, '/');
    mb->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    mb->base = strdup(slash ? slash + 1 : path);
    mb->chunk = malloc(MAILBOX_CHUNK);
    if (!mb->path || !mb->dir || !mb->base || !mb->chunk) {
        free_names(mb);
        err_set(err, "out of memory");
        return -1;
    }
    lsplit_init(&mb->split, line_max);
    mb->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (mb->ifd < 0) {
        log_warn("inotify unavailable (%s); polling the mailbox every %g s", strerror(errno),
                 MAILBOX_POLL_FAST);
    } else {
        ev_io_init(&mb->iw, on_inotify, mb->ifd, EV_READ);
        mb->iw.data = mb;
        ev_io_start(loop, &mb->iw);
    }
    /* The first tick comes at once, from the loop: the first read of what
     * is already there happens after the caller has finished setting up. */
    ev_idle_init(&mb->more, on_more);
    mb->more.data = mb;
    ev_init(&mb->poll, on_poll);
    mb->poll.data = mb;
    mb->poll.repeat = MAILBOX_POLL_FAST;
    add_watch(mb);
    ev_timer_set(&mb->poll, 0., mb->poll.repeat);
    ev_timer_start(loop, &mb->poll);
    return 0;
}

void mailbox_pause(struct mailbox *mb)
{
    mb->paused = 1;
    ev_idle_stop(mb->loop, &mb->more);
}

void mailbox_resume(struct mailbox *mb)
{
    if (!mb->paused) return;
    mb->paused = 0;
    check(mb);
}

void mailbox_stop(struct mailbox *mb)
{
    if (mb->stopped) return;
    mb->stopped = 1;
    ev_timer_stop(mb->loop, &mb->poll);
    ev_idle_stop(mb->loop, &mb->more);
    if (mb->ifd >= 0) {
        ev_io_stop(mb->loop, &mb->iw);
        close(mb->ifd);
        mb->ifd = -1;
    }
    if (mb->fd >= 0) close(mb->fd);
    mb->fd = -1;
    lsplit_free(&mb->split);
    free_names(mb);
}
