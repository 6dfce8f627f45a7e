/*
 * routes.h - what each request of `serve` means: the access token check
 * (ops/token.h), the REST routes (GET /health, GET /envs, GET /metrics,
 * POST /init, /files) and the table of RPC methods of
 * process.Process and filesystem.Filesystem, each unary or server-streaming,
 * with the handler that serves it (README "sandbox-agent serve").
 */
#ifndef SA_API_ROUTES_H
#define SA_API_ROUTES_H

#include "agent/api/connect/rpc.h"
#include "agent/api/http/server.h"

#include <stddef.h>

/* The server callbacks. */
void routes_app(struct server_app *app);

/* The method at path, or NULL. A method whose start is NULL is answered
 * `unimplemented`, as an unknown one is. */
const struct rpc_method *routes_method(const char *path);


#endif
