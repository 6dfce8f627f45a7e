/*
 * routes.c - requests to handlers (see routes.h).
 *
 * Every request needs the token first but /health, which answers
 * without it as envd's does (a Kubernetes probe cannot send one); a
 * connection is trusted (conn_trust) once a head of it has the token, or at
 * once when there is none: /health without it leaves the connection a
 * stranger's (http/server.h "Admission").
 * While the API awaits its token (SANDBOX_AGENT_AWAIT_TOKEN=1, ops/token.h)
 * only GET /health and POST /init answer, without it and without trusting
 * the connection; everything else is 503 `unavailable` until an /init sets
 * one. The check is made at the head and again when the request is
 * complete, against the token as it is then: an /init may have set or
 * replaced it while the body came (conn_trust_revoke drops what a body
 * handed to a sink would still apply), and what the old token allowed
 * is not done.
 * Errors are Connect's JSON {"code", "message"} on every route, so a client
 * has one shape to read.
 * The handlers of the RPC table are the process and filesystem services';
 * until one is wired its entry answers `unimplemented`.
 */
#include "agent/api/routes.h"
#include "agent/api/process/process.h"
#include "agent/api/rest/compose.h"
#include "agent/api/rest/files.h"
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/ops/init.h"
#include "agent/api/ops/metrics.h"
#include "agent/api/ops/token.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"

#include <string.h>

static const struct rpc_method methods[] = {
    {"/process.Process/Start", RPC_KIND_STREAM, process_stream_start},
    {"/process.Process/Connect", RPC_KIND_STREAM, process_stream_connect},
    {"/process.Process/List", RPC_KIND_UNARY, process_control_list},
    {"/process.Process/SendInput", RPC_KIND_UNARY, process_control_send_input},
    {"/process.Process/StreamInput", RPC_KIND_CLIENT_STREAM, process_control_stream_input},
    {"/process.Process/SendSignal", RPC_KIND_UNARY, process_control_send_signal},
    {"/process.Process/CloseStdin", RPC_KIND_UNARY, process_control_close_stdin},
    {"/process.Process/Update", RPC_KIND_UNARY, process_control_update},
    {"/filesystem.Filesystem/Stat", RPC_KIND_UNARY, filesystem_stat},
    {"/filesystem.Filesystem/MakeDir", RPC_KIND_UNARY, filesystem_make_dir},
    {"/filesystem.Filesystem/Move", RPC_KIND_UNARY, filesystem_move},
    {"/filesystem.Filesystem/ListDir", RPC_KIND_UNARY, filesystem_list_dir},
    {"/filesystem.Filesystem/Remove", RPC_KIND_UNARY, filesystem_remove},
    {"/filesystem.Filesystem/WatchDir", RPC_KIND_STREAM, filesystem_watchdir},
    {"/filesystem.Filesystem/CreateWatcher", RPC_KIND_UNARY, filesystem_watchers_create},
    {"/filesystem.Filesystem/GetWatcherEvents", RPC_KIND_UNARY, filesystem_watchers_get_events},
    {"/filesystem.Filesystem/RemoveWatcher", RPC_KIND_UNARY, filesystem_watchers_remove},
};

const struct rpc_method *routes_method(const char *path)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (!strcmp(methods[i].path, path)) return &methods[i];
    return NULL;
}

/* "/pkg.Service/Method": a Connect path, of a service we may not have. */
static int rpc_shaped(const char *path)
{
    if (path[0] != '/') return 0;
    const char *slash = strchr(path + 1, '/');
    const char *dot = strchr(path + 1, '.');
    return slash && dot && dot < slash && slash[1] && !strchr(slash + 1, '/');
}

/* The code a client reads from a refusal of the HTTP layer. */
static enum rpc_code code_for_status(int status)
{
    switch (status) {
    case 404: return RPC_NOT_FOUND;
    case 405: case 501: case 505: return RPC_UNIMPLEMENTED;
    case 408: return RPC_DEADLINE_EXCEEDED;
    case 413: case 429: case 431: return RPC_RESOURCE_EXHAUSTED;
    case 503: return RPC_UNAVAILABLE;
    default: return status >= 500 ? RPC_INTERNAL : RPC_INVALID_ARGUMENT;
    }
}

/* The REST routes answered to GET only. */
static int is_rest(const char *path)
{
    return !strcmp(path, ROUTE_HEALTH) || !strcmp(path, ROUTE_ENVS) || !strcmp(path, ROUTE_METRICS);
}

/* The token check. Returns 1 when the request may go on. */
static int admitted(struct conn *c, const char *path)
{
    struct httpreq *r = conn_req(c);
    if (ops_token_awaiting()) {
        if (!strcmp(path, ROUTE_HEALTH) || !strcmp(path, ROUTE_INIT)) return 1;
        rpc_error_response(c, RPC_UNAVAILABLE, "no access token yet: waiting for POST " ROUTE_INIT, NULL);
        return 0;
    }
    if (ops_token_present() && !ops_token_ok(httpreq_header(r, HEADER_ACCESS_TOKEN))) {
        if (!strcmp(path, ROUTE_HEALTH)) return 1; /* envd's: no token, and still a stranger */
        rpc_error_response(c, RPC_UNAUTHENTICATED, "missing or wrong " HEADER_ACCESS_TOKEN, NULL);
        return 0;
    }
    conn_trust(c); /* past the token: strangers cannot displace it (http/server.h) */
    return 1;
}

static void on_head(struct conn *c, void *ctx)
{
    struct httpreq *r = conn_req(c);
    const char *path = httpreq_path(r);
    if (!admitted(c, path)) return;
    if (!strcmp(path, ROUTE_FILES)) {
        rest_files_on_head(c);
        return;
    }
    if (!strcmp(path, ROUTE_FILES_COMPOSE)) {
        rest_compose_on_head(c);
        return;
    }
    if (is_rest(path)) {
        if (httpreq_method(r) != HTTP_GET)
            rpc_http_error(c, 405, RPC_UNIMPLEMENTED, "only GET", "Allow: GET\r\n");
        return;
    }
    if (!strcmp(path, ROUTE_INIT)) { /* the body: a unary one, buffered (SERVE_BODY_MAX) */
        if (httpreq_method(r) != HTTP_POST)
            rpc_http_error(c, 405, RPC_UNIMPLEMENTED, "only POST", "Allow: POST\r\n");
        return;
    }
    const struct rpc_method *m = routes_method(path);
    if (m && m->start) rpc_check_head(c, m);
    else if (m || rpc_shaped(path))
        rpc_error_response(c, RPC_UNIMPLEMENTED, "no such method", NULL);
    else
        rpc_http_error(c, 404, RPC_NOT_FOUND, "no such route", NULL);
}

static void on_request(struct conn *c, void *ctx)
{
    struct httpreq *r = conn_req(c);
    const char *path = httpreq_path(r);
    if (!admitted(c, path)) return; /* the token may have changed since the head */
    if (!strcmp(path, ROUTE_FILES)) {
        rest_files_on_request(c);
    } else if (!strcmp(path, ROUTE_FILES_COMPOSE)) {
        rest_compose_on_request(c);
    } else if (!strcmp(path, ROUTE_HEALTH)) {
        conn_respond(c, 204, NULL, NULL, "", 0);
    } else if (!strcmp(path, ROUTE_METRICS)) {
        ops_metrics_respond(c);
    } else if (!strcmp(path, ROUTE_INIT)) {
        ops_init_respond(c);
    } else if (!strcmp(path, ROUTE_ENVS)) {
        struct buf b;
        buf_init(&b, SERVE_BODY_MAX);
        if (process_envs_json(&b) < 0) rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
        else conn_respond(c, 200, CONNECT_CT_UNARY, NULL, b.data, b.len);
        buf_free(&b);
    } else {
        rpc_start(c, routes_method(path));
    }
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
