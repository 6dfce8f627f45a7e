/*
 * jsonw.c - JSON string and number writers (see jsonw.h for the format).
 */
#include "agent/core/jsonw.h"
#include "agent/core/utf8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put_u(struct buf *b, unsigned u)
{
    char esc[7];
    snprintf(esc, sizeof esc, "\\u%04x", u & 0xFFFF);
    return buf_append(b, esc, 6);
}

static int put_cp(struct buf *b, unsigned cp)
{
    if (cp < 0x10000) return put_u(b, cp);
    cp -= 0x10000;
    if (put_u(b, 0xD800 | (cp >> 10)) < 0) return -1;
    return put_u(b, 0xDC00 | (cp & 0x3FF));
}

int jsonw_str(struct buf *b, const char *str, size_t n, enum jsonw_bad mode)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    if (buf_putc(b, '"') < 0) return -1;
    while (i < n) {
        /* Copy a run of printable ASCII that needs no escape in one go. */
        size_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] < 0x7F && s[j] != '"' && s[j] != '\\') j++;
        if (j > i && buf_append(b, s + i, j - i) < 0) return -1;
        i = j;
        if (i >= n) break;
        unsigned c = s[i];
        const char *short_esc = NULL;
        switch (c) {
        case '"': short_esc = "\\\""; break;
        case '\\': short_esc = "\\\\"; break;
        case '\n': short_esc = "\\n"; break;
        case '\r': short_esc = "\\r"; break;
        case '\t': short_esc = "\\t"; break;
        case '\b': short_esc = "\\b"; break;
        case '\f': short_esc = "\\f"; break;
        }
        if (short_esc) {
            if (buf_append(b, short_esc, 2) < 0) return -1;
            i++;
            continue;
        }
        if (c < 0x80) { /* other control characters and DEL */
            if (put_u(b, c) < 0) return -1;
            i++;
            continue;
        }
        unsigned cp;
        size_t bad;
        size_t k = utf8_next(s + i, n - i, &cp, &bad);
        if (k) {
            if (put_cp(b, cp) < 0) return -1;
            i += k;
        } else if (mode == JSONW_REPLACE) {
            if (put_u(b, 0xFFFD) < 0) return -1;
            i += bad;
        } else {
            if (put_u(b, 0xDC00 | s[i]) < 0) return -1;
            i++;
        }
    }
    return buf_putc(b, '"');
}

int jsonw_cstr(struct buf *b, const char *s)
{
    return jsonw_str(b, s, strlen(s), JSONW_SURROGATEESCAPE);
}

int jsonw_key(struct buf *b, const char *key)
{
    if (jsonw_cstr(b, key) < 0) return -1;
    return buf_append(b, ": ", 2);
}

int jsonw_double_repr(struct buf *b, double d)
{
    char tmp[40], digits[24];
    int prec, exp10;

    if (isnan(d)) return buf_puts(b, "NaN");
    if (isinf(d)) return buf_puts(b, d < 0 ? "-Infinity" : "Infinity");
    if (d == 0) return buf_puts(b, signbit(d) ? "-0.0" : "0.0");
    /* The shortest %e form that reads back to the same double: repr's digits. */
    for (prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec, d);
    /* Split "-d.ddde+XX" into sign, digits and exponent. */
    const char *p = tmp;
    int neg = 0, nd = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    digits[nd] = 0;
    exp10 = atoi(p + 1);
    if (neg && buf_putc(b, '-') < 0) return -1;
    /* repr switches to exponent form below 1e-4 and from 1e16 up. */
    if (exp10 < -4 || exp10 >= 16) {
        if (buf_putc(b, digits[0]) < 0) return -1;
        if (nd > 1 && (buf_putc(b, '.') < 0 || buf_append(b, digits + 1, (size_t)nd - 1) < 0))
            return -1;
        return buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    if (exp10 < 0) {
        if (buf_puts(b, "0.") < 0) return -1;
        for (int z = 0; z < -exp10 - 1; z++)
            if (buf_putc(b, '0') < 0) return -1;
        return buf_append(b, digits, (size_t)nd);
    }
    int intlen = exp10 + 1;
    for (int k = 0; k < intlen; k++)
        if (buf_putc(b, k < nd ? digits[k] : '0') < 0) return -1;
    if (buf_putc(b, '.') < 0) return -1;
    if (nd > intlen) return buf_append(b, digits + intlen, (size_t)(nd - intlen));
    return buf_putc(b, '0');
}

/*
 * Why two paths: jsonw_double_repr searches the shortest repr with up to 17
 * snprintf/strtod rounds, which in musl costs ~20 us a number and dominated
 * `fs list` (one mtime per entry). For 1 <= d < 1e15 (every real mtime) the shortest
 * round-trip decimal is found exactly with integer arithmetic: d = M / 2^q,
 * the values that round to d lie within half an ulp of it, and the answer is
 * the fewest fractional digits k for which a k-digit decimal lies in that
 * interval, the one nearest d (Python's repr, David Gay's mode 0). Below 1e15
 * repr prints no exponent and ulp <= 1/8, so fewer fraction digits is
 * exactly fewer significant digits. Anything else goes to jsonw_double_repr.
 */
int jsonw_double(struct buf *b, double d)
{
    if (!(d >= 1.0 && d < 1e15)) {
        if (d <= -1.0 && d > -1e15) {
            if (buf_putc(b, '-') < 0) return -1;
            return jsonw_double(b, -d);
        }
        return jsonw_double_repr(b, d);
    }
    int ex;
    double fr = frexp(d, &ex);                  /* d = fr * 2^ex, fr in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(fr, 53);        /* 53-bit mantissa, exact */
    int shift = 53 - ex + 2;                     /* value = X / 2^shift, X in quarter ulps */
    typedef unsigned __int128 u128;
    u128 mid = (u128)m << 2, hi = mid + 2;
    u128 lo = m == (1ull << 52) ? mid - 1 : mid - 2; /* a power of two: the gap below is half */
    int inclusive = !(m & 1);                    /* round-half-even keeps even ends */
    u128 scale = 1;
    u128 one = (u128)1 << shift;
    for (int k = 0; k <= 17; k++, scale *= 10) {
        u128 l = lo * scale, h = hi * scale, c = mid * scale;
        u128 nlo = (l + one - 1) >> shift;       /* ceil */
        if (!inclusive && (l & (one - 1)) == 0) nlo++;
        u128 nhi = h >> shift;                   /* floor */
        if (!inclusive && (h & (one - 1)) == 0) nhi--;
        if (nlo > nhi) continue;
        u128 n = c >> shift, rem = c & (one - 1);
        if (rem > (one >> 1) || (rem == (one >> 1) && (n & 1))) n++;
        if (n < nlo) n = nlo;
        if (n > nhi) n = nhi;
        uint64_t ip = (uint64_t)(n / scale), fp = (uint64_t)(n % scale);
        if (buf_put_u64(b, ip, 0) < 0 || buf_putc(b, '.') < 0) return -1;
        return buf_put_u64(b, k == 0 ? 0 : fp, k == 0 ? 1 : k);
    }
    return jsonw_double_repr(b, d);
}

int jsonw_env(struct buf *b, char *const *v)
{
    int first = 1;
    if (buf_putc(b, '{') < 0) return -1;
    for (size_t i = 0; v && v[i]; i++) {
        const char *eq = strchr(v[i], '=');
        if (!eq) continue;
        if ((!first && buf_puts(b, ", ") < 0) || jsonw_str(b, v[i], (size_t)(eq - v[i]), JSONW_SURROGATEESCAPE) < 0 ||
            buf_puts(b, ": ") < 0 || jsonw_cstr(b, eq + 1) < 0)
            return -1;
        first = 0;
    }
    return buf_putc(b, '}');
}
