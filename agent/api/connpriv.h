/*
 * connpriv.h - the connection record, shared by the two halves of a
 * connection: conn.c (reading requests, states, timers, the end) and
 * respond.c (writing responses through the output queue). Nothing outside
 * those two files includes it.
 */
#ifndef SA_SERVE_CONNPRIV_H
#define SA_SERVE_CONNPRIV_H

#include "agent/api/conn.h"
#include "agent/api/httpresp.h"
#include "agent/api/outq.h"

#include <ev.h>

enum conn_state { ST_HEAD, ST_BODY, ST_HANDLE, ST_RESPOND, ST_LINGER };

struct conn {
    struct server *srv;
    struct conn *prev, *next;
    struct conn *fprev, *fnext; /* the server's untrusted list, oldest first */
    int fd;
    unsigned id;
    ev_io rio, wio;
    ev_timer timer;
    double since;          /* start of the wait, or the last progress */
    enum conn_state st;
    struct httpreq req;
    struct outq out;
    struct conn_hooks hooks;
    enum httpresp_framing framing;
    struct buf held;          /* bytes of the next request, read before this one
                                 was answered: one read at most (CONN_HOLD_MAX) */
    size_t discarded;
    unsigned got_bytes : 1;   /* some of this request's head arrived */
    unsigned have_head : 1;   /* ... all of it */
    unsigned req_done : 1;    /* the request is read (or will not be) */
    unsigned responded : 1;   /* the response has begun */
    unsigned finished : 1;    /* ... and is wholly queued */
    unsigned streaming : 1;
    unsigned blocked : 1;     /* conn_write returned 0: call more when drained */
    unsigned close_after : 1;
    unsigned dying : 1;
    unsigned paused : 1;      /* conn_pause: the body's sink is full */
    unsigned trusted : 1;     /* conn_trust: a head passed the application's check */
    unsigned listed : 1;      /* on the server's untrusted list */
    unsigned peer_eof : 1;    /* the client closed its side after a whole request */
};

/* (Re)arm the timer of the state; the wait counts from c->since. */
void conn_timer_arm(struct conn *c);
/* Request read and response written: on to the next request, or close. */
void conn_maybe_next(struct conn *c);
/* Write what the socket takes. Returns 0, or -1 when the connection failed. */
int conn_flush(struct conn *c);

#endif
