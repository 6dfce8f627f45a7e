/*
 * routes.h - what each request of `serve` means: one table of routes
 * (routes.c), a row each: the path, the methods it answers, who may make
 * it (the access token, ops/token.h; the signature of a /files URL,
 * http/sign.h; none for GET /health), how its refusals read (Connect's
 * JSON, or envd's on /files) and its handlers: the REST routes (GET
 * /health, GET /envs, GET /metrics, POST /init, GET and POST /files, POST
 * /files/compose) and the RPCs of process.Process and
 * filesystem.Filesystem, each unary, server-streaming or client-streaming
 * (README "sandbox-agent serve"). A new route is one row.
 */
#ifndef SA_API_ROUTES_H
#define SA_API_ROUTES_H

#include "agent/api/connect/rpc.h"
#include "agent/api/http/server.h"

/* The server callbacks. */
void routes_app(struct server_app *app);

#endif
