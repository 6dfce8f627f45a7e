/*
 * init.h - POST /init (README "sandbox-agent serve": orchestrator routes):
 * what envd's orchestrator sends a sandbox when it starts or resumes it,
 * applied all at once or not at all, answered 204.
 *
 *   envVars         join the environment of every process started later
 *                   (merged with those of an earlier /init; the request's
 *                   own envs still win): asuser/defaults.h
 *   defaultUser     the user of requests that name none, in place of
 *                   SANDBOX_AGENT_USER; must exist (else 400, nothing
 *                   changed) and be one the agent may become
 *   defaultWorkdir  the working directory of a Start that names none
 *   accessToken     sets the token when there is none (the first one ends
 *                   SANDBOX_AGENT_AWAIT_TOKEN's wait), replaces it when
 *                   there is one (the request had to carry the current one
 *                   when it was complete, not only at its head: routes.c):
 *                   ops/token.h. A new token ends every connection's trust
 *                   but this one's (conn_trust_revoke); the same one again
 *                   changes nothing
 *   timestamp       a guest clock behind it by more than 50 ms is set to it
 *                   (clock_settime, with CAP_SYS_TIME), else the skew is
 *                   logged; a clock ahead by more than 5 s is logged only
 *   volumeMounts, hyperloopIP, lifecycleID, caBundle: accepted, logged
 *                   once each as not supported
 *
 * A malformed body is 400 (ops/initreq.h) and changes nothing. Only a
 * request that proved the current token (routes.c) or set a new one makes
 * its connection trusted: a token-less /init while the API awaits its token
 * leaves it a stranger's.
 */
#ifndef SA_API_OPS_INIT_H
#define SA_API_OPS_INIT_H

#include "agent/api/http/conn.h"

/* The whole request is here (its body buffered, at most SERVE_BODY_MAX):
 * apply it and answer. */
void ops_init_respond(struct conn *c);

#endif
