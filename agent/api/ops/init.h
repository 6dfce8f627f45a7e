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
 *                   to get here: routes.c): ops/token.h
 *   timestamp       a guest clock behind it by more than 50 ms is set to it
 *                   (clock_settime, with CAP_SYS_TIME), else the skew is
 *                   logged; a clock ahead by more than 5 s is logged only
 *   volumeMounts, hyperloopIP, lifecycleID, caBundle: accepted, logged
 *                   once each as not supported
 *
 * A malformed body is 400 (ops/initreq.h) and changes nothing.
 */
#ifndef SA_API_OPS_INIT_H
#define SA_API_OPS_INIT_H

#include "agent/api/http/conn.h"

/* The whole request is here (its body buffered, at most SERVE_BODY_MAX):
 * apply it and answer. */
void ops_init_respond(struct conn *c);

#endif
