/*
 * jsonbytes.c - surrogateescape escapes back to bytes (see jsonbytes.h).
 *
 * One pass with two states (in a string or not) and the last escape seen,
 * so \\udc80 (an escaped backslash, then text) is left alone and
 * \ud83d\udc80 (a pair) too.
 */
#include "agent/core/jsonbytes.h"
#include "agent/core/num.h"

/* The value of the \uXXXX escape at s[i] (s[i] == '\\'), or -1. */
static long escape_at(const char *s, size_t n, size_t i)
{
    if (i + 6 > n || s[i + 1] != 'u') return -1;
    long v = 0;
    for (size_t k = 2; k < 6; k++) {
        int h = num_hexval((unsigned char)s[i + k]);
        if (h < 0) return -1;
        v = v << 4 | h;
    }
    return v;
}

size_t jsonbytes_unescape(char *s, size_t n)
{
    size_t r = 0, w = 0;
    int in_str = 0, after_high = 0;
    while (r < n) {
        char c = s[r];
        if (!in_str) {
            in_str = c == '"';
            s[w++] = s[r++];
            continue;
        }
        if (c == '"') {
            in_str = 0;
            after_high = 0;
            s[w++] = s[r++];
            continue;
        }
        if (c != '\\' || r + 1 >= n) {
            after_high = 0;
            s[w++] = s[r++];
            continue;
        }
        long v = escape_at(s, n, r);
        if (v >= 0xdc80 && v <= 0xdcff && !after_high) {
            s[w++] = (char)(v & 0xff);
            r += 6;
            continue;
        }
        after_high = v >= 0xd800 && v <= 0xdbff;
        size_t len = v >= 0 ? 6 : 2; /* \uXXXX, or \" \\ \n ... */
        for (size_t k = 0; k < len; k++) s[w++] = s[r++];
    }
    return w;
}
