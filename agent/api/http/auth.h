/*
 * auth.h - who may talk to `serve` and as whom: the access token
 * (SANDBOX_AGENT_TOKEN, sent as X-Access-Token, compared in constant time)
 * and the user an RPC names with `Authorization: Basic base64("user:")`.
 * Pure functions.
 */
#ifndef SA_API_HTTP_AUTH_H
#define SA_API_HTTP_AUTH_H

#include <stddef.h>

/* A user name longer than this is refused. */
#define AUTH_USER_MAX 255

/* 1 when given (NULL: the header was absent) equals the token want[0..wn).
 * The time taken depends on the length of given only. */
int auth_token_ok(const char *want, size_t wn, const char *given);

/* Decode an Authorization header value: "Basic " (scheme in any case) and
 * base64 of "user:password"; the password is ignored. Writes the user,
 * NUL-terminated, to user (AUTH_USER_MAX + 1 bytes). Returns 0, or -1 for
 * another scheme, bad base64, no ':', an empty or overlong user or one with
 * a NUL or control byte. */
int auth_basic_user(const char *header, char *user);

#endif
