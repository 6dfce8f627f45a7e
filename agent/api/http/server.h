/*
 * server.h - the listening socket of `serve` and its connections: accepting
 * (at most max at a time), the per-connection settings, and stopping.
 *
 * Admission: connections none of whose heads passed the application's
 * check yet (untrusted: http/conn.h), or whose client closed its side, never
 * keep out a new one. They have first_head seconds (at most the timeout) to
 * send each head, and at the bound a new connection is accepted by closing
 * the oldest of them; only when every open connection is trusted do
 * newcomers wait in the backlog.
 *
 * Hang-ups: a connection whose client closed its side (its socket is not
 * read any more: it would be readable for ever) is watched for its client
 * gone both ways, a hang-up or an error on the socket, in an epoll set of
 * the server's own whose fd the loop watches; it ends as soon as one comes.
 *
 * What a request means is the application's (routes.c): the server hands it
 * each request head, each complete request, and each request it refuses.
 */
#ifndef SA_API_HTTP_SERVER_H
#define SA_API_HTTP_SERVER_H

#include <ev.h>

struct conn;
struct server;

struct server_app {
    /* The head is complete. Respond now (a refusal: the body is not read) or
     * choose the body's fate (httpreq_body_*; default: a SERVE_BODY_MAX buffer). */
    void (*on_head)(struct conn *c, void *ctx);
    /* The whole request is here: respond now or later. */
    void (*on_request)(struct conn *c, void *ctx);
    /* Answer a request the connection refuses (malformed 400, 408, 413, 431,
     * 503 when stopping): must call conn_respond. */
    void (*on_error)(struct conn *c, int status, const char *why, void *ctx);
    void *ctx;
};

/* After the stop, connections still open after this long are dropped. */
#define SERVER_DRAIN_SECONDS 3.0

typedef void (*server_drained_fn)(struct server *s, void *ctx);

struct server {
    struct ev_loop *loop;
    int fd;              /* listening, non-blocking; -1 once stopped */
    int tcp;             /* a TCP socket (else Unix) */
    ev_io accept_w;
    ev_timer retry_w;    /* accept again after EMFILE and the like */
    ev_timer drain_w;
    unsigned n, max;     /* open connections, and the bound */
    unsigned dying;      /* of them, killed and not yet torn down */
    unsigned next_id;
    double timeout;      /* head, body and unary-write timeout, seconds */
    double first_head;   /* an untrusted connection's head timeout, <= timeout */
    struct server_app app;
    struct conn *conns;  /* every open connection (http/conn.c links them) */
    struct conn *untrusted, *untrusted_last; /* those not trusted, oldest first (http/conn_trust.c) */
    struct conn *unsent; /* those with bytes to send before the loop waits (http/conn_send.c) */
    ev_prepare sender;   /* ... which sends them */
    int hupfd;           /* the epoll set of half-closed connections (-1: none) */
    ev_io hup_w;         /* ... and its watcher */
    int stopping;
    server_drained_fn drained;
    void *drained_ctx;
};

/* Serve connections of the listening socket fd (non-blocking, CLOEXEC). */
void server_start(struct server *s, struct ev_loop *loop, int fd, int tcp, unsigned max,
                  double timeout, double first_head, const struct server_app *app);
/* Stop accepting only: the socket is closed, open connections go on. */
void server_close_listener(struct server *s);

/* Stop accepting (the socket is closed), let every response finish, close
 * every connection; drained runs once the last one is gone (at most
 * SERVER_DRAIN_SECONDS later). */
void server_stop(struct server *s, server_drained_fn drained, void *ctx);

/* For http/conn.c: a connection was torn down; one became a stranger's
 * (a client waiting for a slot may take it). */
void server_conn_closed(struct server *s);
void server_conn_untrusted(struct server *s);
/* Watch fd, c's socket, for a hang-up or an error (see Hang-ups above):
 * conn_kill(c) when one comes. Returns 0, or -1 when it cannot be watched.
 * server_hangup_forget before fd is closed. */
int server_hangup_watch(struct server *s, struct conn *c, int fd);
void server_hangup_forget(struct server *s, int fd);

#endif
