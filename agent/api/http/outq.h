/*
 * outq.h - a connection's bounded output queue: bytes waiting for the socket.
 *
 * Written at the back, drained from the front; the drained part is reclaimed
 * without moving the rest byte by byte on every write. Pure (no fds): the
 * connection asks for the pending bytes, writes what the socket takes, and
 * reports how much went out.
 *
 * Its memory is drawn from the process's budget (core/budget.h). Puts draw
 * whatever the budget says (a queue is bounded by its max, and a stream's
 * producer waits at the high-water mark: http/conn.c); a whole response
 * asks first with outq_room, which the budget may refuse.
 */
#ifndef SA_API_HTTP_OUTQ_H
#define SA_API_HTTP_OUTQ_H

#include "agent/core/buf.h"

#include <stddef.h>

struct outq {
    struct buf b; /* b.data[off..b.len) is pending */
    size_t off;
};

/* Never more than max bytes pending: a put past it fails. */
void outq_init(struct outq *q, size_t max);
void outq_free(struct outq *q);
size_t outq_len(const struct outq *q);
/* Queue p[0..n). Returns 0, or -1 (nothing queued) past the bound. */
int outq_put(struct outq *q, const void *p, size_t n);
/* Queue n bytes the caller writes at the pointer returned (before the next
 * call on q); NULL (nothing queued) past the bound or without memory. */
char *outq_reserve(struct outq *q, size_t n);
/* Room for n more bytes, drawn from the budget: 0, or -1 when it (or the
 * bound, or the memory) refuses them. The puts that follow use it. */
int outq_room(struct outq *q, size_t n);
/* Queue printf-style text (a response head). */
int outq_printf(struct outq *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The pending bytes, *n of them (NULL when none). */
const char *outq_peek(const struct outq *q, size_t *n);
/* n pending bytes were written. A drained queue keeps its memory (up to
 * a bound; above a small reserve not while the budget is spent). */
void outq_done(struct outq *q, size_t n);
/* Give back the memory of an empty queue above a small reserve (between
 * responses: an idle connection holds almost nothing). */
void outq_trim(struct outq *q);

#endif
