/*
 * tunnel.c - one forwarded connection, spliced both ways (see
 * forward/tunnel.h).
 *
 * A direction's pipe is either empty, and its source is read, or holds
 * bytes, and its destination is written until it is empty again: what a
 * splice into the pipe answers is then never ambiguous (EAGAIN into an
 * empty pipe means the source has nothing), the pipe never holds more than
 * one read's worth, and what a copy could not send always fits in it. The connection's own watchers drive it (source
 * readable, destination writable), each on only while it is waited for.
 */
#include "agent/forward/tunnel.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tunnel_reset_fd(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

static void watch(struct ev_loop *loop, ev_io *w, int on)
{
    if (on && !ev_is_active(w)) ev_io_start(loop, w);
    else if (!on && ev_is_active(w)) ev_io_stop(loop, w);
}

static void stop_all(struct tunnel *t)
{
    for (int d = 0; d < 2; d++) {
        ev_io_stop(t->loop, &t->h[d].rd);
        ev_io_stop(t->loop, &t->h[d].wr);
    }
    ev_io_stop(t->loop, &t->connect_w);
}

static void close_pipes(struct tunnel *t)
{
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 2; i++)
            if (t->h[d].pipe[i] >= 0) close(t->h[d].pipe[i]);
}

/* Closed from inside its own callbacks: the fds go now, the record from the
 * loop (free_w), so no watcher of it runs after it is freed. */
static void end(struct tunnel *t, int reset)
{
    if (t->closed) return;
    t->closed = 1;
    stop_all(t);
    for (int i = 0; i < 2; i++) {
        if (reset) tunnel_reset_fd(t->fd[i]);
        else close(t->fd[i]);
    }
    close_pipes(t);
    ev_timer_start(t->loop, &t->free_w);
}

static void fail(struct tunnel *t, int e, const char *what)
{
    log_debug("forward: connection closed: %s: %s", what, strerror(e));
    end(t, 1);
}

/* Watch what the direction waits for: its source while its pipe is empty,
 * its destination while the pipe holds bytes. */
static void arm(struct tunnel *t, int d)
{
    struct tunnel_half *h = &t->h[d];
    watch(t->loop, &h->rd, !h->held && !h->eof);
    watch(t->loop, &h->wr, h->held > 0);
}

/* A read filled the copy buffer: the source had more waiting, a bulk
 * transfer. From now on the direction splices, through a bigger pipe (1
 * MiB: fewer, larger splices, about a third less of the agent's CPU per
 * GiB than the 64 KiB default). Enlarging is best effort. */
static void grow(struct tunnel_half *h)
{
    int sz = fcntl(h->pipe[1], F_SETPIPE_SZ, TUNNEL_PIPE_BULK);
    h->grown = 1;
    if (sz > 0) h->cap = (size_t)sz;
}

/* A direction not bulk (yet) copies: one read into a buffer every tunnel
 * shares (the loop is one thread, and the buffer is empty again before the
 * next read) and one send, where two splices through the pipe cost more for
 * a small message. What the destination does not take goes into the pipe,
 * empty and larger than the buffer, so it all fits, and leaves by splice as
 * any other; so does a send's error, met again there. Returns what was
 * read (0 at EOF, -1 with errno); *moved counts what was sent. */
static ssize_t copy(struct tunnel_half *h, int src, int dst, size_t *moved)
{
    static char buf[TUNNEL_COPY];
    ssize_t r = recv(src, buf, sizeof buf, MSG_DONTWAIT);
    if (r <= 0) return r;
    ssize_t w = send(dst, buf, (size_t)r, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) w = 0;
    *moved += (size_t)w;
    if (w < r && write(h->pipe[1], buf + w, (size_t)(r - w)) != r - w) {
        errno = EPIPE; /* cannot be: the pipe is empty and larger */
        return -1;
    }
    h->held = (size_t)(r - w);
    return r;
}

/* Move what direction d can move now: at most TUNNEL_ROUNDS reads and
 * TUNNEL_TURN_BYTES in one wake-up, so one busy tunnel cannot keep the
 * loop from the others. */
static void move(struct tunnel *t, int d)
{
    struct tunnel_half *h = &t->h[d];
    int src = t->fd[d], dst = t->fd[!d];
    size_t moved = 0;
    for (int round = 0; round < TUNNEL_ROUNDS && moved < TUNNEL_TURN_BYTES && !h->done; round++) {
        ssize_t r = -1;
        size_t ask = h->grown ? h->cap : TUNNEL_COPY;
        if (!h->held && !h->eof) {
            r = h->grown ? splice(src, NULL, h->pipe[1], NULL, ask, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
                         : copy(h, src, dst, &moved);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && errno == EAGAIN) break;
            if (r < 0) return fail(t, errno, d ? "reading the listener" : "reading the client");
            if (r == 0) h->eof = 1;
            if (h->grown) h->held += (size_t)r; /* copy put in the pipe what it could not send */
            else if ((size_t)r == ask) grow(h);
        }
        if (h->held) {
            ssize_t w = splice(h->pipe[0], NULL, dst, NULL, h->held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno == EAGAIN) break;
            if (w <= 0) return fail(t, w < 0 ? errno : EPIPE, d ? "writing the client" : "writing the listener");
            h->held -= (size_t)w;
            moved += (size_t)w;
            if (h->held) continue;
        }
        if (h->eof && !h->held) {
            (void)shutdown(dst, SHUT_WR);
            h->done = 1;
        }
        /* A short read emptied the source: another would only say EAGAIN
         * (the watcher, level-triggered, says when there is more). */
        if (r > 0 && (size_t)r < ask / 2) break;
    }
    if (t->h[0].done && t->h[1].done) return end(t, 0);
    arm(t, d);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    struct tunnel *t = w->data;
    move(t, w == &t->h[1].rd || w == &t->h[1].wr);
}

static void on_connect(struct ev_loop *loop, ev_io *w, int revents)
{
    struct tunnel *t = w->data;
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(t->fd[1], SOL_SOCKET, SO_ERROR, &e, &len) < 0) e = errno;
    if (e == EINPROGRESS || e == EALREADY) return;
    ev_io_stop(loop, w);
    if (e) return fail(t, e, "connecting to the listener");
    arm(t, 0);
    arm(t, 1);
}

static void on_free(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct tunnel *t = w->data;
    ev_timer_stop(loop, w);
    if (t->gone) t->gone(t, t->ctx);
    free(t);
}

static struct tunnel *make(struct ev_loop *loop, int client, int upstream)
{
    struct tunnel *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->loop = loop;
    t->fd[0] = client;
    t->fd[1] = upstream;
    for (int d = 0; d < 2; d++) {
        t->h[d].pipe[0] = t->h[d].pipe[1] = -1;
        ev_io_init(&t->h[d].rd, on_io, t->fd[d], EV_READ);
        ev_io_init(&t->h[d].wr, on_io, t->fd[!d], EV_WRITE);
        t->h[d].rd.data = t->h[d].wr.data = t;
    }
    ev_io_init(&t->connect_w, on_connect, upstream, EV_WRITE);
    ev_timer_init(&t->free_w, on_free, 0., 0.);
    t->connect_w.data = t->free_w.data = t;
    for (int d = 0; d < 2; d++) {
        if (pipe2(t->h[d].pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
            int e = errno;
            close_pipes(t);
            free(t);
            errno = e;
            return NULL;
        }
        int sz = fcntl(t->h[d].pipe[1], F_GETPIPE_SZ);
        t->h[d].cap = sz > 0 ? (size_t)sz : TUNNEL_PIPE_SMALL;
    }
    return t;
}

struct tunnel *tunnel_open(struct ev_loop *loop, int client, const struct sockaddr *to, socklen_t len,
                           tunnel_gone_fn gone, void *ctx)
{
    int one = 1;
    int u = socket(to->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (u < 0) return NULL;
    struct tunnel *t = make(loop, client, u);
    if (!t) {
        int e = errno;
        close(u);
        errno = e;
        return NULL;
    }
    t->gone = gone;
    t->ctx = ctx;
    /* Bytes go on as they come: the sender's own Nagle already ran. */
    (void)setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(u, to, len) == 0) {
        arm(t, 0);
        arm(t, 1);
    } else if (errno == EINPROGRESS) {
        ev_io_start(loop, &t->connect_w);
    } else {
        fail(t, errno, "connecting to the listener");
    }
    return t;
}

void tunnel_close(struct tunnel *t)
{
    if (!t->closed) {
        stop_all(t);
        close(t->fd[0]);
        close(t->fd[1]);
        close_pipes(t);
    }
    ev_timer_stop(t->loop, &t->free_w);
    free(t);
}
