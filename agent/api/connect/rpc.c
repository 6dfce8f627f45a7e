/*
 * rpc.c - Connect calls on a connection (see connect/rpc.h).
 *
 * A call is freed when it finishes, but never under a hook that is running:
 * every place that hands control to the handler counts itself in `busy`,
 * and the last one out frees a finished call. So a handler may finish the
 * call from any hook (or from start) and the code around it stays valid.
 */
#include "agent/api/connect/rpc_priv.h"
#include "agent/api/http/auth.h"
#include "agent/core/jsonbytes.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <stdlib.h>
#include <string.h>

static unsigned open_calls;
static struct buf scratch; /* one envelope or error body at a time */

unsigned rpc_open_calls(void) { return open_calls; }
const char *rpc_user(const struct rpc_call *call) { return call->has_user ? call->user : NULL; }
const struct rpc_method *rpc_method_of(const struct rpc_call *call) { return call->m; }

int rpc_timeout(const struct rpc_call *call, uint64_t *ms)
{
    if (call->has_timeout) *ms = call->timeout_ms;
    return call->has_timeout;
}

const char *rpc_header(const struct rpc_call *call, const char *name)
{
    return call->conn ? httpreq_header(conn_req(call->conn), name) : NULL;
}

static struct buf *scratch_buf(void)
{
    if (!scratch.max) buf_init(&scratch, CONN_QUEUE_MAX);
    buf_reset(&scratch);
    return &scratch;
}

static void stop_timers(struct rpc_call *call)
{
    if (!call->conn) return;
    ev_timer_stop(conn_loop(call->conn), &call->deadline_w);
    ev_timer_stop(conn_loop(call->conn), &call->keepalive_w);
}

void rpc_enter(struct rpc_call *call) { call->busy++; }

void rpc_leave(struct rpc_call *call)
{
    if (--call->busy > 0 || !call->finished) return;
    open_calls--;
    rpc_input_release(call);
    if (call->hooks.release) call->hooks.release(call->hooks.ctx);
    free(call);
}

/* The call is over: no more events; freed once no hook is running. */
static void finish(struct rpc_call *call)
{
    static const struct conn_hooks none;
    stop_timers(call);
    if (call->conn) conn_set_hooks(call->conn, &none);
    call->finished = 1;
    rpc_enter(call);
    rpc_leave(call);
}

void rpc_http_error(struct conn *c, int status, enum rpc_code code, const char *msg,
                    const char *extra)
{
    struct buf *b = scratch_buf();
    if (connect_error_json(b, code, msg) < 0) buf_reset(b);
    conn_respond(c, status, CONNECT_CT_UNARY, extra, b->data, b->len);
}

void rpc_error_response(struct conn *c, enum rpc_code code, const char *msg, const char *extra)
{
    rpc_http_error(c, connect_code_status(code), code, msg, extra);
}

static int begin_stream(struct rpc_call *call)
{
    if (call->begun) return 0;
    call->begun = 1;
    return conn_stream_begin(call->conn, 200, CONNECT_CT_STREAM, NULL);
}

static int end_stream(struct rpc_call *call, enum rpc_code code, const char *msg);

int rpc_reply(struct rpc_call *call, const char *json, size_t n)
{
    if (call->finished || call->m->kind == RPC_KIND_STREAM) return -1;
    if (call->m->kind == RPC_KIND_CLIENT_STREAM) { /* the message, then the end */
        struct buf *b = scratch_buf();
        if (begin_stream(call) < 0 || connect_envelope_put(b, 0, json, n) < 0 ||
            conn_write(call->conn, b->data, b->len) < 0) {
            conn_kill(call->conn);
            finish(call);
            return -1;
        }
        return end_stream(call, RPC_OK, NULL);
    }
    int rc = conn_respond(call->conn, 200, CONNECT_CT_UNARY, NULL, json, n);
    finish(call);
    return rc;
}

char *rpc_send_begin(struct rpc_call *call, size_t n)
{
    if (call->finished || call->m->kind != RPC_KIND_STREAM || begin_stream(call) < 0) return NULL;
    if (n > 0xffffffffu - CONNECT_ENVELOPE_HEAD) {
        log_warn("api: %s: a message of %zu bytes is too large; dropping the call", call->m->path, n);
        conn_kill(call->conn); /* cancel follows, as for any lost connection */
        return NULL;
    }
    /* The envelope is written in the connection's queue, the message after it. */
    unsigned char *e = (unsigned char *)conn_write_begin(call->conn, CONNECT_ENVELOPE_HEAD + n);
    if (!e) return NULL;
    e[0] = 0;
    e[1] = (unsigned char)(n >> 24);
    e[2] = (unsigned char)(n >> 16);
    e[3] = (unsigned char)(n >> 8);
    e[4] = (unsigned char)n;
    return (char *)e + CONNECT_ENVELOPE_HEAD;
}

int rpc_send_end(struct rpc_call *call) { return call->conn ? conn_write_end(call->conn) : -1; }

int rpc_send(struct rpc_call *call, const char *json, size_t n)
{
    char *d = rpc_send_begin(call, n);
    if (!d) return -1;
    memcpy(d, json, n);
    return rpc_send_end(call);
}

/* The end-stream message, with code (RPC_OK: none). A stream that cannot
 * be ended properly loses its connection, so the client sees it end. */
static int end_stream(struct rpc_call *call, enum rpc_code code, const char *msg)
{
    struct buf body, *b = scratch_buf();
    buf_init(&body, CONN_QUEUE_MAX / 2);
    int rc = begin_stream(call);
    if (rc == 0 && (connect_end_json(&body, code, msg) < 0 ||
                    connect_envelope_put(b, CONNECT_FLAG_END, body.data, body.len) < 0 ||
                    conn_write(call->conn, b->data, b->len) < 0 ||
                    conn_stream_end(call->conn) < 0)) {
        conn_kill(call->conn);
        rc = -1;
    }
    buf_free(&body);
    finish(call);
    return rc;
}

int rpc_end(struct rpc_call *call)
{
    if (call->finished || call->m->kind != RPC_KIND_STREAM) return -1;
    return end_stream(call, RPC_OK, NULL);
}

int rpc_fail(struct rpc_call *call, enum rpc_code code, const char *msg)
{
    if (call->finished) return -1;
    if (call->m->kind != RPC_KIND_UNARY) return end_stream(call, code, msg);
    rpc_error_response(call->conn, code, msg, NULL);
    finish(call);
    return 0;
}

/* ---- events from the connection and the timers ---- */

static void on_more(struct conn *c, void *ctx)
{
    struct rpc_call *call = ctx;
    if (call->finished || !call->hooks.more) return;
    rpc_enter(call);
    call->hooks.more(call, call->hooks.ctx);
    rpc_leave(call);
}

static void on_gone(struct conn *c, void *ctx)
{
    struct rpc_call *call = ctx;
    log_debug("api: %s: the client left", call->m->path);
    stop_timers(call);
    call->conn = NULL;
    call->finished = 1;
    rpc_enter(call);
    if (call->hooks.cancel) call->hooks.cancel(call, call->hooks.ctx);
    rpc_leave(call);
}

static void on_stop(struct conn *c, void *ctx)
{
    struct rpc_call *call = ctx;
    rpc_enter(call);
    if (call->hooks.stop) call->hooks.stop(call, call->hooks.ctx);
    if (!call->finished) rpc_fail(call, RPC_UNAVAILABLE, "the agent is shutting down");
    rpc_leave(call);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rpc_call *call = w->data;
    rpc_enter(call);
    if (call->hooks.deadline) call->hooks.deadline(call, call->hooks.ctx);
    else rpc_fail(call, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
    rpc_leave(call);
}

static void keepalive(struct rpc_call *call)
{
    if (call->finished || !call->hooks.keepalive || call->m->kind != RPC_KIND_STREAM) return;
    rpc_enter(call);
    call->hooks.keepalive(call, call->hooks.ctx);
    rpc_leave(call);
}

static void on_keepalive(struct ev_loop *loop, ev_timer *w, int revents) { keepalive(w->data); }

/* The client closed its side: a keepalive now, which a client gone both
 * ways answers with a reset (http/conn.h, hooks.eof). */
static void on_eof(struct conn *c, void *ctx) { keepalive(ctx); }

void rpc_set_hooks(struct rpc_call *call, const struct rpc_hooks *h)
{
    call->hooks = *h;
    if (!call->conn || call->finished) return;
    struct ev_loop *loop = conn_loop(call->conn);
    int want = h->keepalive && call->m->kind == RPC_KIND_STREAM;
    if (want && !ev_is_active(&call->keepalive_w)) {
        ev_timer_set(&call->keepalive_w, call->keepalive_s, call->keepalive_s);
        ev_timer_start(loop, &call->keepalive_w);
    } else if (!want) {
        ev_timer_stop(loop, &call->keepalive_w);
    }
}

/* ---- the request ---- */

/* A header that must not appear twice; NULL when absent. -1 when repeated. */
static int single_header(const struct httpreq *r, const char *name, const char **v)
{
    *v = httpreq_header(r, name);
    return httpreq_header_count(r, name) > 1 ? -1 : 0;
}

/* 1 when the message encoding named by header `name` is not plain. */
static int compressed(const struct httpreq *r, const char *name)
{
    const char *v = httpreq_header(r, name);
    return httpreq_header_count(r, name) > 0 && (!v || strcmp(v, "identity") != 0);
}

/* The Connect headers. Returns 0, or -1 after answering. */
static int check_connect_headers(struct conn *c, const struct rpc_method *m)
{
    const struct httpreq *r = conn_req(c);
    const char *v;
    uint64_t ms;
    char user[AUTH_USER_MAX + 1];
    int stream = m->kind != RPC_KIND_UNARY;
    if (connect_ctype(httpreq_header(r, "Content-Type")) !=
        (stream ? CONNECT_CTYPE_STREAM : CONNECT_CTYPE_UNARY)) {
        rpc_http_error(c, 415, RPC_INVALID_ARGUMENT,
                       stream ? "Content-Type must be " CONNECT_CT_STREAM
                              : "Content-Type must be " CONNECT_CT_UNARY,
                       stream ? "Accept-Post: " CONNECT_CT_STREAM "\r\n"
                              : "Accept-Post: " CONNECT_CT_UNARY "\r\n");
        return -1;
    }
    if ((v = httpreq_header(r, "Connect-Protocol-Version")) && strcmp(v, "1") != 0) {
        rpc_error_response(c, RPC_INVALID_ARGUMENT, "Connect-Protocol-Version must be 1", NULL);
        return -1;
    }
    if (compressed(r, "Content-Encoding") || compressed(r, "Connect-Content-Encoding")) {
        rpc_error_response(c, RPC_UNIMPLEMENTED, "compressed requests are not supported", NULL);
        return -1;
    }
    if (single_header(r, "Connect-Timeout-Ms", &v) < 0 || (v && connect_timeout_ms(v, &ms) < 0)) {
        rpc_error_response(c, RPC_INVALID_ARGUMENT, "Connect-Timeout-Ms must be 1 to 10 digits",
                           NULL);
        return -1;
    }
    if (single_header(r, "Authorization", &v) < 0 || (v && auth_basic_user(v, user) < 0)) {
        rpc_error_response(c, RPC_UNAUTHENTICATED,
                           "Authorization must be Basic base64(\"user:\")", NULL);
        return -1;
    }
    return 0;
}

int rpc_check_head(struct conn *c, const struct rpc_method *m)
{
    struct httpreq *r = conn_req(c);
    if (httpreq_method(r) != HTTP_POST) {
        rpc_http_error(c, 405, RPC_UNIMPLEMENTED, "RPCs are POST requests", "Allow: POST\r\n");
        return -1;
    }
    if (check_connect_headers(c, m) < 0) return -1;
    if (m->kind == RPC_KIND_CLIENT_STREAM) return rpc_input_begin(c, m);
    if (httpreq_body_buffer(r, SERVE_BODY_MAX) < 0) { /* 413, or 429: the memory budget */
        int st = httpreq_status(r);
        rpc_http_error(c, st, RPC_RESOURCE_EXHAUSTED,
                       st == 413 ? "request message larger than 16 MiB" : httpreq_why(r), NULL);
        return -1;
    }
    return 0;
}

/* The request message as JSON text; NULL with *why when it is not one. */
static const char *message_text(const struct rpc_method *m, const struct buf *body, size_t *n,
                                const char **why)
{
    struct connect_envelope e;
    const char *json = body->data;
    *n = body->len;
    if (m->kind == RPC_KIND_STREAM) {
        if (connect_request_message(body->data, body->len, &e, why) < 0) return NULL;
        json = e.msg;
        *n = e.len;
    }
    if (*n == 0) { /* an empty message, as proto3 writes it */
        *n = 2;
        return "{}";
    }
    return json;
}

cJSON *rpc_parse_json(const char *json, size_t n, const char **why)
{
    struct jsoncheck jc;
    if (n == 0) { /* an empty message, as proto3 writes it */
        json = "{}";
        n = 2;
    }
    if (jsoncheck(json, n, &jc) < 0 || jc.type != JSON_OBJECT) {
        *why = "the request message is not a JSON object";
        return NULL;
    }
    /* A C string ends at a NUL: "a\u0000b" would name "a". */
    if (jc.has_nul) {
        *why = "a string of the request message holds \\u0000";
        return NULL;
    }
    /* \udcXX escapes (bytes that are not UTF-8) become the bytes again. */
    char *text = malloc(n);
    cJSON *msg = NULL;
    if (text) {
        memcpy(text, json, n);
        msg = cJSON_ParseWithLength(text, jsonbytes_unescape(text, n));
        free(text);
    }
    if (!msg) *why = "the request message cannot be decoded";
    return msg;
}

static cJSON *parse_message(const struct rpc_method *m, const struct buf *body, const char **why)
{
    size_t n;
    const char *json = message_text(m, body, &n, why);
    return json ? rpc_parse_json(json, n, why) : NULL;
}

static struct rpc_call *call_new(struct conn *c, const struct rpc_method *m)
{
    const struct httpreq *r = conn_req(c);
    struct rpc_call *call = calloc(1, sizeof *call);
    if (!call) return NULL;
    call->conn = c;
    call->m = m;
    const char *v = httpreq_header(r, "Connect-Timeout-Ms");
    call->has_timeout = v && connect_timeout_ms(v, &call->timeout_ms) == 0;
    if (connect_keepalive_s(httpreq_header(r, "Keepalive-Ping-Interval"), &call->keepalive_s) < 0)
        call->keepalive_s = RPC_KEEPALIVE_DEFAULT;
    v = httpreq_header(r, "Authorization");
    call->has_user = v && auth_basic_user(v, call->user) == 0;
    ev_init(&call->deadline_w, on_deadline);
    ev_init(&call->keepalive_w, on_keepalive);
    call->deadline_w.data = call->keepalive_w.data = call;
    open_calls++;
    return call;
}

struct rpc_call *rpc_call_open(struct conn *c, const struct rpc_method *m)
{
    struct rpc_call *call = call_new(c, m);
    if (!call) {
        rpc_error_response(c, RPC_RESOURCE_EXHAUSTED, "out of memory", NULL);
        return NULL;
    }
    struct conn_hooks h = {.more = on_more, .gone = on_gone, .stop = on_stop, .eof = on_eof,
                           .ctx = call};
    conn_set_hooks(c, &h);
    if (call->has_timeout) {
        ev_timer_set(&call->deadline_w, (double)call->timeout_ms / 1000.0, 0);
        ev_timer_start(conn_loop(c), &call->deadline_w);
    }
    return call;
}

void rpc_start(struct conn *c, const struct rpc_method *m)
{
    const char *why = NULL;
    if (m->kind == RPC_KIND_CLIENT_STREAM) {
        rpc_input_end(c);
        return;
    }
    struct rpc_call *call = rpc_call_open(c, m);
    if (!call) return;
    cJSON *msg = parse_message(m, httpreq_body(conn_req(c)), &why);
    rpc_enter(call);
    if (!msg) rpc_fail(call, RPC_INVALID_ARGUMENT, why);
    else m->start(call, msg);
    cJSON_Delete(msg);
    rpc_leave(call);
}
