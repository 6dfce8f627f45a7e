/*
 * conn.c - one connection (see http/conn.h): requests in (the states, the
 * timers, trust and the end), then responses out through the bounded output
 * queue: response heads with the framing and Connection they need, whole
 * responses and streams in chunks. A stream producer is stopped at
 * CONN_HIGH_WATER queued bytes and called back once the queue is below
 * CONN_LOW_WATER.
 *
 * States, in the order a request goes through them:
 *   HEAD     waiting for a request head; the whole head must arrive within the
 *            server's timeout (first_head until the connection is trusted; an
 *            idle keep-alive connection is closed then)
 *   BODY     reading the body; the timeout counts from the last byte read
 *   HANDLE   the request is complete, the application has not answered yet
 *   RESPOND  the response is being written; a whole response must make
 *            progress within the timeout, a stream has no timeout
 *   LINGER   closing: the response is out, the write side shut, what the
 *            client still sends is dropped for CONN_LINGER_SECONDS
 * then HEAD again (keep-alive) or the end. Bytes of a second request that
 * arrive in HANDLE or RESPOND are held unparsed (one read, CONN_HOLD_MAX;
 * the socket is not read meanwhile) and parsed from the loop once the
 * response is out. The client closing its side (EOF) after a whole request
 * lets the response finish, then the connection closes; EOF anywhere else,
 * or from a client gone both ways, ends the connection at once (on_eof
 * says how a client gone both ways is told from a half-close).
 *
 * Sending: what a stream queues during one turn of the loop goes out in one
 * send, before the loop waits again (an ev_prepare watcher), not one send
 * per write: a stream's head with its first message, an end event with the
 * end of the stream, a burst of output messages. A stream that queues
 * CONN_HIGH_WATER bytes in one turn is sent at once and told to wait for
 * hooks.more, which comes from the next turn at the earliest: one
 * connection's work per turn is bounded, whatever the client's speed.
 */
#include "agent/api/http/conn.h"
#include "agent/api/http/conn_priv.h"
#include "agent/api/http/httpresp.h"
#include "agent/api/http/outq.h"
#include "agent/api/http/server.h"
#include "agent/core/budget.h"
#include "agent/core/log.h"
#include "agent/core/pause.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>



/* Bytes after the request that are dropped before reading stops; and the
 * most a lingering connection drops. */
#define DISCARD_MAX (64u * 1024u)
#define LINGER_MAX (1024u * 1024u)
/* Room asked of the budget for a whole response's head, beside its body. */
#define HEAD_ROOM 4096u

static char rbuf[CONN_HOLD_MAX]; /* one loop, one read at a time */

struct httpreq *conn_req(struct conn *c) { return &c->req; }
unsigned conn_id(const struct conn *c) { return c->id; }
struct ev_loop *conn_loop(const struct conn *c) { return c->srv->loop; }
int conn_responded(const struct conn *c) { return c->responded; }
struct conn *conn_next(const struct conn *c) { return c->next; }
void conn_set_hooks(struct conn *c, const struct conn_hooks *h) { c->hooks = *h; }

static double state_limit(const struct conn *c)
{
    switch (c->st) {
    case ST_HEAD: return c->trusted ? c->srv->timeout : c->srv->first_head;
    case ST_BODY: return c->paused ? 0 : c->srv->timeout; /* our wait, not the client's */
    case ST_RESPOND: return c->streaming || !outq_len(&c->out) ? 0 : c->srv->timeout;
    case ST_LINGER: return CONN_LINGER_SECONDS;
    default: return 0;
    }
}

/* (Re)arm the timer for the state; the wait counts from c->since. */
void conn_timer_arm(struct conn *c)
{
    struct ev_loop *loop = c->srv->loop;
    double lim = state_limit(c);
    ev_timer_stop(loop, &c->timer);
    if (lim <= 0) return;
    double left = c->since + lim - pause_now();
    ev_timer_set(&c->timer, left > 0 ? left : 0, 0);
    ev_timer_start(loop, &c->timer);
}

void conn_kill(struct conn *c)
{
    if (c->dying) return;
    c->dying = 1;
    c->srv->dying++;
    conn_trust_unlist(c); /* never displaced twice */
    if (c->hangup) server_hangup_forget(c->srv, c->fd);
    /* What this turn queued goes out first, as it would have been sent
     * at once, as far as the socket takes it. */
    conn_send_pending(c);
    ev_io_stop(c->srv->loop, &c->rio);
    ev_io_stop(c->srv->loop, &c->wio);
    ev_timer_stop(c->srv->loop, &c->timer);
    ev_timer_set(&c->timer, 0, 0); /* torn down from the loop: see destroy */
    ev_timer_start(c->srv->loop, &c->timer);
}

static void destroy(struct conn *c)
{
    struct server *s = c->srv;
    conn_send_unlist(c);
    struct conn_hooks h = c->hooks;
    memset(&c->hooks, 0, sizeof c->hooks);
    if (h.gone) h.gone(c, h.ctx);
    ev_timer_stop(s->loop, &c->timer);
    close(c->fd);
    httpreq_free(&c->req);
    outq_free(&c->out);
    buf_free(&c->held);
    s->dying--;
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    log_debug("api: connection %u closed", c->id);
    free(c);
    server_conn_closed(s);
}

static void linger(struct conn *c)
{
    if (shutdown(c->fd, SHUT_WR) < 0) {
        conn_kill(c);
        return;
    }
    c->st = ST_LINGER;
    c->since = pause_now();
    c->discarded = 0;
    ev_io_start(c->srv->loop, &c->rio);
    conn_timer_arm(c);
}

/* Request read and response written: the next request, or the end. */
void conn_maybe_next(struct conn *c)
{
    if (c->dying || !c->req_done || !c->finished || outq_len(&c->out)) return;
    outq_trim(&c->out);
    if (c->peer_eof) { /* the client has nothing more to say: the end */
        conn_kill(c);
        return;
    }
    if (c->close_after || !httpreq_keep_alive(&c->req) || c->srv->stopping) {
        buf_free(&c->held);
        linger(c);
        return;
    }
    httpreq_reset(&c->req);
    c->got_bytes = c->have_head = c->req_done = c->responded = c->finished = 0;
    c->streaming = c->blocked = c->paused = 0;
    c->discarded = 0;
    c->st = ST_HEAD;
    c->since = pause_now();
    /* Held bytes are parsed from the loop, not under the producer's call. */
    if (c->held.len) ev_feed_event(c->srv->loop, &c->rio, EV_READ);
    else ev_io_start(c->srv->loop, &c->rio);
    conn_timer_arm(c);
}

static void refuse(struct conn *c, int status, const char *why)
{
    log_debug("api: connection %u: %d %s", c->id, status, why);
    if (c->responded) { /* too late for a status: only the end is left */
        conn_kill(c);
        return;
    }
    c->close_after = 1;
    c->req_done = 1;
    if (c->srv->app.on_error) c->srv->app.on_error(c, status, why, c->srv->app.ctx);
    if (!c->responded) conn_respond(c, status, "text/plain", NULL, why, strlen(why));
}

static void on_head(struct conn *c)
{
    c->have_head = 1;
    c->st = ST_BODY;
    c->since = pause_now();
    c->srv->app.on_head(c, c->srv->app.ctx);
    if (c->dying) return;
    if (!c->responded && httpreq_body_check(&c->req) < 0) {
        refuse(c, httpreq_status(&c->req), httpreq_why(&c->req));
        return;
    }
    if (c->responded && httpreq_body_expected(&c->req)) {
        c->req_done = 1; /* refused at its head: the body is dropped */
        c->st = ST_RESPOND;
        conn_maybe_next(c);
    } else if (!c->responded && httpreq_expects_continue(&c->req) &&
               httpreq_body_expected(&c->req)) {
        if (outq_put(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0 || conn_send_flush(c) < 0) return;
    }
    conn_timer_arm(c);
}

static void on_done(struct conn *c)
{
    c->req_done = 1;
    if (c->responded) {
        c->st = ST_RESPOND;
        conn_maybe_next(c);
        return;
    }
    c->st = ST_HANDLE;
    conn_timer_arm(c);
    c->srv->app.on_request(c, c->srv->app.ctx);
}

/* Bytes that are no request of ours to parse: after a request the
 * connection closes after, or lingering. */
static void discard(struct conn *c, size_t n)
{
    c->discarded += n;
    if (c->st == ST_LINGER) {
        if (c->discarded > LINGER_MAX) conn_kill(c);
        return;
    }
    if (c->discarded > DISCARD_MAX) ev_io_stop(c->srv->loop, &c->rio);
}

/* Bytes of the next request, before this one is answered: kept unparsed,
 * and the socket is not read until they are parsed. */
static void hold(struct conn *c, const char *p, size_t n)
{
    ev_io_stop(c->srv->loop, &c->rio);
    if (buf_append(&c->held, p, n) < 0) { /* only one read is ever held */
        c->close_after = 1;
        discard(c, n);
        return;
    }
    log_debug("api: connection %u: %zu bytes of a pipelined request held", c->id, n);
}

static void input(struct conn *c, const char *p, size_t n)
{
    while (n > 0 && !c->dying) {
        if (c->st == ST_LINGER || ((c->st == ST_HANDLE || c->st == ST_RESPOND) && c->close_after)) {
            discard(c, n);
            return;
        }
        if (c->st == ST_HANDLE || c->st == ST_RESPOND) {
            hold(c, p, n);
            return;
        }
        if (c->st == ST_HEAD) c->got_bytes = 1;
        else c->since = pause_now();
        size_t used;
        enum httpreq_event ev = httpreq_feed(&c->req, p, n, &used);
        p += used;
        n -= used;
        if (ev == HTTPREQ_HEAD) on_head(c);
        else if (ev == HTTPREQ_DONE) on_done(c);
        else if (ev == HTTPREQ_ERROR) {
            refuse(c, httpreq_status(&c->req), httpreq_why(&c->req));
            return;
        }
    }
}

/* Whether the socket is to be read now. */
static int wants_input(const struct conn *c)
{
    return !c->dying && !c->peer_eof && !c->paused && !c->held.len &&
           (c->st == ST_LINGER || c->discarded <= DISCARD_MAX);
}

/* The held bytes, now that the request before them is answered. */
static void replay(struct conn *c)
{
    size_t n = c->held.len;
    memcpy(rbuf, c->held.data, n); /* held.len <= CONN_HOLD_MAX == sizeof rbuf */
    buf_free(&c->held);
    input(c, rbuf, n); /* may hold the rest again, after the next request */
    if (wants_input(c)) ev_io_start(c->srv->loop, &c->rio);
}

/* 1 when the client is gone both ways, not only done sending: a Unix
 * socket whose peer closed says so (POLLHUP), and so does a TCP one whose
 * client answered a write with a reset; before that, over TCP, a FIN looks
 * the same either way. */
static int peer_gone(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* EOF from the client: after a whole request, its response is finished
 * first (a half-close); anywhere else (idle, or a request cut short), or
 * when the client is gone, it is the end. A half-closed connection is a
 * stranger's slot from then on, the server watches its socket for the
 * client gone both ways (server_hangup_watch), and over TCP the response
 * is asked for a write the client ignores (hooks.eof): a client that
 * closed both ways answers it with a reset, which ends the connection at
 * once, not at the stream's next keepalive. */
static void on_eof(struct conn *c)
{
    if ((c->st == ST_HANDLE || c->st == ST_RESPOND) && !peer_gone(c->fd)) {
        log_debug("api: connection %u: the client closed its side; finishing the response",
                  c->id);
        c->peer_eof = 1;
        c->close_after = 1;
        ev_io_stop(c->srv->loop, &c->rio);
        conn_trust_drop(c);
        c->hangup = server_hangup_watch(c->srv, c, c->fd) == 0;
        if (c->srv->tcp && c->hooks.eof) c->hooks.eof(c, c->hooks.ctx);
        return;
    }
    if ((c->st != ST_HEAD && c->st != ST_LINGER) || c->got_bytes)
        log_debug("api: connection %u: closed by the client", c->id);
    conn_kill(c);
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;
    if (c->held.len) {
        if (c->st == ST_HEAD) replay(c);
        else ev_io_stop(loop, &c->rio);
        return;
    }
    ssize_t n = read(c->fd, rbuf, sizeof rbuf);
    if (n > 0) {
        input(c, rbuf, (size_t)n);
        return;
    }
    if (n == 0) {
        on_eof(c);
        return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    log_debug("api: connection %u: %s", c->id, strerror(errno));
    conn_kill(c);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;
    if (conn_send_flush(c) < 0) return;
    if (c->blocked && outq_len(&c->out) < CONN_LOW_WATER) {
        c->blocked = 0;
        if (c->hooks.more) c->hooks.more(c, c->hooks.ctx);
        /* Nothing more came: no call back until there is. */
        if (!c->dying && !c->blocked && !outq_len(&c->out)) ev_io_stop(loop, &c->wio);
    }
    if (c->dying) return;
    conn_timer_arm(c);
    conn_maybe_next(c);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = w->data;
    if (c->dying) {
        destroy(c);
        return;
    }
    double lim = state_limit(c);
    if (lim <= 0) return;
    if (pause_now() < c->since + lim) {
        conn_timer_arm(c);
        return;
    }
    if ((c->st == ST_HEAD && c->got_bytes) || c->st == ST_BODY) {
        refuse(c, 408, "request not received in time");
        return;
    }
    if (c->st == ST_RESPOND)
        log_debug("api: connection %u: the client read nothing for %.3g s", c->id, lim);
    conn_kill(c);
}

struct conn *conn_open(struct server *s, int fd)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->srv = s;
    c->fd = fd;
    c->id = ++s->next_id;
    httpreq_init(&c->req);
    outq_init(&c->out, CONN_QUEUE_MAX);
    buf_init(&c->held, CONN_HOLD_MAX);
    ev_io_init(&c->rio, on_readable, fd, EV_READ);
    ev_io_init(&c->wio, on_writable, fd, EV_WRITE);
    ev_init(&c->timer, on_timer);
    c->rio.data = c->wio.data = c->timer.data = c;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    conn_trust_list(c);
    c->st = ST_HEAD;
    c->since = pause_now();
    ev_io_start(s->loop, &c->rio);
    conn_timer_arm(c);
    log_debug("api: connection %u opened", c->id);
    return c;
}

void conn_pause(struct conn *c)
{
    if (c->dying || c->paused) return;
    c->paused = 1;
    ev_io_stop(c->srv->loop, &c->rio);
    conn_timer_arm(c);
}

void conn_resume(struct conn *c)
{
    if (c->dying || !c->paused) return;
    c->paused = 0;
    c->since = pause_now();
    if (wants_input(c)) ev_io_start(c->srv->loop, &c->rio);
    conn_timer_arm(c);
}

void conn_stop(struct conn *c)
{
    if (c->dying || c->st == ST_LINGER) return;
    c->close_after = 1;
    if (c->st == ST_HEAD) {
        conn_kill(c);
        return;
    }
    if (c->hooks.stop) c->hooks.stop(c, c->hooks.ctx);
    else if (!c->responded) refuse(c, 503, "the agent is shutting down");
    conn_maybe_next(c);
}

/* ---- the writing half (the sending itself: http/conn_send.c) ---- */

/* The response is wholly queued: the producer is done with c. */
static void finish(struct conn *c)
{
    c->finished = 1;
    c->blocked = 0; /* no producer to call back */
    memset(&c->hooks, 0, sizeof c->hooks);
    if (conn_send_flush(c) < 0) return;
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

/* A whole response larger than what a connection keeps between responses
 * asks the memory budget for its room first (README "sandbox-agent serve":
 * the memory budget). Returns 1 when the budget refused it: the client is
 * answered 429 in the application's error shape instead, and the request
 * is over as any answered one is. */
static int spent(struct conn *c, size_t n)
{
    static const char why[] = SERVE_BUDGET_SPENT;
    if (n <= CONN_LOW_WATER || n > CONN_QUEUE_MAX - HEAD_ROOM || outq_room(&c->out, n + HEAD_ROOM) == 0)
        return 0;
    log_debug("api: connection %u: a %zu-byte response refused: %s", c->id, n, why);
    /* (Not "if none responded": a kept-alive connection is ready for its
     * next request as soon as the answer is out.) */
    if (c->srv->app.on_error) c->srv->app.on_error(c, 429, why, c->srv->app.ctx);
    else conn_respond(c, 429, "text/plain", NULL, why, sizeof why - 1);
    return 1;
}

int conn_respond(struct conn *c, int status, const char *ctype, const char *extra,
                 const void *body, size_t n)
{
    if (c->dying || c->responded) return -1;
    /* A response to HEAD has the head of the GET's, and no body. */
    size_t len = n;
    if (c->have_head && httpreq_method(&c->req) == HTTP_HEAD) n = 0;
    if (spent(c, n)) return c->dying ? -1 : 0;
    if (begin(c, status, ctype, extra, HTTPRESP_LENGTH, len) < 0) return -1;
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
    conn_send_later(c); /* the head goes with the first message */
    conn_timer_arm(c);
    return 0;
}

int conn_stream_begin_length(struct conn *c, int status, const char *ctype, const char *extra,
                             uint64_t length)
{
    if (begin(c, status, ctype, extra, HTTPRESP_LENGTH, length) < 0) return -1;
    c->streaming = 1;
    conn_send_later(c); /* the head goes with the first message */
    conn_timer_arm(c);
    return 0;
}

char *conn_write_begin(struct conn *c, size_t n)
{
    if (c->dying || !c->streaming || c->finished || n == 0) return NULL;
    /* Chunked: the size line ("%zx\r\n") before, CRLF after; a chunk of
     * size 0 would end the body: n > 0 here. */
    size_t k = 0;
    if (c->framing == HTTPRESP_CHUNKED)
        for (size_t v = n; v; v >>= 4) k++;
    char *d = outq_reserve(&c->out, k ? k + 2 + n + 2 : n);
    if (!d) {
        log_warn("api: connection %u: stream past %u queued bytes; dropping it", c->id,
                 (unsigned)CONN_QUEUE_MAX);
        conn_kill(c);
        return NULL;
    }
    if (!k) return d;
    for (size_t i = k, v = n; i-- > 0; v >>= 4) d[i] = "0123456789abcdef"[v & 15];
    memcpy(d + k, "\r\n", 2);
    memcpy(d + k + 2 + n, "\r\n", 2);
    return d + k + 2;
}

/* The queue has what a producer may queue: CONN_HIGH_WATER, or while the
 * memory budget is spent CONN_LOW_WATER (its producer then waits for the
 * client after each message: back-pressure, never a loss). */
static int full(const struct conn *c)
{
    size_t n = outq_len(&c->out);
    return n >= CONN_HIGH_WATER || (n >= CONN_LOW_WATER && budget_spent());
}

int conn_write_end(struct conn *c)
{
    if (c->dying) return -1;
    if (!full(c)) {
        conn_send_later(c);
        return 1;
    }
    /* A turn's worth: out now, and more from a later turn. */
    c->blocked = 1;
    return conn_send_flush(c) < 0 ? -1 : 0;
}

int conn_write(struct conn *c, const void *p, size_t n)
{
    if (c->dying || !c->streaming || c->finished) return -1;
    if (n == 0) return !full(c);
    char *d = conn_write_begin(c, n);
    if (!d) return -1;
    memcpy(d, p, n);
    return conn_write_end(c);
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

