/*
 * lsplit.c - bounded line splitting (see lsplit.h).
 */
#include "agent/core/lsplit.h"

#include <string.h>

/* A partial-line buffer that grew past this is released after use, so one
 * big line does not pin its memory for the life of the session. */
#define KEEP_CAP (256u * 1024u)

void lsplit_init(struct lsplit *s, size_t max)
{
    buf_init(&s->part, max);
    s->max = max;
    s->skipping = 0;
}

void lsplit_free(struct lsplit *s) { buf_free(&s->part); }

static void part_clear(struct lsplit *s)
{
    if (s->part.cap > KEEP_CAP) buf_free(&s->part);
    else buf_reset(&s->part);
}

void lsplit_reset(struct lsplit *s)
{
    part_clear(s);
    s->skipping = 0;
}

size_t lsplit_pending(const struct lsplit *s) { return s->part.len; }

/* The head of a too-long line: what is buffered, then the new bytes. */
static int too_large(struct lsplit *s, const char *p, size_t n, lsplit_fn fn, void *ctx)
{
    char head[LSPLIT_HEAD];
    size_t h = s->part.len < LSPLIT_HEAD ? s->part.len : LSPLIT_HEAD;
    if (h) memcpy(head, s->part.data, h);
    size_t more = n < LSPLIT_HEAD - h ? n : LSPLIT_HEAD - h;
    if (more) memcpy(head + h, p, more);
    part_clear(s);
    return fn(ctx, LSPLIT_TOO_LARGE, head, h + more);
}

size_t lsplit_feed(struct lsplit *s, const char *p, size_t n, lsplit_fn fn, void *ctx)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        if (s->skipping) {
            if (!nl) return n;
            s->skipping = 0;
            i = (size_t)(nl - p) + 1;
            continue;
        }
        if (!nl) {
            size_t rest = n - i;
            if (rest > s->max - s->part.len) {
                /* Known to be too long before its end: answer now, skip the rest. */
                s->skipping = 1;
                too_large(s, p + i, rest, fn, ctx);
                return n;
            }
            if (buf_append(&s->part, p + i, rest) < 0) { /* out of memory: drop the line */
                s->skipping = 1;
                too_large(s, p + i, rest, fn, ctx);
            }
            return n;
        }
        size_t len = (size_t)(nl - (p + i));
        int stop;
        if (s->part.len) {
            if (len > s->max - s->part.len || buf_append(&s->part, p + i, len) < 0) {
                stop = too_large(s, p + i, len, fn, ctx);
            } else {
                stop = fn(ctx, LSPLIT_LINE, s->part.data, s->part.len);
                part_clear(s);
            }
        } else if (len > s->max) {
            stop = too_large(s, p + i, len, fn, ctx);
        } else {
            stop = fn(ctx, LSPLIT_LINE, p + i, len);
        }
        i = (size_t)(nl - p) + 1;
        if (stop) return i;
    }
    return n;
}
