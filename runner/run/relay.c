/*
 * relay.c - the job's stdout relay (see relay.h).
 *
 * Two watchers alternate: `rd` is active while the buffer is empty, `wr`
 * while it holds bytes. libev reports a regular file or /dev/null as always
 * writable (epoll refuses them with EPERM), so those work too.
 */
#include "runner/run/relay.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void note_written(struct relay *r, const char *p, size_t n)
{
    if (n) {
        r->relayed = 1;
        r->last = p[n - 1];
    }
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents);

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct relay *r = w->data;
    ssize_t n = read(r->in_fd, r->buf, sizeof r->buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        /* EOF: every writer is gone. The job's exit is reported by the reaper. */
        ev_io_stop(loop, &r->rd);
        return;
    }
    if (r->broken) return; /* keep draining so the job never blocks on a full pipe */
    r->len = (size_t)n;
    r->off = 0;
    ev_io_stop(loop, &r->rd);
    ev_io_start(loop, &r->wr);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct relay *r = w->data;
    ssize_t n = write(r->out_fd, r->buf + r->off, r->len - r->off);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n < 0) {
        log_warn("writing the job's output to stdout: %s; output is discarded from now on",
                 strerror(errno));
        r->broken = 1;
        r->len = r->off = 0;
    } else {
        note_written(r, r->buf + r->off, (size_t)n);
        r->off += (size_t)n;
        if (r->off < r->len) return;
        r->len = r->off = 0;
    }
    ev_io_stop(loop, &r->wr);
    ev_io_start(loop, &r->rd);
}

void relay_start(struct relay *r, struct ev_loop *loop, int in_fd, int out_fd)
{
    memset(r, 0, sizeof *r);
    r->loop = loop;
    r->in_fd = in_fd;
    r->out_fd = out_fd;
    io_set_nonblock(in_fd, 1); /* our private pipe end: safe to make non-blocking */
    ev_io_init(&r->rd, on_readable, in_fd, EV_READ);
    ev_io_init(&r->wr, on_writable, out_fd, EV_WRITE);
    r->rd.data = r->wr.data = r;
    ev_io_start(loop, &r->rd);
}

void relay_finish(struct relay *r)
{
    size_t drained = 0;
    ev_io_stop(r->loop, &r->rd);
    ev_io_stop(r->loop, &r->wr);
    for (;;) {
        if (r->len > r->off && !r->broken) {
            if (io_write_all(r->out_fd, r->buf + r->off, r->len - r->off) < 0) {
                log_warn("writing the job's output to stdout: %s", strerror(errno));
                r->broken = 1;
            } else {
                note_written(r, r->buf + r->off, r->len - r->off);
            }
        }
        r->len = r->off = 0;
        if (drained >= RELAY_DRAIN_MAX) break;
        ssize_t n = read(r->in_fd, r->buf, sizeof r->buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* EAGAIN: only a live background writer is left */
        r->len = (size_t)n;
        drained += (size_t)n;
    }
    close(r->in_fd);
    r->in_fd = -1;
}

int relay_at_line_start(const struct relay *r) { return !r->relayed || r->last == '\n'; }
