/*
 * fuzz_sign.c - libFuzzer target: the parameters of a signed /files URL
 * (agent/api/http/sign.c, over http/query.c) from any query, and their
 * check against a token. A parse either fails with a reason or gives
 * NUL-terminated values within their bounds; a check gives one of the
 * verdicts, never SIGN_EXPIRED when the expiration is not looked at, never
 * SIGN_OK for a signature that is not "v1_" and 43 characters, and the
 * same verdict twice. Never a crash, a leak or a hang.
 */
#include "agent/api/http/sign.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_buf(const struct buf *b)
{
    if (b->len > SERVE_HEAD_MAX || (b->data && b->data[b->len] != '\0')) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char tok[] = "fuzz-token";
    char *q = malloc(size + 1);
    if (!q) return 0;
    memcpy(q, data, size);
    q[size] = '\0';
    struct sign_params p;
    char err[ERR_LEN] = "";
    if (sign_params_parse(q, &p, err) < 0) {
        if (!err[0]) __builtin_trap();
    } else {
        check_buf(&p.path);
        check_buf(&p.user);
        check_buf(&p.signature);
        if ((unsigned)p.has_signature > 1 || (unsigned)p.has_expiration > 1) __builtin_trap();
        static const int64_t nows[] = {0, 1700000000, INT64_MAX, INT64_MIN};
        for (size_t i = 0; i < sizeof nows / sizeof nows[0]; i++) {
            const char *op = i & 1 ? SIGNATURE_WRITE : SIGNATURE_READ;
            enum sign_verdict v = sign_check(&p, op, tok, sizeof tok - 1, nows[i]);
            if (v != sign_check(&p, op, tok, sizeof tok - 1, nows[i])) __builtin_trap();
            if (v == SIGN_EXPIRED && nows[i] == INT64_MIN) __builtin_trap();
            if (v == SIGN_MISSING && p.has_signature) __builtin_trap();
            if (v == SIGN_OK && (p.signature.len != 46 || memcmp(p.signature.data, SIGNATURE_V1, 3)))
                __builtin_trap();
            if (!*sign_message(v) && v != SIGN_OK) __builtin_trap();
        }
    }
    sign_params_free(&p);
    free(q);
    return 0;
}
