/*
 * respond.c - the writing half of a connection (see conn.h): response heads
 * with the framing and Connection they need, whole responses, streams in
 * chunks, and the output queue drained into the socket. A stream producer
 * is stopped at CONN_HIGH_WATER queued bytes; conn.c calls it back once the
 * queue is below CONN_LOW_WATER.
 */
#include "agent/api/connpriv.h"
#include "agent/api/server.h"
#include "agent/core/log.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/* Write what the socket takes. Returns 0, or -1 when the connection failed. */
int conn_flush(struct conn *c)
{
    size_t n;
    const char *p;
    while ((p = outq_peek(&c->out, &n))) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            outq_done(&c->out, (size_t)k);
            c->since = ev_now(c->srv->loop);
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            log_debug("serve: connection %u: write: %s", c->id, strerror(errno));
            conn_kill(c);
            return -1;
        }
    }
    if (outq_len(&c->out)) ev_io_start(c->srv->loop, &c->wio);
    else ev_io_stop(c->srv->loop, &c->wio);
    return 0;
}

/* The response is wholly queued: the producer is done with c. */
static void finish(struct conn *c)
{
    c->finished = 1;
    memset(&c->hooks, 0, sizeof c->hooks);
    if (conn_flush(c) < 0) return;
    conn_timer_arm(c);
    conn_maybe_next(c);
}

/* Begin a response: the head, with the framing and Connection it needs. */
static int begin(struct conn *c, int status, const char *ctype, const char *extra,
                 enum httpresp_framing framing, uint64_t length)
{
    if (c->dying || c->responded) return -1;
    if (!c->req_done && httpreq_body_expected(&c->req)) c->close_after = 1; /* body unread */
    if (c->st == ST_HEAD || !httpreq_keep_alive(&c->req) || c->srv->stopping ||
        framing == HTTPRESP_EOF)
        c->close_after = 1;
    struct httpresp h = {status, ctype, extra, framing, length, c->close_after,
                         !httpreq_http11(&c->req)};
    c->responded = 1;
    c->framing = framing;
    if (c->req_done) c->st = ST_RESPOND;
    if (httpresp_head(&c->out, &h) < 0) {
        conn_kill(c);
        return -1;
    }
    return 0;
}

int conn_respond(struct conn *c, int status, const char *ctype, const char *extra,
                 const void *body, size_t n)
{
    if (begin(c, status, ctype, extra, HTTPRESP_LENGTH, n) < 0) return -1;
    /* A response to HEAD has the head of the GET's, and no body. */
    if (c->have_head && httpreq_method(&c->req) == HTTP_HEAD) n = 0;
    if (outq_put(&c->out, body, n) < 0) {
        conn_kill(c);
        return -1;
    }
    finish(c);
    return 0;
}

int conn_stream_begin(struct conn *c, int status, const char *ctype, const char *extra)
{
    int chunked = httpreq_http11(&c->req);
    if (begin(c, status, ctype, extra, chunked ? HTTPRESP_CHUNKED : HTTPRESP_EOF, 0) < 0)
        return -1;
    c->streaming = 1;
    if (conn_flush(c) < 0) return -1;
    conn_timer_arm(c);
    return 0;
}

int conn_stream_begin_length(struct conn *c, int status, const char *ctype, const char *extra,
                             uint64_t length)
{
    if (begin(c, status, ctype, extra, HTTPRESP_LENGTH, length) < 0) return -1;
    c->streaming = 1;
    if (conn_flush(c) < 0) return -1;
    conn_timer_arm(c);
    return 0;
}

int conn_write(struct conn *c, const void *p, size_t n)
{
    if (c->dying || !c->streaming || c->finished) return -1;
    if (n == 0) return outq_len(&c->out) < CONN_HIGH_WATER;
    /* A chunk of size 0 would end the body: n > 0 here. */
    if ((c->framing == HTTPRESP_CHUNKED && outq_printf(&c->out, "%zx\r\n", n) < 0) ||
        outq_put(&c->out, p, n) < 0 ||
        (c->framing == HTTPRESP_CHUNKED && outq_put(&c->out, "\r\n", 2) < 0)) {
        log_warn("serve: connection %u: stream past %u queued bytes; dropping it", c->id,
                 (unsigned)CONN_QUEUE_MAX);
        conn_kill(c);
        return -1;
    }
    if (conn_flush(c) < 0) return -1;
    if (outq_len(&c->out) < CONN_HIGH_WATER) return 1;
    c->blocked = 1;
    return 0;
}

int conn_stream_end(struct conn *c)
{
    if (c->dying || !c->streaming || c->finished) return -1;
    if (c->framing == HTTPRESP_CHUNKED && outq_put(&c->out, "0\r\n\r\n", 5) < 0) {
        conn_kill(c);
        return -1;
    }
    finish(c);
    return 0;
}
