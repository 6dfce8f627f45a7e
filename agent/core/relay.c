/*
 * relay.c - a pipe to an outlet, in the loop (see relay.h).
 *
 * pump() runs a few steps per wakeup. Each step moves one chunk and says what
 * stopped it: the pipe is empty (wait until readable), the outlet is full
 * (wait until writable), or every writer is gone. Exactly one of the two
 * watchers is active while relaying.
 */
#include "agent/core/relay.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum step { STEP_MOVED, STEP_EMPTY, STEP_FULL, STEP_EOF };

/* Where discarded bytes go; opened once, shared by every relay. */
static int null_fd = -1;

static int devnull(void)
{
    if (null_fd < 0) null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    return null_fd;
}

/* Drop n bytes from the head of a pipe we own: spliced away, else read. */
static void discard(int fd, size_t n)
{
    char tmp[512];
    while (n) {
        ssize_t d = splice(fd, NULL, devnull(), NULL, n, SPLICE_F_NONBLOCK);
        if (d <= 0) d = read(fd, tmp, n < sizeof tmp ? n : sizeof tmp);
        if (d <= 0) return;
        n -= (size_t)d;
    }
}

static size_t want(const struct relay *r) { return r->draining ? r->budget : SIZE_MAX; }

static void took(struct relay *r, size_t n)
{
    r->moved += n;
    if (r->draining) r->budget = n < r->budget ? r->budget - n : 0;
}

static enum step read_failed(void)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK) return STEP_EMPTY;
    if (errno == EINTR) return STEP_MOVED;
    log_warn("reading a relay pipe: %s", strerror(errno));
    return STEP_EOF;
}

static int use_buffer(struct relay *r, enum relay_mode mode)
{
    size_t cap = mode == RELAY_LINES ? RELAY_LINE_MAX : RELAY_COPY_BUF;
    char *b = r->cap >= cap ? r->buf : realloc(r->buf, cap);
    if (!b) return -1;
    r->buf = b;
    if (r->cap < cap) r->cap = cap;
    r->mode = mode;
    return 0;
}

/* The splice path is refused for this outlet: copy from now on. */
static void to_copy(struct relay *r)
{
    r->out->can_splice = 0;
    if (use_buffer(r, RELAY_COPY) < 0) outlet_fail(r->out, ENOMEM);
}

/* The outlet is broken: keep the pipe empty so the child never blocks. */
static enum step step_discard(struct relay *r)
{
    r->len = r->off = 0;
    size_t n = want(r);
    if (!n) return STEP_EMPTY;
    ssize_t d = splice(r->in_fd, NULL, devnull(), NULL, n < (1 << 20) ? n : (1 << 20), SPLICE_F_NONBLOCK);
    if (d < 0 && errno != EAGAIN && errno != EINTR) {
        char tmp[4096];
        d = read(r->in_fd, tmp, n < sizeof tmp ? n : sizeof tmp);
    }
    if (d == 0) return STEP_EOF;
    if (d < 0) return read_failed();
    took(r, (size_t)d);
    return STEP_MOVED;
}

static enum step step_splice(struct relay *r)
{
    size_t n = want(r);
    if (n > r->out->chunk) n = r->out->chunk;
    if (!n) return STEP_EMPTY;
    ssize_t t = tee(r->in_fd, r->peek[1], n, SPLICE_F_NONBLOCK);
    if (t == 0) return STEP_EOF;
    if (t < 0 && (errno == EAGAIN || errno == EINTR)) return errno == EAGAIN ? STEP_EMPTY : STEP_MOVED;
    if (t < 0) {
        to_copy(r);
        return STEP_MOVED;
    }
    ssize_t s = splice(r->in_fd, NULL, r->out->fd, NULL, (size_t)t, SPLICE_F_NONBLOCK);
    if (s <= 0) {
        int e = s < 0 ? errno : 0;
        discard(r->peek[0], (size_t)t);
        if (e == EAGAIN) return STEP_FULL;
        if (e == EINTR) return STEP_MOVED;
        if (e == EINVAL || e == 0) to_copy(r);
        else outlet_fail(r->out, e);
        return STEP_MOVED;
    }
    /* The last byte moved is byte s-1 of the peek copy. */
    char c;
    discard(r->peek[0], (size_t)s - 1);
    if (read(r->peek[0], &c, 1) == 1) outlet_note(r->out, &c, 1);
    discard(r->peek[0], (size_t)(t - s));
    took(r, (size_t)s);
    return STEP_MOVED;
}

static enum step step_copy(struct relay *r)
{
    if (r->off == r->len) {
        size_t n = want(r);
        if (!n) return STEP_EMPTY;
        ssize_t got = read(r->in_fd, r->buf, n < r->cap ? n : r->cap);
        if (got == 0) return STEP_EOF;
        if (got < 0) return read_failed();
        r->len = (size_t)got;
        r->off = 0;
        took(r, (size_t)got);
    }
    ssize_t w = outlet_write(r->out, r->buf + r->off, r->len - r->off);
    if (w == 0) return STEP_FULL;
    r->off = w < 0 ? r->len : r->off + (size_t)w;
    if (r->off == r->len) r->off = r->len = 0;
    return STEP_MOVED;
}

/* Line mode: how many bytes from the start of the buffer to write now. */
static size_t line_span(struct relay *r)
{
    char *nl = r->len ? memrchr(r->buf, '\n', r->len) : NULL;
    if (nl) return (size_t)(nl - r->buf) + 1;
    if (r->len == RELAY_LINE_MAX - 1 || (r->finishing && r->len)) {
        r->buf[r->len++] = '\n';
        return r->len;
    }
    return 0;
}

static enum step step_lines(struct relay *r)
{
    size_t span = line_span(r);
    if (span) {
        ssize_t w = outlet_write(r->out, r->buf, span);
        if (w == 0) return STEP_FULL;
        size_t done = w < 0 ? span : (size_t)w;
        memmove(r->buf, r->buf + done, r->len - done);
        r->len -= done;
        return STEP_MOVED;
    }
    size_t n = want(r), room = RELAY_LINE_MAX - 1 - r->len;
    if (n > room) n = room;
    if (!n) return STEP_EMPTY;
    ssize_t got = read(r->in_fd, r->buf + r->len, n);
    if (got == 0) return STEP_EOF;
    if (got < 0) return read_failed();
    r->len += (size_t)got;
    took(r, (size_t)got);
    return STEP_MOVED;
}

static enum step step(struct relay *r)
{
    if (r->out->broken) return step_discard(r);
    switch (r->mode) {
    case RELAY_SPLICE: return step_splice(r);
    case RELAY_COPY: return step_copy(r);
    default: return step_lines(r);
    }
}

static size_t buffered(const struct relay *r) { return r->len - r->off; }

static void watch(struct relay *r, int rd, int wr)
{
    if (rd) ev_io_start(r->loop, &r->rd);
    else ev_io_stop(r->loop, &r->rd);
    if (wr) ev_io_start(r->loop, &r->wr);
    else ev_io_stop(r->loop, &r->wr);
}

/* The pipe gave nothing more (empty or closed): finish a drain, or wait. */
static int idle(struct relay *r, int eof)
{
    if (eof) r->eof = 1;
    if (buffered(r) && !r->out->broken && (eof || r->draining)) {
        r->finishing = 1; /* line mode: end the partial line, then stop */
        return 0;
    }
    r->finishing = 0;
    if (r->draining || eof) {
        r->draining = 0;
        watch(r, 0, 0);
    } else {
        watch(r, 1, 0);
    }
    return 1;
}

/* Move until the pipe is empty, the outlet is full or the round budget is
 * spent. with_loop 0: never wait on a watcher (relay_flush_now). */
static void pump(struct relay *r, int with_loop)
{
    for (int i = 0; i < RELAY_ROUNDS || !with_loop; i++) {
        if (r->draining && !r->budget && !buffered(r) && idle(r, 0)) return;
        switch (step(r)) {
        case STEP_MOVED: break;
        case STEP_FULL:
            if (with_loop) watch(r, 0, 1);
            return;
        case STEP_EMPTY:
            if (idle(r, 0)) return;
            break;
        case STEP_EOF:
            if (idle(r, 1)) return;
            break;
        }
    }
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    pump(w->data, 1);
}

int relay_start(struct relay *r, struct ev_loop *loop, int in_fd, struct outlet *out, int lines)
{
    memset(r, 0, sizeof *r);
    r->loop = loop;
    r->in_fd = in_fd;
    r->out = out;
    r->peek[0] = r->peek[1] = -1;
    r->mode = RELAY_SPLICE;
    if (lines || !out->can_splice || pipe2(r->peek, O_CLOEXEC | O_NONBLOCK) < 0) {
        r->peek[0] = r->peek[1] = -1;
        if (use_buffer(r, lines ? RELAY_LINES : RELAY_COPY) < 0) return -1;
    } else if (fcntl(r->peek[1], F_SETPIPE_SZ, OUTLET_PIPE_SIZE) < 0) {
        log_debug("cannot enlarge the peek pipe: %s", strerror(errno));
    }
    io_set_nonblock(in_fd, 1); /* our private pipe end: safe to make non-blocking */
    if (fcntl(in_fd, F_SETPIPE_SZ, OUTLET_PIPE_SIZE) < 0)
        log_debug("cannot enlarge the relay pipe: %s", strerror(errno));
    ev_io_init(&r->rd, on_io, in_fd, EV_READ);
    ev_io_init(&r->wr, on_io, out->fd, EV_WRITE);
    r->rd.data = r->wr.data = r;
    ev_io_start(loop, &r->rd);
    return 0;
}

void relay_drain(struct relay *r, size_t max)
{
    if (r->in_fd < 0 || (r->eof && !buffered(r))) {
        r->draining = 0;
        return;
    }
    r->draining = 1;
    r->budget = max;
    pump(r, 1);
}

int relay_draining(const struct relay *r) { return r->draining; }

void relay_flush_now(struct relay *r, size_t max)
{
    if (r->in_fd < 0) return;
    r->draining = 1;
    r->budget = max;
    pump(r, 0);
    r->draining = 0;
    watch(r, 0, 0);
}

size_t relay_halt(struct relay *r)
{
    int inpipe = 0;
    watch(r, 0, 0);
    r->draining = 0;
    if (r->in_fd >= 0 && ioctl(r->in_fd, FIONREAD, &inpipe) < 0) inpipe = 0;
    return buffered(r) + (inpipe > 0 ? (size_t)inpipe : 0);
}

/* poll's view of the pipe now (POLLHUP: no writer left). */
static short pipe_state(const struct relay *r)
{
    struct pollfd p = {r->in_fd, POLLIN, 0};
    if (r->in_fd < 0 || r->eof) return POLLHUP;
    return poll(&p, 1, 0) < 0 ? 0 : p.revents;
}

int relay_writers(const struct relay *r) { return !(pipe_state(r) & POLLHUP); }

int relay_live(const struct relay *r)
{
    short ev = pipe_state(r);
    return !(ev & POLLHUP) || (ev & POLLIN);
}

void relay_close(struct relay *r)
{
    if (r->loop) watch(r, 0, 0);
    if (r->in_fd >= 0) close(r->in_fd);
    if (r->peek[0] >= 0) close(r->peek[0]);
    if (r->peek[1] >= 0) close(r->peek[1]);
    r->in_fd = r->peek[0] = r->peek[1] = -1;
    free(r->buf);
    r->buf = NULL;
    r->cap = r->len = r->off = 0;
}
