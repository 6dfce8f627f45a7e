/*
 * lsplit.h - splitting a byte stream into lines with a hard bound on memory.
 *
 * A complete line is handed over as is (from the input chunk when it lies
 * there whole, else from the partial-line buffer). A line longer than `max`
 * is never buffered: the callback gets its first LSPLIT_HEAD bytes as soon as
 * it is known to be too long, and the rest up to the next newline is skipped.
 * So memory stays at most `max` + the caller's chunk, whatever the input.
 */
#ifndef SA_CORE_LSPLIT_H
#define SA_CORE_LSPLIT_H

#include "agent/core/buf.h"

#include <stddef.h>

/* How much of a too-long line is kept for reading its id. */
#define LSPLIT_HEAD 4096

enum lsplit_kind { LSPLIT_LINE, LSPLIT_TOO_LARGE };

/* p[0..n) is the line without its newline (LINE) or its head (TOO_LARGE).
 * Return nonzero to stop feeding after this line. */
typedef int (*lsplit_fn)(void *ctx, enum lsplit_kind kind, const char *p, size_t n);

struct lsplit {
    struct buf part;  /* the partial last line, at most max bytes */
    size_t max;
    int skipping;     /* inside a too-long line: drop up to the newline */
};

void lsplit_init(struct lsplit *s, size_t max);
void lsplit_free(struct lsplit *s);
/* Forget the partial line (the stream restarted: truncation, new file). */
void lsplit_reset(struct lsplit *s);
/* Bytes of the partial line held. */
size_t lsplit_pending(const struct lsplit *s);
/* Feed p[0..n). Returns how many bytes were consumed: n, or fewer when the
 * callback asked to stop (feed the rest later). */
size_t lsplit_feed(struct lsplit *s, const char *p, size_t n, lsplit_fn fn, void *ctx);

#endif
