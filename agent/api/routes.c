/*
 * routes.c - requests to handlers (see routes.h): the one table of routes,
 * a row each, read by every function below.
 *
 * Who may make a request is its row's rule (README "sandbox-agent serve"):
 *   ROUTES_OPEN    anyone (GET /health, as envd's: a Kubernetes probe
 *                  cannot send a token)
 *   ROUTES_INIT    the token, or anyone while the API awaits its first one
 *                  (POST /init, which sets it)
 *   ROUTES_TOKEN   the token (X-Access-Token): everything else
 *   ROUTES_SIGNED  the token, or, with no token sent, a signature of the
 *                  request's path, user and operation (GET and POST
 *                  /files: http/sign.h), as envd's: a token sent wins and
 *                  must be right
 * No token set: everyone. While the API awaits its token
 * (SANDBOX_AGENT_AWAIT_TOKEN=1, ops/token.h) only the OPEN and INIT rows
 * answer; the rest is 503 `unavailable` until an /init sets one.
 * A request that proves the current token trusts its connection
 * (conn_trust: strangers cannot displace it, http/server.h "Admission");
 * /health without it, /init while awaiting and a signature do not.
 * The rule is applied at the head and again when the request is complete,
 * against the token as it is then: an /init may have set or replaced it
 * while the body came (conn_trust_revoke drops what a body handed to a
 * sink would still apply), and what the old token allowed is not done;
 * the second time a signature's expiration is not looked at again (the
 * body of an upload that started in time may end after it).
 * Refusals (the rule, the method) are Connect's JSON {"code", "message"},
 * but on the /files routes, which answer envd's {"code": 401, "message"}.
 */
#include "agent/api/routes.h"
#include "agent/api/process/process.h"
#include "agent/api/rest/compose.h"
#include "agent/api/rest/files.h"
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/http/sign.h"
#include "agent/api/ops/collapse.h"
#include "agent/api/ops/freeze.h"
#include "agent/api/ops/fsfreeze.h"
#include "agent/api/ops/init.h"
#include "agent/api/ops/metrics.h"
#include "agent/api/ops/token.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

enum routes_auth { ROUTES_OPEN, ROUTES_INIT, ROUTES_TOKEN, ROUTES_SIGNED };

#define ROUTES_GET (1u << HTTP_GET)
#define ROUTES_POST (1u << HTTP_POST)

struct route {
    const char *path;
    unsigned methods;                /* ROUTES_GET | ROUTES_POST answered (0: an RPC checks its own) */
    enum routes_auth auth;
    int envd_errors;                 /* refusals as envd's /files writes them, not Connect's */
    void (*head)(struct conn *c);    /* the head is here: choose the body's fate, or refuse (NULL:
                                      * a unary body, buffered: SERVE_BODY_MAX) */
    void (*request)(struct conn *c); /* the whole request is here */
    struct rpc_method rpc;           /* an RPC's kind and handler (rpc.path NULL: none) */
};

#define REST(p, m, auth, envd, head, request) {p, m, auth, envd, head, request, {NULL, 0, NULL}}
#define RPC(p, kind, start) {p, 0, ROUTES_TOKEN, 0, NULL, NULL, {p, kind, start}}

static void health(struct conn *c) { conn_respond(c, 204, NULL, NULL, "", 0); }

static void envs(struct conn *c)
{
    struct buf b;
    buf_init(&b, SERVE_BODY_MAX);
    if (process_envs_json(&b) < 0) rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
    else conn_respond(c, 200, CONNECT_CT_UNARY, NULL, b.data, b.len);
    buf_free(&b);
}

static void fsfreeze(struct conn *c) { ops_fsfreeze_respond(c, 1); }
static void fsthaw(struct conn *c) { ops_fsfreeze_respond(c, 0); }

static const struct route routes[] = {
    REST(ROUTE_HEALTH, ROUTES_GET, ROUTES_OPEN, 0, NULL, health),
    REST(ROUTE_ENVS, ROUTES_GET, ROUTES_TOKEN, 0, NULL, envs),
    REST(ROUTE_METRICS, ROUTES_GET, ROUTES_TOKEN, 0, NULL, ops_metrics_respond),
    REST(ROUTE_INIT, ROUTES_POST, ROUTES_INIT, 0, NULL, ops_init_respond),
    REST(ROUTE_FREEZE, ROUTES_POST, ROUTES_TOKEN, 0, NULL, ops_freeze_respond),
    REST(ROUTE_UNFREEZE, ROUTES_POST, ROUTES_TOKEN, 0, NULL, ops_freeze_thaw_respond),
    REST(ROUTE_FSFREEZE, ROUTES_POST, ROUTES_TOKEN, 0, NULL, fsfreeze),
    REST(ROUTE_FSTHAW, ROUTES_POST, ROUTES_TOKEN, 0, NULL, fsthaw),
    REST(ROUTE_COLLAPSE, ROUTES_POST, ROUTES_TOKEN, 0, NULL, ops_collapse_respond),
    REST(ROUTE_FILES, ROUTES_GET | ROUTES_POST, ROUTES_SIGNED, 1, rest_files_on_head, rest_files_on_request),
    REST(ROUTE_FILES_COMPOSE, ROUTES_POST, ROUTES_TOKEN, 1, rest_compose_on_head, rest_compose_on_request),
    RPC("/process.Process/Start", RPC_KIND_STREAM, process_stream_start),
    RPC("/process.Process/Connect", RPC_KIND_STREAM, process_stream_connect),
    RPC("/process.Process/List", RPC_KIND_UNARY, process_control_list),
    RPC("/process.Process/SendInput", RPC_KIND_UNARY, process_control_send_input),
    RPC("/process.Process/StreamInput", RPC_KIND_CLIENT_STREAM, process_control_stream_input),
    RPC("/process.Process/SendSignal", RPC_KIND_UNARY, process_control_send_signal),
    RPC("/process.Process/CloseStdin", RPC_KIND_UNARY, process_control_close_stdin),
    RPC("/process.Process/Update", RPC_KIND_UNARY, process_control_update),
    RPC("/filesystem.Filesystem/Stat", RPC_KIND_UNARY, filesystem_stat),
    RPC("/filesystem.Filesystem/MakeDir", RPC_KIND_UNARY, filesystem_make_dir),
    RPC("/filesystem.Filesystem/Move", RPC_KIND_UNARY, filesystem_move),
    RPC("/filesystem.Filesystem/ListDir", RPC_KIND_UNARY, filesystem_list_dir),
    RPC("/filesystem.Filesystem/Remove", RPC_KIND_UNARY, filesystem_remove),
    RPC("/filesystem.Filesystem/WatchDir", RPC_KIND_STREAM, filesystem_watchdir),
    RPC("/filesystem.Filesystem/CreateWatcher", RPC_KIND_UNARY, filesystem_watchers_create),
    RPC("/filesystem.Filesystem/GetWatcherEvents", RPC_KIND_UNARY, filesystem_watchers_get_events),
    RPC("/filesystem.Filesystem/RemoveWatcher", RPC_KIND_UNARY, filesystem_watchers_remove),
};

/* What a request to a path in no row is: the token's, refused Connect's way. */
static const struct route unknown = {NULL, 0, ROUTES_TOKEN, 0, NULL, NULL, {NULL, 0, NULL}};

static const struct route *route_of(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(routes[i].path, path)) return &routes[i];
    return &unknown;
}

/* ---- refusals ---- */

/* The code a client reads from a refusal of the HTTP layer. */
static enum rpc_code code_for_status(int status)
{
    switch (status) {
    case 401: return RPC_UNAUTHENTICATED;
    case 404: return RPC_NOT_FOUND;
    case 405: case 501: case 505: return RPC_UNIMPLEMENTED;
    case 408: return RPC_DEADLINE_EXCEEDED;
    case 413: case 429: case 431: return RPC_RESOURCE_EXHAUSTED;
    case 503: return RPC_UNAVAILABLE;
    default: return status >= 500 ? RPC_INTERNAL : RPC_INVALID_ARGUMENT;
    }
}

/* status and msg, as the row answers errors; extra as for conn_respond. */
static void refuse(struct conn *c, const struct route *rt, int status, const char *msg, const char *extra)
{
    if (rt->envd_errors) rest_files_error_extra(c, status, msg, extra);
    else rpc_http_error(c, status, code_for_status(status), msg, extra);
}

/* 405 with the methods the row answers. */
static void refuse_method(struct conn *c, const struct route *rt)
{
    int both = (rt->methods & (ROUTES_GET | ROUTES_POST)) == (ROUTES_GET | ROUTES_POST);
    const char *names = both ? "GET, POST" : rt->methods & ROUTES_GET ? "GET" : "POST";
    char msg[32], allow[32];
    snprintf(msg, sizeof msg, "only %s", both ? "GET and POST" : names);
    snprintf(allow, sizeof allow, "Allow: %s\r\n", names);
    refuse(c, rt, 405, msg, allow);
}

/* ---- who may ---- */

/* A signed row without the token: the signature must grant this request. */
static int signed_ok(struct conn *c, const struct route *rt, const struct sign_params *p, int at_head)
{
    const char *op = httpreq_method(conn_req(c)) == HTTP_POST ? SIGNATURE_WRITE : SIGNATURE_READ;
    enum sign_verdict v = ops_token_signed(p, op, at_head ? (int64_t)time(NULL) : INT64_MIN);
    if (v == SIGN_OK) return 1;
    refuse(c, rt, 401, sign_message(v), NULL);
    return 0;
}

/* The X-Access-Token header, when the request sends one: once and not
 * empty (as Go's Header.Get reads "" as none); a repeated one is sent, and
 * wrong. */
static int token_sent(struct conn *c, const char **token)
{
    const struct httpreq *r = conn_req(c);
    unsigned n = httpreq_header_count(r, HEADER_ACCESS_TOKEN);
    *token = httpreq_header(r, HEADER_ACCESS_TOKEN);
    return n > 1 || (n == 1 && **token);
}

/* GET and POST /files: the parameters first (envd binds them before it
 * checks), then a token sent, which must be right, else the signature. */
static int signed_admitted(struct conn *c, const struct route *rt, int sent, const char *token, int at_head)
{
    struct sign_params p;
    char err[ERR_LEN];
    int ok = sign_params_parse(httpreq_query(conn_req(c)), &p, err) == 0;
    if (!ok) {
        refuse(c, rt, 400, err, NULL);
    } else if (!ops_token_present() || (sent && ops_token_ok(token))) {
        conn_trust(c);
    } else if (sent) {
        refuse(c, rt, 401, "access token present in header but does not match", NULL);
        ok = 0;
    } else {
        ok = signed_ok(c, rt, &p, at_head); /* and trusts nothing: a signature is no token */
    }
    sign_params_free(&p);
    return ok;
}

/* The row's rule. Returns 1 when the request may go on, else 0 after
 * answering. */
static int admitted(struct conn *c, const struct route *rt, int at_head)
{
    const char *token;
    int sent = token_sent(c, &token);
    if (ops_token_awaiting()) {
        if (rt->auth == ROUTES_OPEN || rt->auth == ROUTES_INIT) return 1; /* and trusts nothing */
        refuse(c, rt, 503, "no access token yet: waiting for POST " ROUTE_INIT, NULL);
        return 0;
    }
    if (rt->auth == ROUTES_SIGNED) return signed_admitted(c, rt, sent, token, at_head);
    if (ops_token_present() && !ops_token_ok(token)) {
        if (rt->auth == ROUTES_OPEN) return 1; /* envd's: no token, and still a stranger */
        refuse(c, rt, 401, "missing or wrong " HEADER_ACCESS_TOKEN, NULL);
        return 0;
    }
    conn_trust(c); /* past the token: strangers cannot displace it (http/server.h) */
    return 1;
}

/* ---- the server's callbacks ---- */

/* "/pkg.Service/Method": a Connect path, of a service we may not have. */
static int rpc_shaped(const char *path)
{
    if (path[0] != '/') return 0;
    const char *slash = strchr(path + 1, '/');
    const char *dot = strchr(path + 1, '.');
    return slash && dot && dot < slash && slash[1] && !strchr(slash + 1, '/');
}

static void on_head(struct conn *c, void *ctx)
{
    struct httpreq *r = conn_req(c);
    const struct route *rt = route_of(httpreq_path(r));
    enum http_method m = httpreq_method(r);
    if (!admitted(c, rt, 1)) return;
    if (rt == &unknown) {
        if (rpc_shaped(httpreq_path(r))) rpc_error_response(c, RPC_UNIMPLEMENTED, "no such method", NULL);
        else rpc_http_error(c, 404, RPC_NOT_FOUND, "no such route", NULL);
    } else if (rt->methods && (m >= 32 || !(rt->methods & 1u << m))) {
        refuse_method(c, rt);
    } else if (rt->rpc.path) {
        if (rt->rpc.start) rpc_check_head(c, &rt->rpc);
        else rpc_error_response(c, RPC_UNIMPLEMENTED, "no such method", NULL);
    } else if (rt->head) {
        rt->head(c);
    }
}

static void on_request(struct conn *c, void *ctx)
{
    const struct route *rt = route_of(httpreq_path(conn_req(c)));
    if (!admitted(c, rt, 0)) return; /* the token may have changed since the head */
    if (rt->rpc.path) rpc_start(c, &rt->rpc);
    else rt->request(c);
}

static void on_error(struct conn *c, int status, const char *why, void *ctx)
{
    rpc_http_error(c, status, code_for_status(status), why, NULL);
}

void routes_app(struct server_app *app)
{
    app->on_head = on_head;
    app->on_request = on_request;
    app->on_error = on_error;
    app->ctx = NULL;
}
