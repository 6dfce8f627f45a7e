/*
 * conn.h - one HTTP/1.x connection of `serve`: reading requests one at a
 * time (httpreq), answering each through a bounded output queue, keep-alive,
 * timeouts, and the end of the connection.
 *
 * A response is either whole (conn_respond) or a stream produced piece by
 * piece (conn_stream_begin, conn_write, conn_stream_end). A producer that
 * writes faster than the client reads is told to stop (conn_write returns 0)
 * and called back (hooks.more) once the queue has drained below
 * CONN_LOW_WATER: memory per connection stays below CONN_HIGH_WATER plus one
 * write, whatever the client does.
 *
 * Trust: until one of its heads passes the application's check (the token:
 * conn_trust), a connection has the server's short first-head deadline, and
 * a newcomer at the connection bound may displace it (http/server.h). A trusted
 * connection keeps its slot whatever strangers do, until the check changes
 * (conn_trust_revoke) or its client closes its side (a half-close: the
 * response goes on, on a stranger's slot).
 *
 * Pipelining: a request is never parsed before the one before it is
 * answered; bytes of it that arrive early are held (CONN_HOLD_MAX) and
 * parsed once the response is out, so every request is answered in order.
 *
 * Lifetime: the server owns connections. No conn_* call ever frees one: a
 * connection that fails or is dropped is torn down from the event loop
 * afterwards, and whoever set hooks then gets hooks.gone, exactly once, as the
 * last event (conn_* calls before that are safe and return -1). Hooks are
 * dropped as soon as the response is complete: gone means the response was
 * cut short.
 */
#ifndef SA_API_HTTP_CONN_H
#define SA_API_HTTP_CONN_H

#include "agent/core/protocol.h"
#include "agent/api/http/httpreq.h"

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

/* Stream back-pressure: conn_write returns 0 at CONN_HIGH_WATER queued
 * bytes (sent at once); hooks.more runs, from a later turn of the loop, when
 * the queue is below CONN_LOW_WATER again. */
#define CONN_HIGH_WATER (256u * 1024u)
#define CONN_LOW_WATER (64u * 1024u)
/* The hard bound of a queue: a whole unary response or one stream write. */
#define CONN_QUEUE_MAX (SERVE_BODY_MAX + 2 * CONN_HIGH_WATER)
/* After the response, a closing connection reads (and drops) what the client
 * still sends for this long, so the client sees the response, not a reset. */
#define CONN_LINGER_SECONDS 2.0
/* Bytes of a pipelined request read before the one before it is answered:
 * held, not parsed, and the socket is not read while they are (one read). */
#define CONN_HOLD_MAX (64u * 1024u)

struct conn;
struct server;

struct conn_hooks {
    void (*more)(struct conn *c, void *ctx); /* the queue drained: write more */
    void (*gone)(struct conn *c, void *ctx); /* the connection is lost: forget c */
    void (*stop)(struct conn *c, void *ctx); /* the server stops: finish the response now */
    /* The client closed its side (over TCP: or is gone both ways, which
     * looks the same) while the response goes on: a stream writes, now,
     * something its client ignores (a keepalive), if it has such a thing;
     * a client gone both ways answers it with a reset, and is gone. */
    void (*eof)(struct conn *c, void *ctx);
    void *ctx;
};

/* The request being answered; the body's fate may be chosen (httpreq_body_*)
 * from the server's on_head. */
struct httpreq *conn_req(struct conn *c);
unsigned conn_id(const struct conn *c);
struct ev_loop *conn_loop(const struct conn *c);
void conn_set_hooks(struct conn *c, const struct conn_hooks *h);
/* 1 once a response has begun. */
int conn_responded(const struct conn *c);
/* The request's head passed the application's check (see Trust above). */
void conn_trust(struct conn *c);
/* The check changed (a new token): every connection of c's server, c too,
 * is a stranger's again until one of its heads passes the new check, and a
 * request whose body is still being handed to a sink (httpreq_body_sink:
 * applied as it comes) is dropped with its connection. A buffered body is
 * the application's to check again when it is complete. */
void conn_trust_revoke(struct conn *c);

/* A whole response: status, Content-Type (or NULL), more header lines each
 * ending "\r\n" (or NULL), body. Returns 0, or -1 when the connection is
 * going or a response has begun already. */
int conn_respond(struct conn *c, int status, const char *ctype, const char *extra,
                 const void *body, size_t n);
/* A streamed response: chunked for HTTP/1.1, ended by closing for HTTP/1.0. */
int conn_stream_begin(struct conn *c, int status, const char *ctype, const char *extra);
/* A streamed response of exactly length bytes (Content-Length): the writes
 * must add up to it before conn_stream_end (a producer that cannot finish
 * drops the connection with conn_kill). */
int conn_stream_begin_length(struct conn *c, int status, const char *ctype, const char *extra,
                             uint64_t length);
/* Queue p[0..n) of the stream. Returns 1 (queued, room for more), 0 (queued,
 * now full: wait for hooks.more) or -1 (not queued: the connection is going,
 * or the producer ignored a 0 past CONN_QUEUE_MAX and lost the connection). */
int conn_write(struct conn *c, const void *p, size_t n);
/* conn_write in two steps, for a producer that writes its bytes in place:
 * room for exactly n (> 0) bytes of the stream, to be filled before the
 * next conn_* call on c (NULL, and the connection is going, as for a -1),
 * then conn_write_end, which returns what conn_write would have. Queued
 * bytes go out before the loop waits, together (see conn.c, Sending). */
char *conn_write_begin(struct conn *c, size_t n);
int conn_write_end(struct conn *c);
/* The stream is complete. Returns 0 or -1. */
int conn_stream_end(struct conn *c);

/* File bodies: n bytes of the regular file fd at *off into a Content-Length
 * stream with one sendfile(2), *off advanced by what went. Returns
 * CONN_FILE_MORE (all n went: call again), CONN_FILE_WAIT (the socket is
 * full, or the queue is not empty yet: hooks.more runs when it has room),
 * CONN_FILE_END (fd has nothing at *off) or -1 (the connection is going).
 * The producer bounds what it sends per call of the loop: after a burst it
 * calls conn_send_file_later, and hooks.more runs at the socket's next
 * room, other connections served in between. */
#define CONN_FILE_WAIT 0
#define CONN_FILE_MORE 1
#define CONN_FILE_END 2
int conn_send_file(struct conn *c, int fd, uint64_t *off, size_t n);
void conn_send_file_later(struct conn *c);

/* Stop reading the request (its body's sink cannot take more for now),
 * and go on. While paused the body timeout does not run: the wait is ours.
 * Bytes already read are still parsed and handed to the sink. */
void conn_pause(struct conn *c);
void conn_resume(struct conn *c);

/* For the server (http/server.c). */
struct conn *conn_open(struct server *s, int fd);
struct conn *conn_next(const struct conn *c);
/* The server stops: idle connections close, a response under way is asked
 * to finish (hooks.stop, else a 503), and every connection closes after it. */
void conn_stop(struct conn *c);
/* Drop the connection now (torn down from the loop). */
void conn_kill(struct conn *c);

#endif
