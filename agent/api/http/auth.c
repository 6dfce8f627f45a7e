/*
 * auth.c - token comparison and Basic credentials (see http/auth.h).
 */
#include "agent/api/http/auth.h"
#include "agent/core/b64.h"

#include <string.h>
#include <strings.h>

int auth_token_ok(const char *want, size_t wn, const char *given)
{
    if (!given || wn == 0) return 0;
    size_t gn = strlen(given);
    /* Every byte of given is compared against some byte of want: no early
     * exit, so the time says nothing about where the first difference is. */
    unsigned char d = gn != wn;
    for (size_t i = 0; i < gn; i++) d |= (unsigned char)(given[i] ^ want[i < wn ? i : 0]);
    return d == 0;
}

int auth_basic_user(const char *header, char *user)
{
    if (strncasecmp(header, "Basic", 5) != 0 || (header[5] != ' ' && header[5] != '\t'))
        return -1;
    const char *p = header + 6;
    while (*p == ' ' || *p == '\t') p++;
    struct buf raw;
    /* base64 makes 3 bytes of 4; "user:" plus a password of similar size. */
    buf_init(&raw, 4 * AUTH_USER_MAX);
    int rc = -1;
    if (b64_decode(&raw, p, strlen(p)) < 0) goto out;
    const char *colon = raw.len ? memchr(raw.data, ':', raw.len) : NULL;
    size_t n = colon ? (size_t)(colon - raw.data) : 0;
    if (!colon || n == 0 || n > AUTH_USER_MAX) goto out;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)raw.data[i] < 0x20 || raw.data[i] == 0x7f) goto out;
    memcpy(user, raw.data, n);
    user[n] = '\0';
    rc = 0;
out:
    buf_free(&raw);
    return rc;
}
