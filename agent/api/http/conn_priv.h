/*
 * conn_priv.h - what the parts of a connection share: its record, and the
 * calls between http/conn.c (requests in, the states, responses queued),
 * http/conn_send.c (the bytes sent: once per loop turn, and files by
 * sendfile) and http/conn_trust.c (whose slot it is: trust, the server's
 * list of strangers' connections). Nothing outside agent/api/http
 * includes it.
 */
#ifndef SA_API_HTTP_CONN_PRIV_H
#define SA_API_HTTP_CONN_PRIV_H

#include "agent/api/http/conn.h"
#include "agent/api/http/httpreq.h"
#include "agent/api/http/httpresp.h"
#include "agent/api/http/outq.h"
#include "agent/core/buf.h"

#include <ev.h>

enum conn_state { ST_HEAD, ST_BODY, ST_HANDLE, ST_RESPOND, ST_LINGER };

struct conn {
    struct server *srv;
    struct conn *prev, *next;
    struct conn *fprev, *fnext; /* the server's untrusted list, oldest first */
    struct conn *uprev, *unext; /* the connections with bytes to send this turn */
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
    unsigned hangup : 1;      /* ... and the server watches for it gone both ways */
    unsigned unsent : 1;      /* on the unsent list: sent before the loop waits */
};

/* http/conn.c: (re)arm the timer for the state; the next request or the
 * end once a response is out. */
void conn_timer_arm(struct conn *c);
void conn_maybe_next(struct conn *c);

/* http/conn_send.c: write what the socket takes (0, or -1 when the
 * connection failed and was killed); send c's bytes before the loop waits;
 * take c off that list; and, for a connection being killed, send what this
 * turn queued as far as the socket takes it. */
int conn_send_flush(struct conn *c);
void conn_send_later(struct conn *c);
void conn_send_unlist(struct conn *c);
void conn_send_pending(struct conn *c);

/* http/conn_trust.c: c on the server's list of strangers' connections (a
 * new one), off it (killed); and c a stranger's again (its client closed
 * its side, or the check changed: conn_trust_revoke). */
void conn_trust_list(struct conn *c);
void conn_trust_unlist(struct conn *c);
void conn_trust_drop(struct conn *c);

#endif
