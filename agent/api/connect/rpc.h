/*
 * rpc.h - one Connect call (unary or server-streaming, JSON codec) on a
 * connection: checking the request, decoding its message, and the handler's
 * side: replying, streaming messages with back-pressure, ending, and being
 * told of the client leaving, the deadline, keepalives and the agent stopping.
 *
 * A handler gets the call and the decoded request message (valid only during
 * the start call: copy what you keep). It answers at once or later:
 *   unary   rpc_reply(json) or rpc_fail(code, message)
 *   stream  rpc_send(json) any number of times, then rpc_end() or
 *           rpc_fail(code, message) (the end-stream message carries the error;
 *           the HTTP status is 200 either way, as Connect wants)
 *   client stream (a request body of envelopes, read as it arrives): start
 *           runs at the request head with msg NULL and sets hooks.message,
 *           called with each envelope's message as it is decoded (valid
 *           during the call only), and hooks.input_end, at the end
 *           of the body; rpc_reply(json) answers with that message and the
 *           end-stream message, rpc_fail(code, message) with an error (at any
 *           point: the rest of the body is then read and dropped)
 * Finishing frees the call: do not touch it afterwards. If the client goes
 * first, hooks.cancel runs instead (the last event; the call is freed after
 * it returns and rpc_* calls on it return -1 meanwhile).
 */
#ifndef SA_API_CONNECT_RPC_H
#define SA_API_CONNECT_RPC_H

#include "agent/api/http/conn.h"
#include "agent/api/connect/connect.h"

#include <cJSON.h>
#include <stdint.h>

struct rpc_call;

enum rpc_kind { RPC_KIND_UNARY, RPC_KIND_STREAM, RPC_KIND_CLIENT_STREAM };

typedef void (*rpc_start_fn)(struct rpc_call *call, const cJSON *msg);

struct rpc_method {
    const char *path; /* "/process.Process/Start" */
    enum rpc_kind kind;
    rpc_start_fn start;
};

struct rpc_hooks {
    void (*more)(struct rpc_call *call, void *ctx);      /* stream: rpc_send may go on */
    void (*cancel)(struct rpc_call *call, void *ctx);    /* the client left: forget the call */
    void (*stop)(struct rpc_call *call, void *ctx);      /* the agent stops: finish now */
    void (*deadline)(struct rpc_call *call, void *ctx);  /* Connect-Timeout-Ms ran out */
    void (*keepalive)(struct rpc_call *call, void *ctx); /* stream: every keepalive interval */
    void (*message)(struct rpc_call *call, const cJSON *msg, void *ctx); /* client stream */
    void (*input_end)(struct rpc_call *call, void *ctx); /* client stream: the body ended */
    void (*release)(void *ctx); /* the call is being freed, however it ended: the very last */
    void *ctx;
};

/* Without hooks.stop a call still open when the agent stops ends with
 * `unavailable`; without hooks.deadline, with `deadline_exceeded`. Keepalives
 * run every Keepalive-Ping-Interval seconds, else every RPC_KEEPALIVE_DEFAULT,
 * while hooks.keepalive is set. */
#define RPC_KEEPALIVE_DEFAULT 50u

void rpc_set_hooks(struct rpc_call *call, const struct rpc_hooks *h);

/* The user an `Authorization: Basic` header names, or NULL (the default user). */
const char *rpc_user(const struct rpc_call *call);
/* Connect-Timeout-Ms: 1 and *ms when the call has one, else 0. */
int rpc_timeout(const struct rpc_call *call, uint64_t *ms);
/* A request header (see httpreq_header). */
const char *rpc_header(const struct rpc_call *call, const char *name);
const struct rpc_method *rpc_method_of(const struct rpc_call *call);

/* Unary or client stream: the response message (JSON text). Returns 0, or -1. */
int rpc_reply(struct rpc_call *call, const char *json, size_t n);
/* Stream: one message. Returns 1 (room for more), 0 (sent, but wait for
 * hooks.more before the next) or -1 (not sent: the connection is going and
 * hooks.cancel follows; or the call is already over). */
int rpc_send(struct rpc_call *call, const char *json, size_t n);
/* rpc_send in two steps, for a message written in place: room for exactly
 * n bytes of JSON (NULL as rpc_send's -1), filled before the next rpc_* or
 * conn_* call, then rpc_send_end, which returns what rpc_send would have. */
char *rpc_send_begin(struct rpc_call *call, size_t n);
int rpc_send_end(struct rpc_call *call);
/* Stream: the end-stream message {}. Returns 0, or -1. */
int rpc_end(struct rpc_call *call);
/* Either kind: end with an error (msg may be NULL). Returns 0, or -1. */
int rpc_fail(struct rpc_call *call, enum rpc_code code, const char *msg);

/* For routes.c. A Connect error response outside any call, with the code's
 * status or another one (405, 415, 413, ...); extra as for conn_respond. */
void rpc_error_response(struct conn *c, enum rpc_code code, const char *msg, const char *extra);
void rpc_http_error(struct conn *c, int status, enum rpc_code code, const char *msg,
                    const char *extra);
/* At the request head: refuse (answering at once) what cannot be this
 * method's call. Returns 0 to read the body, -1 when refused. */
int rpc_check_head(struct conn *c, const struct rpc_method *m);
/* The request is complete: decode its message and start the handler (a
 * client stream: its input ended). */
void rpc_start(struct conn *c, const struct rpc_method *m);
/* Calls open now (for tests and logs). */
unsigned rpc_open_calls(void);

#endif
