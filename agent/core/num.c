/*
 * num.c - number, size and duration parsers (see num.h). Strict on purpose: a value
 * the agent half-understands is a usage error, never a guess.
 */
#include "agent/core/num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int num_mode(const char *s, mode_t *out)
{
    unsigned v = 0;
    int n = 0;
    if (!s) return -1;
    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) s += 2;
    for (; *s; s++, n++) {
        if (*s < '0' || *s > '7' || n >= 5) return -1;
        v = v * 8 + (unsigned)(*s - '0');
    }
    if (n == 0 || v > 07777) return -1;
    *out = (mode_t)v;
    return 0;
}

int num_count(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        unsigned d = (unsigned)(*s - '0');
        if (d > max || v > (max - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int num_seconds(const char *s, double max, double *out)
{
    char *end;
    if (!s || !*s) return -1;
    /* strtod also takes hex, "inf", "nan" and leading blanks: only plain
     * decimal text gets this far. */
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
              *p == '-'))
            return -1;
    if (s[0] == '-' || s[0] == '+') return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v) || v < 0 || v > max) return -1;
    *out = v;
    return 0;
}

int num_hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
