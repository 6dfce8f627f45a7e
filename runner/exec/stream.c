/*
 * stream.c - the command's output pipes into rings (see stream.h).
 */
#include "runner/exec/stream.h"
#include "agent/core/err.h"
#include "agent/core/io.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
/* Per readable event: then the other stream and the timers get a turn. */
#define READ_TURN (16 * READ_CHUNK)

void exec_stream_init(struct exec_stream *s, size_t max)
{
    memset(s, 0, sizeof *s);
    s->fd = s->wfd = -1;
    ring_init(&s->ring, max);
}

int exec_stream_open(struct exec_stream *s, char *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        err_set(err, "pipe: %s", strerror(errno));
        return -1;
    }
    s->fd = p[0];
    s->wfd = p[1];
    return 0;
}

static void stream_close(struct ev_loop *loop, struct exec_stream *s)
{
    if (s->fd < 0) return;
    ev_io_stop(loop, &s->w);
    close(s->fd);
    s->fd = -1;
}

/* Read what the pipe holds, up to limit bytes (0: until EAGAIN, or a turn's
 * worth). EOF and read errors close the stream. */
static void stream_read(struct ev_loop *loop, struct exec_stream *s, size_t limit)
{
    static char chunk[READ_CHUNK];
    size_t got = 0;
    while (s->fd >= 0 && (limit == 0 || got < limit)) {
        size_t want = sizeof chunk;
        if (limit && limit - got < want) want = limit - got;
        ssize_t r = read(s->fd, chunk, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) stream_close(loop, s);
            return;
        }
        if (r == 0) {
            stream_close(loop, s);
            return;
        }
        if (ring_write(&s->ring, chunk, (size_t)r) < 0) s->oom = 1;
        got += (size_t)r;
        if (limit == 0 && got >= READ_TURN) return;
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    stream_read(loop, (struct exec_stream *)w, 0);
}

void exec_stream_start(struct ev_loop *loop, struct exec_stream *s)
{
    if (s->wfd >= 0) close(s->wfd);
    s->wfd = -1;
    io_set_nonblock(s->fd, 1);
    ev_io_init(&s->w, on_readable, s->fd, EV_READ);
    ev_io_start(loop, &s->w);
}

void exec_stream_read_pending(struct ev_loop *loop, struct exec_stream *s)
{
    int avail = 0;
    if (s->fd >= 0 && ioctl(s->fd, FIONREAD, &avail) == 0 && avail > 0)
        stream_read(loop, s, (size_t)avail);
}

void exec_stream_free(struct ev_loop *loop, struct exec_stream *s)
{
    if (s->wfd >= 0) close(s->wfd);
    s->wfd = -1;
    stream_close(loop, s);
    ring_free(&s->ring);
}
