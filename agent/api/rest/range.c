/*
 * range.c - the Range header and the multipart/byteranges framing (see
 * rest/range.h).
 */
#include "agent/api/rest/range.h"

#include <stdio.h>
#include <string.h>

/* HTTP's optional whitespace as Go's textproto trims it. */
static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static void trim(const char **s, const char **end)
{
    while (*s < *end && blank(**s)) ++*s;
    while (*end > *s && blank((*end)[-1])) --*end;
}

/* s[0..end) as strconv.ParseInt(s, 10, 64): an optional sign, then digits,
 * within int64. Returns 0 with the value in *v, or -1. */
static int parse_int(const char *s, const char *end, int64_t *v)
{
    int neg = 0;
    uint64_t x = 0, lim = (uint64_t)INT64_MAX;
    if (s < end && (*s == '+' || *s == '-')) neg = *s++ == '-', lim += neg;
    if (s == end) return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9') return -1;
        unsigned d = (unsigned)(*s - '0');
        if (x > (lim - d) / 10) return -1;
        x = x * 10 + d;
    }
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 0;
}

/* One element (blanks trimmed, not empty). Returns 1 a range into *r, 0
 * none that overlaps the file, -1 malformed. */
static int element(const char *s, const char *end, uint64_t size, struct rest_range *r)
{
    const char *dash = memchr(s, '-', (size_t)(end - s));
    if (!dash) return -1;
    const char *a = s, *ae = dash, *b = dash + 1, *be = end;
    int64_t first, last;
    trim(&a, &ae);
    trim(&b, &be);
    if (a == ae) { /* -suffix: the last bytes */
        if (b == be || *b == '-' || parse_int(b, be, &last) < 0 || last < 0) return -1;
        uint64_t k = (uint64_t)last < size ? (uint64_t)last : size;
        if (!k) return 0; /* -0, or an empty file: nothing to send (Go's answer is not a range) */
        *r = (struct rest_range){size - k, k};
        return 1;
    }
    if (parse_int(a, ae, &first) < 0 || first < 0) return -1;
    if ((uint64_t)first >= size) return 0; /* past the end (its last is never read, as Go) */
    if (b == be) {
        *r = (struct rest_range){(uint64_t)first, size - (uint64_t)first};
        return 1;
    }
    if (parse_int(b, be, &last) < 0 || first > last) return -1;
    if ((uint64_t)last >= size) last = (int64_t)(size - 1);
    *r = (struct rest_range){(uint64_t)first, (uint64_t)(last - first) + 1};
    return 1;
}

enum rest_range_result rest_range_parse(const char *value, uint64_t size, struct rest_range *out, size_t *n)
{
    static const char unit[] = "bytes=";
    size_t count = 0;
    uint64_t sum = 0;
    int dropped = 0, over = 0;
    *n = 0;
    if (!value || !*value) return REST_RANGE_WHOLE;
    if (strncmp(value, unit, sizeof unit - 1)) return REST_RANGE_INVALID;
    for (const char *s = value + sizeof unit - 1; *s;) {
        const char *end = strchr(s, ','), *next;
        if (!end) end = s + strlen(s);
        next = *end ? end + 1 : end;
        trim(&s, &end);
        if (s < end) {
            struct rest_range r;
            int k = element(s, end, size, &r);
            if (k < 0) return REST_RANGE_INVALID;
            if (!k) dropped = 1;
            else if (count < REST_RANGE_MAX) out[count++] = r, sum += r.len, over |= sum > size;
            else over = 1;
        }
        s = next;
    }
    if (!count) return dropped && size ? REST_RANGE_UNSATISFIABLE : REST_RANGE_WHOLE;
    if (over) return REST_RANGE_WHOLE; /* more than the file: an attack or a confused client */
    *n = count;
    return REST_RANGE_PARTS;
}

int rest_range_content_range(char *out, size_t cap, const struct rest_range *r, uint64_t size)
{
    int k = snprintf(out, cap, "bytes %llu-%llu/%llu", (unsigned long long)r->start,
                     (unsigned long long)(r->start + r->len - 1), (unsigned long long)size);
    return k < 0 || (size_t)k >= cap ? -1 : k;
}

int rest_range_part_head(char *out, size_t i, const char *boundary, const char *ctype,
                         const struct rest_range *r, uint64_t size)
{
    char cr[80];
    if (strlen(ctype) > REST_RANGE_CTYPE_MAX || rest_range_content_range(cr, sizeof cr, r, size) < 0) return -1;
    int k = snprintf(out, REST_RANGE_HEAD_MAX, "%s--%s\r\nContent-Range: %s\r\nContent-Type: %s\r\n\r\n",
                     i ? "\r\n" : "", boundary, cr, ctype);
    return k < 0 || k >= REST_RANGE_HEAD_MAX ? -1 : k;
}

int rest_range_tail(char *out, const char *boundary)
{
    int k = snprintf(out, REST_RANGE_HEAD_MAX, "\r\n--%s--\r\n", boundary);
    return k < 0 || k >= REST_RANGE_HEAD_MAX ? -1 : k;
}

uint64_t rest_range_body_length(const struct rest_range *r, size_t n, const char *boundary, const char *ctype,
                                uint64_t size)
{
    char head[REST_RANGE_HEAD_MAX];
    uint64_t total = (uint64_t)rest_range_tail(head, boundary);
    for (size_t i = 0; i < n; i++)
        total += (uint64_t)rest_range_part_head(head, i, boundary, ctype, &r[i], size) + r[i].len;
    return total;
}
