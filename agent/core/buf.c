/*
 * buf.c - bounded growable buffers (see buf.h).
 */
#include "agent/core/buf.h"
#include "agent/core/budget.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
    b->budget = 0;
}

void buf_init_budget(struct buf *b, size_t max)
{
    buf_init(b, max);
    b->budget = 1;
}

void buf_free(struct buf *b)
{
    if (b->budget) budget_give(b->cap);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(struct buf *b) { b->len = 0; }

int buf_over(const struct buf *b, size_t n) { return n > b->max || b->len > b->max - n; }

static int grow(struct buf *b, size_t extra, int force)
{
    /* +1 keeps room for the terminator buf_cstr adds. */
    if (buf_over(b, extra)) return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    if (b->max < (size_t)-1 && cap > b->max + 1) cap = b->max + 1; /* >= need */
    size_t more = cap - b->cap;
    if (b->budget && force) budget_force(more);
    else if (b->budget && budget_take(more) < 0) return -1;
    char *p = realloc(b->data, cap);
    if (!p) {
        if (b->budget) budget_give(more);
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_reserve(struct buf *b, size_t extra) { return grow(b, extra, 0); }
int buf_reserve_force(struct buf *b, size_t extra) { return grow(b, extra, 1); }

/* JSON is written in many pieces of a few bytes. musl's memcpy starts a
 * `rep movs` for each, which cost more than half of `fs list`'s user time;
 * a byte loop is faster for pieces this small. The attribute keeps GCC from
 * turning the loop back into a memcpy call. */
#define SMALL_COPY 32
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
int buf_append(struct buf *b, const void *p, size_t n)
{
    if (n == 0) return 0;
    if (buf_reserve(b, n) < 0) return -1;
    if (n <= SMALL_COPY) {
        char *d = b->data + b->len;
        const char *s = p;
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    } else {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    return 0;
}

int buf_putc(struct buf *b, char c) { return buf_append(b, &c, 1); }

int buf_puts(struct buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    int rc = -1;
    if (n >= 0 && (size_t)n < sizeof small) {
        rc = buf_append(b, small, (size_t)n);
    } else if (n >= 0 && buf_reserve(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
        rc = 0;
    }
    va_end(again);
    return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_put_u64(struct buf *b, unsigned long long v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < (int)sizeof tmp);
    while (n < width && n < (int)sizeof tmp) tmp[sizeof tmp - 1 - n++] = '0';
    return buf_append(b, tmp + sizeof tmp - n, (size_t)n);
}

int buf_put_i64(struct buf *b, long long v)
{
    if (v < 0) {
        if (buf_putc(b, '-') < 0) return -1;
        return buf_put_u64(b, 0ULL - (unsigned long long)v, 0);
    }
    return buf_put_u64(b, (unsigned long long)v, 0);
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

const char *buf_cstr(struct buf *b)
{
    if (buf_reserve(b, 0) < 0) return NULL;
    b->data[b->len] = '\0';
    return b->data;
}
