/*
 * conn_trust.c - whose slot a connection holds (see http/conn.h, Trust):
 * the server's list of strangers' connections, oldest first, which a
 * newcomer at the bound displaces (http/server.c); trust, given by a head
 * that passed the application's check as it stands, and taken back when
 * that check changes (a new token: conn_trust_revoke) or when the client
 * closes its side (a half-closed connection only waits for its response,
 * and no client can be told from one that is gone: http/conn.c, on_eof).
 */
#include "agent/api/http/conn_priv.h"
#include "agent/api/http/server.h"
#include "agent/core/log.h"

void conn_trust_list(struct conn *c)
{
    struct server *s = c->srv;
    if (c->listed) return;
    c->fprev = s->untrusted_last;
    c->fnext = NULL;
    if (s->untrusted_last) s->untrusted_last->fnext = c;
    else s->untrusted = c;
    s->untrusted_last = c;
    c->listed = 1;
}

void conn_trust_unlist(struct conn *c)
{
    struct server *s = c->srv;
    if (!c->listed) return;
    if (c->fprev) c->fprev->fnext = c->fnext;
    else s->untrusted = c->fnext;
    if (c->fnext) c->fnext->fprev = c->fprev;
    else s->untrusted_last = c->fprev;
    c->fprev = c->fnext = NULL;
    c->listed = 0;
}

void conn_trust(struct conn *c)
{
    if (c->trusted || c->dying || c->peer_eof) return; /* a half-closed one stays a stranger's */
    c->trusted = 1;
    conn_trust_unlist(c);
}

void conn_trust_drop(struct conn *c)
{
    if (c->dying || c->listed) return;
    c->trusted = 0;
    conn_trust_list(c);
    if (c->st == ST_HEAD) conn_timer_arm(c); /* idle: the first-head deadline now */
    server_conn_untrusted(c->srv); /* a client waiting for a slot may take this one */
}

/* A request whose body is still being handed to its sink (an upload, a
 * client stream) applies it as it comes: what comes after the change is
 * no longer authorised, and no status can be sent in the middle of it. */
void conn_trust_revoke(struct conn *c)
{
    struct conn *o = c->srv->conns;
    while (o && o->next) o = o->next;
    /* Oldest first (the newest is the list's head), as the strangers' list
     * goes; conn_kill frees nothing. */
    for (; o; o = o->prev) {
        if (o->dying) continue;
        if (o->st == ST_BODY && o->req.sink) {
            log_info("api: connection %u: the access token changed while its request's body "
                     "came; dropping it", o->id);
            conn_kill(o);
            continue;
        }
        conn_trust_drop(o);
    }
}
