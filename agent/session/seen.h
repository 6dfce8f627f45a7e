/*
 * seen.h - the last `window` request ids (SESSION_DEDUP_WINDOW in the
 * session), to drop a duplicate line.
 *
 * A ring of the ids in arrival order plus a fixed-size hash index over it
 * (agent/core/hash.h, made with grow = 0): lookups and inserts are O(1),
 * memory is fixed at creation (about 700 KiB for 4096 ids), and the oldest id
 * is forgotten when a new one arrives in a full window.
 */
#ifndef SA_SESSION_SEEN_H
#define SA_SESSION_SEEN_H

#include <stddef.h>

struct seen;

/* window: how many ids are remembered (> 0, < 32768). NULL when out of memory. */
struct seen *seen_new(size_t window);
void seen_free(struct seen *s);
/* 1 when id was among the remembered ones (nothing changes), else 0 and it
 * is remembered now (forgetting the oldest when the window is full). */
int seen_check_add(struct seen *s, const char *id, size_t n);
int seen_contains(const struct seen *s, const char *id, size_t n);

#endif
