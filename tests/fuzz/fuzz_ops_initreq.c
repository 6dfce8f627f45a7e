/*
 * fuzz_ops_initreq.c - libFuzzer target: the POST /init body decoder
 * (agent/api/ops/initreq.c) on any input, and the RFC 3339 parser on any
 * string. What the decoder accepts must hold together: every variable
 * "NAME=VALUE" with a name and within the bounds, the count and the total
 * within theirs, a token of visible ASCII within its bound, a user without
 * control bytes, an absolute working directory, a timestamp after 1970
 * with a fraction below a second; every request frees cleanly whatever the
 * result, and a refusal always says why.
 */
#include "agent/api/ops/initreq.h"
#include "agent/core/err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_env(const struct ops_initreq *r)
{
    size_t total = 0;
    if (!r->env) {
        if (r->nenv) __builtin_trap();
        return;
    }
    if (r->nenv > INITREQ_ENV_MAX || r->env[r->nenv]) __builtin_trap();
    for (size_t i = 0; i < r->nenv; i++) {
        const char *eq = strchr(r->env[i], '=');
        size_t n = strlen(r->env[i]);
        if (!eq || eq == r->env[i] || (size_t)(eq - r->env[i]) > INITREQ_NAME_MAX || n > INITREQ_VAR_MAX)
            __builtin_trap();
        total += n;
    }
    if (total > INITREQ_ENV_BYTES_MAX) __builtin_trap();
}

static void check(const struct ops_initreq *r)
{
    check_env(r);
    if (r->token) {
        if (!r->token_len || r->token_len > INITREQ_TOKEN_MAX || strlen(r->token) != r->token_len) __builtin_trap();
        for (size_t i = 0; i < r->token_len; i++)
            if ((unsigned char)r->token[i] < 0x21 || (unsigned char)r->token[i] > 0x7e) __builtin_trap();
    }
    if (r->user && (!r->user[0] || strlen(r->user) > INITREQ_USER_MAX)) __builtin_trap();
    for (const char *u = r->user; u && *u; u++)
        if ((unsigned char)*u < 0x20 || *u == 0x7f) __builtin_trap();
    if (r->workdir && (r->workdir[0] != '/' || strlen(r->workdir) > INITREQ_WORKDIR_MAX)) __builtin_trap();
    if (r->has_time && (r->time.tv_sec < 0 || r->time.tv_nsec < 0 || r->time.tv_nsec > 999999999))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ops_initreq r;
    char err[ERR_LEN] = "";
    if (ops_initreq_decode((const char *)data, size, &r, err) == 0) check(&r);
    else if (!err[0]) __builtin_trap();
    ops_initreq_free(&r);
    if (size <= INITREQ_TIME_MAX + 1) {
        struct timespec ts;
        if (ops_initreq_time((const char *)data, size, &ts) == 0 && (ts.tv_sec < 0 || ts.tv_nsec > 999999999))
            __builtin_trap();
    }
    return 0;
}
