/*
 * token.h - the access token of the API (README "sandbox-agent serve"):
 * SANDBOX_AGENT_TOKEN at the start, or the one POST /init sets or replaces
 * later (ops/init.h). Held as the nonce is held (agent/core/nonce.h): one
 * heap copy of the agent's, never in a process's environment, never
 * logged, compared in constant time (http/auth.h), hashed for a signed URL
 * without a copy (http/sign.h), and a replaced token's bytes overwritten
 * before they are freed.
 *
 * With SANDBOX_AGENT_AWAIT_TOKEN=1 and no token, the API awaits one: only
 * GET /health and POST /init answer (routes.c), and the first /init that
 * sets a token ends the wait. One API per process: the state is this
 * file's, set by api_start and cleared by api_free.
 */
#ifndef SA_API_OPS_TOKEN_H
#define SA_API_OPS_TOKEN_H

#include "agent/api/http/sign.h"

#include <stddef.h>
#include <stdint.h>

/* Keep a copy of token (NULL or "": none); await: wait for one when none.
 * Returns 0, or -1 when out of memory. */
int ops_token_start(const char *token, int await);
/* Overwrite and free the copy. */
void ops_token_free(void);

/* 1 when a token is set. */
int ops_token_present(void);
/* 1 while the API awaits its token (AWAIT_TOKEN and none set yet). */
int ops_token_awaiting(void);
/* 1 when given (a header's value; NULL: absent) is the token. */
int ops_token_ok(const char *given);
/* The signature of a signed URL checked against the token, here where it is
 * kept (http/sign.h): SIGN_INVALID when there is none. */
enum sign_verdict ops_token_signed(const struct sign_params *p, const char *op, int64_t now);
/* Replace the token with value[0..n) (the old one overwritten). Returns 0,
 * or -1 when out of memory (the old one kept). */
int ops_token_replace(const char *value, size_t n);

#endif
