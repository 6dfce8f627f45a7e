/*
 * fuzz_webhook.c - libFuzzer target: what the webhook reads from outside
 * (runner/run/webhook.c): the server's status line, and the URL. A status
 * is three digits or -1; a URL parsed is one the request can carry (a host,
 * a numeric port, a path starting with '/', no space or control byte).
 */
#include "agent/core/err.h"
#include "runner/run/webhook.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    int code = webhook_status_code(s);
    if (code < -1 || code > 999) __builtin_trap();
    struct http_url u;
    char err[ERR_LEN];
    if (webhook_parse_url(s, &u, err) == 0) {
        if (!u.host[0] || u.path[0] != '/' || !u.port[0] || strspn(u.port, "0123456789") != strlen(u.port))
            __builtin_trap();
        for (const char *c = u.path; *c; c++)
            if ((unsigned char)*c <= 0x20 || *c == 0x7f) __builtin_trap();
    }
    free(s);
    return 0;
}
