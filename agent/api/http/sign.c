/*
 * sign.c - signed /files URLs: their parameters and their check (see
 * http/sign.h).
 */
#include "agent/api/http/sign.h"
#include "agent/api/http/auth.h"
#include "agent/api/http/query.h"
#include "agent/core/b64.h"
#include "agent/core/err.h"
#include "agent/core/nonce.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/core/sha256.h"

#include <stdio.h>
#include <string.h>

/* "v1_" and 43 characters of base64 (32 bytes, the '=' stripped). */
#define SIGN_LEN (sizeof SIGNATURE_V1 - 1 + 43)

/* Go's strconv.ParseInt(s, 10, 64), as envd reads the expiration:
 * an optional sign, then decimal digits, within 64 bits. */
static int parse_i64(const char *s, int64_t *out)
{
    int neg = *s == '-';
    uint64_t n;
    if (*s == '-' || *s == '+') s++;
    if (num_count(s, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &n) < 0) return -1;
    *out = neg ? (int64_t)(0 - n) : (int64_t)n;
    return 0;
}

/* The value of name into out (absent: out empty). Returns 1, 0 or -1. */
static int param(const char *query, const char *name, struct buf *out, char *err)
{
    int r = query_get(query, name, out);
    if (r == QUERY_REPEATED) return err_set(err, "a repeated %s parameter", name), -1;
    if (r < 0) return err_set(err, "bad %s parameter (a %%XX escape)", name), -1;
    return r;
}

int sign_params_parse(const char *query, struct sign_params *p, char *err)
{
    struct buf exp;
    int r;
    memset(p, 0, sizeof *p);
    buf_init(&p->path, SERVE_HEAD_MAX);
    buf_init(&p->user, SERVE_HEAD_MAX);
    buf_init(&p->signature, SERVE_HEAD_MAX);
    buf_init(&exp, 64);
    if (param(query, QUERY_PATH, &p->path, err) < 0 || param(query, QUERY_USERNAME, &p->user, err) < 0 ||
        (p->has_signature = param(query, QUERY_SIGNATURE, &p->signature, err)) < 0 ||
        (p->has_expiration = param(query, QUERY_SIGNATURE_EXPIRATION, &exp, err)) < 0) {
        r = -1;
    } else if (p->has_expiration && (memchr(exp.data, '\0', exp.len) || parse_i64(exp.data, &p->expiration) < 0)) {
        err_set(err, "bad " QUERY_SIGNATURE_EXPIRATION " parameter: not a whole number of Unix seconds");
        r = -1;
    } else {
        r = 0;
    }
    buf_free(&exp);
    return r;
}

void sign_params_free(struct sign_params *p)
{
    buf_free(&p->path);
    buf_free(&p->user);
    buf_free(&p->signature);
}

/* The signature p's URL would carry for op under the token, into out
 * (SIGN_LEN characters and a NUL; room for the '=' written first). */
static void expected(const struct sign_params *p, const char *op, const char *token, size_t n,
                     char out[SIGN_LEN + 2])
{
    struct sha256 h;
    unsigned char digest[SHA256_LEN];
    char exp[32];
    sha256_init(&h);
    sha256_update(&h, p->path.data, p->path.len);
    sha256_update(&h, ":", 1);
    sha256_update(&h, op, strlen(op));
    sha256_update(&h, ":", 1);
    sha256_update(&h, p->user.data, p->user.len);
    sha256_update(&h, ":", 1);
    sha256_update(&h, token, n);
    if (p->has_expiration) {
        int k = snprintf(exp, sizeof exp, ":%lld", (long long)p->expiration);
        sha256_update(&h, exp, (size_t)k);
    }
    sha256_final(&h, digest); /* wipes h */
    memcpy(out, SIGNATURE_V1, sizeof SIGNATURE_V1 - 1);
    b64_encode_to(out + sizeof SIGNATURE_V1 - 1, digest, sizeof digest); /* 44: the last is '=' */
    out[SIGN_LEN] = '\0';
    nonce_overwrite(digest, sizeof digest);
}

enum sign_verdict sign_check(const struct sign_params *p, const char *op, const char *token, size_t n, int64_t now)
{
    char want[SIGN_LEN + 2];
    if (!p->has_signature) return SIGN_MISSING;
    expected(p, op, token, n, want);
    int ok = auth_token_ok(want, SIGN_LEN, p->signature.data) && !memchr(p->signature.data, '\0', p->signature.len);
    nonce_overwrite(want, sizeof want);
    if (!ok) return SIGN_INVALID;
    return p->has_expiration && p->expiration < now ? SIGN_EXPIRED : SIGN_OK;
}

const char *sign_message(enum sign_verdict v)
{
    switch (v) {
    case SIGN_MISSING: return "missing signature query parameter";
    case SIGN_INVALID: return "invalid signature";
    case SIGN_EXPIRED: return "signature is already expired";
    default: return "";
    }
}
