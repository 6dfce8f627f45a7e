/*
 * ring.c - the last N bytes of a stream (see ring.h).
 */
#include "runner/exec/ring.h"
#include "agent/core/jsonw.h"

#include <stdlib.h>
#include <string.h>

/* The first allocation; doubled from there, clamped to max. */
#define RING_FIRST_CAP 4096

void ring_init(struct ring *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

void ring_free(struct ring *r)
{
    free(r->data);
    ring_init(r, r->max);
}

static int ring_grow(struct ring *r, size_t need)
{
    if (need <= r->cap) return 0;
    size_t cap = r->cap ? r->cap : RING_FIRST_CAP;
    while (cap < need) cap *= 2;
    if (cap > r->max) cap = r->max;
    char *p = realloc(r->data, cap);
    if (!p) return -1;
    r->data = p;
    r->cap = cap;
    return 0;
}

/* n >= max: only the last max bytes of p survive. */
static int ring_replace(struct ring *r, const char *p, size_t n)
{
    if (ring_grow(r, r->max) < 0) return -1;
    memcpy(r->data, p + (n - r->max), r->max);
    r->head = 0;
    r->len = r->max;
    return 0;
}

/* n < max, at the end of what is kept; once full, the oldest bytes go. */
static int ring_append(struct ring *r, const char *p, size_t n)
{
    if (r->head == 0 && r->len + n <= r->max) {
        /* Still linear. */
        if (ring_grow(r, r->len + n) < 0) return -1;
        memcpy(r->data + r->len, p, n);
        r->len += n;
        return 0;
    }
    if (ring_grow(r, r->max) < 0) return -1;
    size_t pos = (r->head + r->len) % r->max;
    size_t first = r->max - pos < n ? r->max - pos : n;
    memcpy(r->data + pos, p, first);
    memcpy(r->data, p + first, n - first);
    if (r->len + n > r->max) {
        r->head = (r->head + (r->len + n - r->max)) % r->max;
        r->len = r->max;
    } else {
        r->len += n;
    }
    return 0;
}

int ring_put(struct ring *r, const char *p, size_t n)
{
    r->total += n;
    if (r->max == 0 || n == 0) return 0;
    if (n >= r->max) return ring_replace(r, p, n);
    return ring_append(r, p, n);
}

int ring_truncated(const struct ring *r) { return r->total > r->len; }

int ring_json(struct buf *b, const struct ring *r)
{
    if (r->head == 0) return jsonw_str(b, r->data ? r->data : "", r->len, JSONW_REPLACE);
    /* Wrapped: the JSON writer takes one run of bytes, so make it one. */
    char *lin = malloc(r->len);
    if (!lin) return -1;
    size_t first = r->max - r->head < r->len ? r->max - r->head : r->len;
    memcpy(lin, r->data + r->head, first);
    memcpy(lin + first, r->data, r->len - first);
    int rc = jsonw_str(b, lin, r->len, JSONW_REPLACE);
    free(lin);
    return rc;
}
