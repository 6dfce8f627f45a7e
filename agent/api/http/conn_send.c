/*
 * conn_send.c - what a connection sends (see http/conn_priv.h): the queue
 * written as far as the socket takes it; the bytes a turn of the loop
 * queued, for every connection, sent in one send before the loop waits
 * (the server's unsent list and its ev_prepare watcher: http/conn.c's
 * header says why); and a file's bytes by sendfile(2), never through the
 * queue.
 */
#include "agent/api/http/conn_priv.h"
#include "agent/api/http/server.h"
#include "agent/core/log.h"
#include "agent/core/pause.h"

#include <errno.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

/* Write what the socket takes. Returns 0, or -1 when the connection failed.
 * A blocked producer keeps the write watcher on even when the queue is
 * empty: it is called back from the next turn. */
int conn_send_flush(struct conn *c)
{
    size_t n;
    const char *p;
    conn_send_unlist(c);
    while ((p = outq_peek(&c->out, &n))) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            outq_done(&c->out, (size_t)k);
            c->since = pause_now();
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            log_debug("api: connection %u: write: %s", c->id, strerror(errno));
            conn_kill(c);
            return -1;
        }
    }
    if (outq_len(&c->out) || c->blocked) ev_io_start(c->srv->loop, &c->wio);
    else ev_io_stop(c->srv->loop, &c->wio);
    return 0;
}

/* ---- sending once per turn: the unsent list ---- */

void conn_send_unlist(struct conn *c)
{
    if (!c->unsent) return;
    if (c->uprev) c->uprev->unext = c->unext;
    else c->srv->unsent = c->unext;
    if (c->unext) c->unext->uprev = c->uprev;
    c->uprev = c->unext = NULL;
    c->unsent = 0;
}

/* Before the loop waits: every connection's bytes of this turn. */
static void on_sender(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct server *s = w->data;
    while (s->unsent) {
        struct conn *c = s->unsent;
        if (conn_send_flush(c) < 0) continue; /* killed: off the list */
        conn_timer_arm(c);
        conn_maybe_next(c);
    }
    ev_prepare_stop(loop, w);
}

void conn_send_later(struct conn *c)
{
    if (c->unsent || c->dying) return;
    struct server *s = c->srv;
    c->uprev = NULL;
    c->unext = s->unsent;
    if (s->unsent) s->unsent->uprev = c;
    s->unsent = c;
    c->unsent = 1;
    if (!ev_is_active(&s->sender)) {
        ev_prepare_init(&s->sender, on_sender);
        s->sender.data = s;
        ev_prepare_start(s->loop, &s->sender);
    }
}

void conn_send_pending(struct conn *c)
{
    if (!c->unsent) return;
    conn_send_unlist(c);
    size_t n;
    const char *p;
    ssize_t k;
    while ((p = outq_peek(&c->out, &n)) && (k = send(c->fd, p, n, MSG_NOSIGNAL)) > 0)
        outq_done(&c->out, (size_t)k);
}

/* ---- file bodies: sendfile(2) from a regular file -------------------------
 * Apart from the queue: a Content-Length stream's bytes may come
 * straight from a file, never through the queue (the head goes first). */

int conn_send_file(struct conn *c, int fd, uint64_t *off, size_t n)
{
    if (c->dying || !c->streaming || c->finished || c->framing != HTTPRESP_LENGTH) return -1;
    if (outq_len(&c->out)) { /* the head, or what was written before, goes first */
        if (conn_send_flush(c) < 0) return -1;
        if (outq_len(&c->out)) {
            c->blocked = 1; /* conn_send_flush watches for room */
            return CONN_FILE_WAIT;
        }
    }
    for (;;) {
        off_t o = (off_t)*off;
        ssize_t k = sendfile(c->fd, fd, &o, n);
        if (k > 0) {
            *off += (uint64_t)k;
            c->since = pause_now();
            if ((size_t)k == n) return CONN_FILE_MORE;
            break; /* the socket took what it had room for */
        }
        if (k == 0) return CONN_FILE_END;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) break;
        log_debug("api: connection %u: sendfile: %s", c->id, strerror(errno));
        conn_kill(c);
        return -1;
    }
    conn_send_file_later(c);
    return CONN_FILE_WAIT;
}

void conn_send_file_later(struct conn *c)
{
    if (c->dying) return;
    c->blocked = 1;
    ev_io_start(c->srv->loop, &c->wio);
}
