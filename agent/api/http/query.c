/*
 * query.c - query string parameters (see http/query.h).
 */
#include "agent/api/http/query.h"
#include "agent/core/num.h"

#include <string.h>

/* Decode p[0..n) into out. Returns 0, or -1 (bad escape, bound). */
static int decode(const char *p, size_t n, struct buf *out)
{
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)p[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            int hi = n - i >= 3 ? num_hexval((unsigned char)p[i + 1]) : -1;
            int lo = hi >= 0 ? num_hexval((unsigned char)p[i + 2]) : -1;
            if (lo < 0) return -1;
            c = hi << 4 | lo;
            i += 2;
        }
        if (buf_putc(out, (char)c) < 0) return -1;
    }
    return 0;
}

/* 1 when the key p[0..n), decoded, is name. */
static int key_is(const char *p, size_t n, const char *name)
{
    struct buf k;
    buf_init(&k, strlen(name));
    int same = decode(p, n, &k) == 0 && k.len == strlen(name) && (!k.len || !memcmp(k.data, name, k.len));
    buf_free(&k);
    return same;
}

int query_get(const char *query, const char *name, struct buf *out)
{
    const char *v = NULL, *end = NULL;
    buf_reset(out);
    for (const char *p = query; *p;) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        size_t kn = eq ? (size_t)(eq - p) : n;
        if (key_is(p, kn, name)) {
            if (v) return QUERY_REPEATED;
            v = eq ? eq + 1 : p + n;
            end = p + n;
        }
        p += n;
        if (*p == '&') p++;
    }
    if (!v) return 0;
    if (decode(v, (size_t)(end - v), out) < 0 || !buf_cstr(out)) return -1;
    return 1;
}
