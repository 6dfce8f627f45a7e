/*
 * token.c - the API's access token (see ops/token.h).
 */
#include "agent/api/ops/token.h"
#include "agent/api/http/auth.h"
#include "agent/core/nonce.h"

#include <stdlib.h>
#include <string.h>

static struct {
    struct nonce tok; /* value NULL: none */
    int await;
} g;

int ops_token_start(const char *token, int await)
{
    ops_token_free();
    g.await = await;
    return token && *token ? ops_token_replace(token, strlen(token)) : 0;
}

void ops_token_free(void)
{
    nonce_wipe(&g.tok);
    g.await = 0;
}

int ops_token_present(void) { return g.tok.value != NULL; }

int ops_token_awaiting(void) { return g.await && !g.tok.value; }

int ops_token_ok(const char *given) { return g.tok.value && auth_token_ok(g.tok.value, g.tok.len, given); }

enum sign_verdict ops_token_signed(const struct sign_params *p, const char *op, int64_t now)
{
    if (!g.tok.value) return SIGN_INVALID;
    return sign_check(p, op, g.tok.value, g.tok.len, now);
}

int ops_token_replace(const char *value, size_t n)
{
    char *v = malloc(n + 1);
    if (!v) return -1;
    memcpy(v, value, n);
    v[n] = '\0';
    nonce_wipe(&g.tok);
    g.tok.value = v;
    g.tok.len = n;
    return 0;
}
