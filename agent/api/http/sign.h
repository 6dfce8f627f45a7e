/*
 * sign.h - envd's signed URLs of GET and POST /files (README "Signed
 * URLs"): the query parameters a signature covers and carries, read as the
 * client sent them (http/query.h), and the check of a signature against
 * the token.
 *
 * A signature is "v1_" and the standard base64, '=' stripped, of the
 * SHA-256 of PATH:OPERATION:USERNAME:TOKEN, or of
 * PATH:OPERATION:USERNAME:TOKEN:EXPIRATION when the URL carries an
 * expiration (Unix seconds, written back in decimal): PATH and USERNAME
 * the decoded query values exactly ("" when absent), OPERATION "read" or
 * "write". It is compared in constant time (the time depends on the length
 * of what the client sent only); the token is hashed where it is kept
 * (ops/token.h calls sign_check) and every byte derived from it is
 * overwritten. Pure: no I/O, no clock; fuzzed by tests/fuzz/fuzz_sign.c.
 */
#ifndef SA_API_HTTP_SIGN_H
#define SA_API_HTTP_SIGN_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

struct sign_params {
    struct buf path, user, signature; /* decoded (may hold NULs; NUL-terminated) */
    int has_signature, has_expiration;
    int64_t expiration;               /* Unix seconds */
};

/* Read the parameters of query (after '?') into p (sign_params_free it
 * whatever the result). Returns 0, or -1 with the reason in err (ERR_LEN
 * bytes): one of them repeated, a bad %XX escape, an expiration that is
 * not a whole number ([+-]digits, 64 bits). */
int sign_params_parse(const char *query, struct sign_params *p, char *err);
void sign_params_free(struct sign_params *p);

enum sign_verdict { SIGN_OK, SIGN_MISSING, SIGN_INVALID, SIGN_EXPIRED };

/* Whether p's signature grants op (SIGNATURE_READ or SIGNATURE_WRITE) under
 * token[0..n) at now (Unix seconds): an expiration before now is refused,
 * once the signature itself is found right; now INT64_MIN: the expiration
 * is not looked at (a request whose head was checked already). */
enum sign_verdict sign_check(const struct sign_params *p, const char *op, const char *token, size_t n, int64_t now);
/* The refusal as envd words it ("invalid signature", ...). */
const char *sign_message(enum sign_verdict v);

#endif
