/*
 * hparam.c - header value parameters (see http/hparam.h).
 *
 * The grammar, loosely as real clients write it:
 *   value  = item *( ";" param )      item: anything up to ';' or ','
 *   param  = attr "=" ( token / quoted-string )
 * Blanks around every piece are skipped. Parsing never reads past the NUL.
 */
#include "agent/api/http/hparam.h"
#include "agent/core/num.h"

#include <string.h>
#include <strings.h>

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* The item p[0..n) with blanks trimmed. */
static size_t trimmed_len(const char *p, size_t n)
{
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    return n;
}

int hparam_type_is(const char *value, const char *type)
{
    const char *p = skip_blanks(value);
    size_t n = trimmed_len(p, strcspn(p, ";,"));
    return n == strlen(type) && !strncasecmp(p, type, n);
}

/* Skip a quoted-string starting at p ('"'), decoding it into out when out
 * is not NULL. Returns the byte after the closing quote, or NULL. */
static const char *quoted(const char *p, struct buf *out)
{
    for (p++; *p != '"'; p++) {
        if (!*p) return NULL;
        if (*p == '\\' && p[1]) p++;
        if (out && buf_putc(out, *p) < 0) return NULL;
    }
    return p + 1;
}

/* RFC 8187: charset'language'pct-encoded, into out. */
static int ext_value(const char *v, size_t n, struct buf *out)
{
    const char *q1 = memchr(v, '\'', n);
    const char *q2 = q1 ? memchr(q1 + 1, '\'', n - (size_t)(q1 + 1 - v)) : NULL;
    if (!q2) return -1;
    const char *end = v + n;
    for (const char *p = q2 + 1; p < end; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = end - p >= 3 ? num_hexval((unsigned char)p[1]) : -1;
            int lo = hi >= 0 ? num_hexval((unsigned char)p[2]) : -1;
            if (lo < 0) return -1;
            c = hi << 4 | lo;
            p += 2;
        }
        if (buf_putc(out, (char)c) < 0) return -1;
    }
    return 0;
}

/* The value of the parameter at p (after '='), into out when want. Returns
 * the byte after it, or NULL when malformed. */
static const char *param_value(const char *p, int want, int ext, struct buf *out)
{
    p = skip_blanks(p);
    if (*p == '"') return ext ? NULL : quoted(p, want ? out : NULL);
    size_t n = trimmed_len(p, strcspn(p, ";"));
    if (want && ext && ext_value(p, n, out) < 0) return NULL;
    if (want && !ext && buf_append(out, p, n) < 0) return NULL;
    return p + strcspn(p, ";");
}

int hparam_get(const char *value, const char *attr, struct buf *out)
{
    size_t alen = strlen(attr);
    int ext = alen > 0 && attr[alen - 1] == '*';
    const char *p = value + strcspn(value, ";\"");
    while (*p == '"') { /* a quoted item (rare): skip it whole */
        if (!(p = quoted(p, NULL))) return -1;
        p += strcspn(p, ";\"");
    }
    buf_reset(out);
    while (*p == ';') {
        p = skip_blanks(p + 1);
        size_t n = strcspn(p, "=;");
        size_t an = trimmed_len(p, n);
        if (p[n] != '=') { /* a parameter without a value: skip it */
            p += n;
            continue;
        }
        int want = an == alen && !strncasecmp(p, attr, an);
        const char *next = param_value(p + n + 1, want, want && ext, out);
        if (!next) return -1;
        if (want) return buf_cstr(out) ? 1 : -1;
        p = skip_blanks(next);
    }
    return 0;
}

/* The q-value of one list item's parameters ("; q=0.5"): 0 when q is zero
 * (0, 0.0, 0.000), else 1. */
static int q_positive(const char *p, size_t n)
{
    const char *end = p + n;
    for (const char *s = memchr(p, ';', n); s; s = memchr(s + 1, ';', (size_t)(end - s - 1))) {
        const char *a = skip_blanks(s + 1);
        if (end - a < 2 || (a[0] != 'q' && a[0] != 'Q') || a[1] != '=') continue;
        for (a += 2; a < end && *a != ';' && *a != ' '; a++)
            if (*a >= '1' && *a <= '9') return 1;
        return 0;
    }
    return 1;
}

int hparam_accepts(const char *value, const char *coding)
{
    size_t cn = strlen(coding);
    int named = -1, star = -1;
    for (const char *p = value; *p;) {
        p = skip_blanks(p);
        size_t n = strcspn(p, ",");
        size_t tn = trimmed_len(p, strcspn(p, ";,"));
        if (tn == cn && !strncasecmp(p, coding, cn)) named = q_positive(p, n);
        else if (tn == 1 && *p == '*') star = q_positive(p, n);
        p += n;
        if (*p == ',') p++;
    }
    return named >= 0 ? named : star > 0;
}
