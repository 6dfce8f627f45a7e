/*
 * ring.h - the retention ring of one output channel of a process: the last
 * `max` bytes, addressed by ABSOLUTE byte offsets (offset 0 is the first byte
 * the process ever wrote on the channel), so a reader can say where it is and
 * see a gap as a jump (README "serve": retention).
 *
 * Owns its memory, which grows by doubling as output arrives (a quiet
 * process costs nothing) up to `max`, and then wraps. When growing fails the
 * ring keeps working at its current size, retaining less. No I/O, no loop:
 * unit-tested on its own (tests/unit/test_ring.c).
 */
#ifndef SA_PROC_RING_H
#define SA_PROC_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring {
    char *data;
    size_t cap;      /* allocated bytes, <= max */
    size_t max;      /* retention bound */
    uint64_t start;  /* absolute offset of the oldest retained byte */
    uint64_t end;    /* absolute offset just past the newest byte: all bytes ever written */
};

/* An empty ring keeping at most max bytes (0: keeps nothing, counts all). */
void ring_init(struct ring *r, size_t max);
void ring_free(struct ring *r);

/* Append p[0..n); the oldest bytes go once max is reached. Every byte is
 * counted in `end` either way. Returns 0, or -1 when memory to grow was
 * missing (the bytes that did not fit were dropped, the ring is sound). */
int ring_write(struct ring *r, const void *p, size_t n);

/* Give back the memory beyond the retained bytes (for a ring nothing will
 * be written to: a finished process's). Writing later still works. */
void ring_shrink(struct ring *r);

/* Copy up to max bytes from absolute *offset into dst and advance *offset
 * past them; returns how many (0 at the live end, or when *offset is past
 * it: a reader ahead waits for that byte). An *offset older than the oldest
 * retained byte first jumps to the oldest: *skipped (may be NULL) gets how
 * many bytes were jumped over (0 when none), for the caller to log. */
size_t ring_read(const struct ring *r, uint64_t *offset, char *dst, size_t max, uint64_t *skipped);

#endif
