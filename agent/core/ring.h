/*
 * ring.h - the last `max` bytes of a stream, addressed by ABSOLUTE byte
 * offsets (offset 0 is the first byte ever written), so a reader can say
 * where it is and see a gap as a jump. What `exec --max-output-bytes` keeps
 * of each stream, and the retention of each output channel of a process in
 * agent/proc (README "serve": retention).
 *
 * Owns its memory, which grows by doubling as output arrives (a quiet
 * process costs nothing) up to `max`, and then wraps. The memory is drawn
 * from the process's budget (budget.h) as it grows and given back as it
 * shrinks. When growing fails (the budget, or malloc) the ring keeps
 * working at its current size, retaining less, and says so (ring_limit)
 * until a later growth succeeds. No I/O, no loop: unit-tested on its own
 * (tests/unit/test_ring.c).
 */
#ifndef SA_CORE_RING_H
#define SA_CORE_RING_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

struct ring {
    char *data;
    size_t cap;      /* allocated bytes, <= max */
    size_t max;      /* retention bound */
    uint64_t start;  /* absolute offset of the oldest retained byte */
    uint64_t end;    /* absolute offset just past the newest byte: all bytes ever written */
    int refused;     /* the last growth failed: cap is the bound for now */
};

/* An empty ring keeping at most max bytes (0: keeps nothing, counts all). */
void ring_init(struct ring *r, size_t max);
void ring_free(struct ring *r);

/* Append p[0..n); the oldest bytes go once max is reached. Every byte is
 * counted in `end` either way. Returns 0, or -1 when memory to grow was
 * missing (the bytes that did not fit were dropped, the ring is sound). */
int ring_write(struct ring *r, const void *p, size_t n);

/* Writing in place (a read(2) straight into the ring): once the ring has
 * grown to max, the *n bytes at the returned pointer are where the next
 * bytes go (the oldest retained ones, when full); NULL before that (and
 * for max 0): ring_write then. ring_commit(n) says n of them were written. */
char *ring_tail(struct ring *r, size_t *n);
void ring_commit(struct ring *r, size_t n);

/* Grow, if it must and may, so that n more bytes fit beside the retained
 * ones (up to max). Returns 0, or -1 when growing failed (ring as it was). */
int ring_reserve(struct ring *r, size_t n);
/* What the ring keeps at most for now: max, or cap while growing fails. */
size_t ring_limit(const struct ring *r);

/* Give back the memory beyond the retained bytes (for a ring nothing will
 * be written to: a finished process's). Writing later still works. */
void ring_shrink(struct ring *r);

/* Copy up to max bytes from absolute *offset into dst and advance *offset
 * past them; returns how many (0 at the live end, or when *offset is past
 * it: a reader ahead waits for that byte). An *offset older than the oldest
 * retained byte first jumps to the oldest: *skipped (may be NULL) gets how
 * many bytes were jumped over (0 when none), for the caller to log. */
size_t ring_read(const struct ring *r, uint64_t *offset, char *dst, size_t max, uint64_t *skipped);

/* ring_read without the copy: the *n bytes (as ring_read would take them,
 * *offset jumping and *skipped as there) in place, *offset advanced past
 * them; NULL when *n is 0, or when they lie across the buffer's seam (once
 * a lap: *offset is then not advanced, ring_read them). Valid until the
 * next write. */
const char *ring_peek(const struct ring *r, uint64_t *offset, size_t max, size_t *n, uint64_t *skipped);

/* 1 when bytes were dropped: more were written than are kept. */
int ring_truncated(const struct ring *r);

/* Append the kept bytes, oldest first, to b as one JSON string (invalid
 * UTF-8 as U+FFFD, see jsonw.h). Returns 0, or -1 (memory, or b's bound). */
int ring_json(struct buf *b, const struct ring *r);

#endif
