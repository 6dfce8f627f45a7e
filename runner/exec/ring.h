/*
 * ring.h - the last N bytes of a stream: what `exec --max-output-bytes N`
 * keeps of each of the command's streams (README, "`sandbox-agent exec`").
 *
 * Owns one buffer that grows as output arrives (a quiet command costs
 * nothing), never beyond max, and then wraps. Counts every byte offered, kept
 * or not, so a caller can tell whether the stream was truncated. No I/O:
 * unit-tested on its own (tests/unit/test_ring.c).
 */
#ifndef SA_EXEC_RING_H
#define SA_EXEC_RING_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

struct ring {
    char *data;      /* cap bytes, NULL until the first byte */
    size_t cap;      /* allocated, <= max */
    size_t max;      /* the bound: at most this many bytes are kept */
    size_t head;     /* index of the oldest kept byte */
    size_t len;      /* bytes kept, <= max */
    uint64_t total;  /* bytes offered to ring_put, kept or not */
};

/* An empty ring that will keep at most max bytes (0: none, only counted). */
void ring_init(struct ring *r, size_t max);
void ring_free(struct ring *r);

/* Offer n bytes: all are counted, the last max of everything kept. Returns
 * 0, or -1 when memory ran out (the bytes are counted but not kept). */
int ring_put(struct ring *r, const char *p, size_t n);

/* 1 when bytes were dropped: more were offered than are kept. */
int ring_truncated(const struct ring *r);

/* Append the kept bytes, oldest first, to b as one JSON string (invalid
 * UTF-8 as U+FFFD, see jsonw.h). Returns 0, or -1 (memory, or b's bound). */
int ring_json(struct buf *b, const struct ring *r);

#endif
