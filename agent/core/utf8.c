/*
 * utf8.c - strict UTF-8 decoding (Unicode table 3-7, as CPython implements it).
 */
#include "agent/core/utf8.h"

size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp, size_t *bad)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF, v;

    *bad = 0;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;      /* no overlong 3-byte forms */
        if (c == 0xED) hi = 0x9F;      /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xF0) lo = 0x90;      /* no overlong 4-byte forms */
        if (c == 0xF4) hi = 0x8F;      /* nothing above U+10FFFF */
    } else {
        *bad = 1;                      /* stray continuation, C0, C1, F5..FF */
        return 0;
    }
    for (size_t i = 1; i <= need; i++) {
        /* Only the second byte has the narrowed range; later ones are 80..BF. */
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (i >= n || s[i] < l || s[i] > h) {
            *bad = i;
            return 0;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return need + 1;
}

size_t utf8_check(const unsigned char *s, size_t n)
{
    size_t i = 0, bad;
    unsigned cp;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_next(s + i, n - i, &cp, &bad);
        if (!k) return i;
        i += k;
    }
    return n;
}
