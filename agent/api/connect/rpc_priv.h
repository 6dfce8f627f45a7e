/*
 * rpc_priv.h - the call record, shared by connect/rpc.c (calls, replies, streams,
 * hooks) and connect/rpc_input.c (the request body of a client-streaming call, read
 * envelope by envelope as it arrives). Nothing else includes it.
 */
#ifndef SA_API_CONNECT_RPC_PRIV_H
#define SA_API_CONNECT_RPC_PRIV_H

#include "agent/api/http/auth.h"
#include "agent/api/connect/rpc.h"
#include "agent/core/buf.h"

struct rpc_call {
    struct conn *conn;  /* NULL once the client left */
    const struct rpc_method *m;
    struct rpc_hooks hooks;
    ev_timer deadline_w, keepalive_w;
    uint64_t timeout_ms;
    int has_timeout;
    unsigned keepalive_s;
    char user[AUTH_USER_MAX + 1];
    int has_user;
    int begun;     /* stream: the HTTP head is out */
    int finished;  /* replied, ended, failed or cancelled */
    int busy;      /* hooks running */
    /* client stream (connect/rpc_input.c) */
    struct rpc_call *in_prev, *in_next; /* calls whose body is being read */
    int reading;
    struct buf pending; /* the part of an envelope read so far */
};

/* Hand control to the handler (counted), and take it back: the last one out
 * frees a finished call. */
void rpc_enter(struct rpc_call *call);
void rpc_leave(struct rpc_call *call);
/* A new call for the request on c, its conn hooks set, its deadline armed. */
struct rpc_call *rpc_call_open(struct conn *c, const struct rpc_method *m);
/* A message as JSON text: a JSON object, parsed; NULL with *why otherwise. */
cJSON *rpc_parse_json(const char *json, size_t n, const char **why);

/* connect/rpc_input.c */
/* At the head of a client-streaming call: read its body as it comes.
 * Returns 0, or -1 after answering. */
int rpc_input_begin(struct conn *c, const struct rpc_method *m);
/* The body ended (from rpc_start). */
void rpc_input_end(struct conn *c);
/* The call is being freed: forget it. */
void rpc_input_release(struct rpc_call *call);

#endif
