/*
 * outq.c - the bounded output queue (see http/outq.h).
 */
#include "agent/api/http/outq.h"
#include "agent/core/budget.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A queue trimmed between responses keeps at most this much memory. */
#define KEEP (64u * 1024u)
/* The longest line outq_printf writes (a response head). */
#define OUTQ_LINE_MAX 1024u
/* A drained queue keeps up to this much (a stream's high-water mark and
 * one message fit). */
#define KEEP_DRAINED (512u * 1024u)

void outq_init(struct outq *q, size_t max)
{
    buf_init_budget(&q->b, max);
    q->off = 0;
}

void outq_free(struct outq *q)
{
    buf_free(&q->b);
    q->off = 0;
}

size_t outq_len(const struct outq *q) { return q->b.len - q->off; }

/* Move the pending bytes to the front when the drained part is worth it. */
static void compact(struct outq *q, size_t need)
{
    if (q->off == 0) return;
    size_t end = q->b.len + need;
    if (q->off < q->b.len / 2 && end <= q->b.cap && end <= q->b.max) return;
    memmove(q->b.data, q->b.data + q->off, q->b.len - q->off);
    q->b.len -= q->off;
    q->off = 0;
}

int outq_room(struct outq *q, size_t n)
{
    if (n > q->b.max - outq_len(q)) return -1;
    compact(q, n);
    return buf_reserve(&q->b, n);
}

int outq_put(struct outq *q, const void *p, size_t n)
{
    if (n > q->b.max - outq_len(q)) return -1;
    compact(q, n);
    if (buf_reserve_force(&q->b, n) < 0) return -1;
    return buf_append(&q->b, p, n);
}

char *outq_reserve(struct outq *q, size_t n)
{
    if (n > q->b.max - outq_len(q)) return NULL;
    compact(q, n);
    if (buf_reserve_force(&q->b, n) < 0) return NULL;
    char *p = q->b.data + q->b.len;
    q->b.len += n;
    return p;
}

int outq_printf(struct outq *q, const char *fmt, ...)
{
    /* A head or a chunk size: room made as for a put of its bound. */
    compact(q, OUTQ_LINE_MAX);
    size_t room = q->b.max > q->b.len ? q->b.max - q->b.len : 0;
    buf_reserve_force(&q->b, room < OUTQ_LINE_MAX ? room : OUTQ_LINE_MAX);
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(&q->b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *outq_peek(const struct outq *q, size_t *n)
{
    *n = outq_len(q);
    return *n ? q->b.data + q->off : NULL;
}

void outq_done(struct outq *q, size_t n)
{
    q->off += n;
    if (q->off < q->b.len) return;
    /* Drained: up to KEEP_DRAINED the memory stays for the next write of
     * the same response (a stream drains often; giving it back each time
     * made every message map fresh pages). outq_trim gives it back between
     * responses; a queue grown past KEEP_DRAINED (a large unary reply)
     * gives it back now. */
    q->off = 0;
    q->b.len = 0;
    if (q->b.cap > KEEP_DRAINED || (q->b.cap > KEEP && budget_spent())) outq_trim(q);
}

void outq_trim(struct outq *q)
{
    if (outq_len(q)) return;
    q->off = 0;
    q->b.len = 0;
    if (q->b.cap > KEEP) buf_free(&q->b); /* the bound and the budget stay */
}
