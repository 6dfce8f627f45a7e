/*
 * ring.c - the retention ring (see ring.h).
 *
 * Absolute offset o lives at data[o % cap]. Growing re-places the retained
 * bytes at their positions in the larger buffer, so the mapping holds for
 * every cap; the retained bytes, end - start, never exceed cap.
 */
#include "agent/core/ring.h"
#include "agent/core/budget.h"
#include "agent/core/jsonw.h"

#include <stdlib.h>
#include <string.h>

/* The first allocation: small enough that a process printing one line costs
 * little, large enough that a chatty one doubles only a few times. */
#define RING_FIRST 4096

void ring_init(struct ring *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

void ring_free(struct ring *r)
{
    budget_give(r->cap);
    free(r->data);
    r->data = NULL;
    r->cap = 0;
}

/* Store n bytes at absolute offset off of a buffer of cap bytes (n <= cap). */
static void put_at(char *data, size_t cap, uint64_t off, const char *p, size_t n)
{
    size_t pos = (size_t)(off % cap);
    size_t first = cap - pos < n ? cap - pos : n;
    memcpy(data + pos, p, first);
    memcpy(data, p + first, n - first);
}

/* Load n bytes from absolute offset off (n <= cap). */
static void get_at(const char *data, size_t cap, uint64_t off, char *dst, size_t n)
{
    size_t pos = (size_t)(off % cap);
    size_t first = cap - pos < n ? cap - pos : n;
    memcpy(dst, data + pos, first);
    memcpy(dst + first, data, n - first);
}

/* Move the retained bytes into a buffer of exactly cap bytes (>= retained,
 * > 0), drawn from the budget (a smaller one whatever it says: the old one
 * goes right after). Returns 0, or -1 with the ring as it was. */
static int ring_move(struct ring *r, size_t cap)
{
    if (cap < r->cap) budget_force(cap);
    else if (budget_take(cap) < 0) return -1;
    char *data = malloc(cap);
    if (!data) {
        budget_give(cap);
        return -1;
    }
    size_t kept = (size_t)(r->end - r->start);
    if (kept) {
        /* The retained bytes in at most two runs of the old buffer. */
        size_t pos = (size_t)(r->start % r->cap);
        size_t first = r->cap - pos < kept ? r->cap - pos : kept;
        put_at(data, cap, r->start, r->data + pos, first);
        put_at(data, cap, r->start + first, r->data, kept - first);
    }
    budget_give(r->cap);
    free(r->data);
    r->data = data;
    r->cap = cap;
    return 0;
}

/* Make cap at least want (<= max), doubling. Returns 0, or -1 (refused). */
static int ring_grow(struct ring *r, size_t want)
{
    size_t cap = r->cap ? r->cap : RING_FIRST;
    while (cap < want && cap <= r->max / 2) cap *= 2;
    if (cap < want || cap > r->max) cap = r->max;
    r->refused = ring_move(r, cap) < 0;
    return r->refused ? -1 : 0;
}

int ring_reserve(struct ring *r, size_t n)
{
    size_t kept = (size_t)(r->end - r->start);
    size_t want = n < r->max - kept ? kept + n : r->max;
    return want > r->cap ? ring_grow(r, want) : 0;
}

size_t ring_limit(const struct ring *r) { return r->refused ? r->cap : r->max; }

void ring_shrink(struct ring *r)
{
    size_t kept = (size_t)(r->end - r->start);
    if (kept == r->cap) return;
    if (kept == 0) {
        ring_free(r);
        return;
    }
    ring_move(r, kept); /* on failure the ring just stays larger */
}

int ring_write(struct ring *r, const void *p, size_t n)
{
    const char *src = p;
    int rc = 0;
    if (n == 0) return 0;
    /* Of this write, only the last max bytes can survive. */
    size_t keep = n < r->max ? n : r->max;
    size_t kept = (size_t)(r->end - r->start);
    size_t want = kept + keep < r->max ? kept + keep : r->max;
    if (want > r->cap && ring_grow(r, want) < 0) rc = -1;
    if (keep > r->cap) keep = r->cap;
    r->end += n;
    if (keep) put_at(r->data, r->cap, r->end - keep, src + (n - keep), keep);
    /* Whatever no longer fits (older bytes, or the head of this write) is gone. */
    if (r->end - r->start > r->cap) r->start = r->end - r->cap;
    return rc;
}

char *ring_tail(struct ring *r, size_t *n)
{
    if (r->cap == 0 || r->cap < r->max) return NULL;
    size_t pos = (size_t)(r->end % r->cap);
    *n = r->cap - pos;
    return r->data + pos;
}

void ring_commit(struct ring *r, size_t n)
{
    r->end += n;
    if (r->end - r->start > r->cap) r->start = r->end - r->cap;
}

size_t ring_read(const struct ring *r, uint64_t *offset, char *dst, size_t max, uint64_t *skipped)
{
    if (skipped) *skipped = 0;
    if (*offset < r->start) {
        if (skipped) *skipped = r->start - *offset;
        *offset = r->start;
    }
    if (*offset >= r->end) return 0;
    uint64_t avail = r->end - *offset;
    size_t n = avail < max ? (size_t)avail : max;
    if (n) get_at(r->data, r->cap, *offset, dst, n);
    *offset += n;
    return n;
}

const char *ring_peek(const struct ring *r, uint64_t *offset, size_t max, size_t *n, uint64_t *skipped)
{
    if (skipped) *skipped = 0;
    if (*offset < r->start) {
        if (skipped) *skipped = r->start - *offset;
        *offset = r->start;
    }
    *n = 0;
    if (*offset >= r->end) return NULL;
    uint64_t avail = r->end - *offset;
    *n = avail < max ? (size_t)avail : max;
    size_t pos = (size_t)(*offset % r->cap);
    if (r->cap - pos < *n) return NULL; /* across the seam: ring_read copies it */
    *offset += *n;
    return r->data + pos;
}

int ring_truncated(const struct ring *r) { return r->start > 0; }

int ring_json(struct buf *b, const struct ring *r)
{
    size_t n = (size_t)(r->end - r->start);
    if (n == 0) return jsonw_str(b, "", 0, JSONW_REPLACE);
    char *lin = malloc(n);
    if (!lin) return -1;
    uint64_t off = r->start;
    size_t got = ring_read(r, &off, lin, n, NULL);
    int rc = jsonw_str(b, lin, got, JSONW_REPLACE);
    free(lin);
    return rc;
}
