/*
 * buf.h - a growable byte buffer with a hard upper bound.
 *
 * Every buffer that may hold untrusted input is one of these, so its bound is
 * stated where it is created (buf_init's `max`). Appending past the bound fails
 * with -1 and leaves the buffer as it was; it never aborts. The memory held
 * (cap) is never more than the bound and a terminator.
 *
 * A buffer made with buf_init_budget draws its memory from the process's
 * budget (budget.h) as it grows and gives it back when freed: an append
 * the budget cannot cover fails as one past the bound does, and the caller
 * tells the two apart by the bound (buf_over).
 */
#ifndef SA_CORE_BUF_H
#define SA_CORE_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* appends that would pass this fail */
    int budget; /* buf_init_budget: cap is drawn from the budget */
};

void buf_init(struct buf *b, size_t max);
/* The same, drawing from the process's memory budget. */
void buf_init_budget(struct buf *b, size_t max);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
int buf_reserve(struct buf *b, size_t extra);
/* buf_reserve drawing whatever the budget says (budget_force): for what is
 * bounded elsewhere and must not fail for the budget. */
int buf_reserve_force(struct buf *b, size_t extra);
/* 1 when n more bytes would pass the bound (else a failing append of n
 * bytes was the budget's, or the memory's). */
int buf_over(const struct buf *b, size_t n);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_putc(struct buf *b, char c);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list. */
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Decimal integers without printf (hot paths: one per listed file). width > 0
 * pads with leading zeros to that many digits. */
int buf_put_u64(struct buf *b, unsigned long long v, int width);
int buf_put_i64(struct buf *b, long long v);
/* Remove the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* NUL-terminate (not counted in len) and return data; NULL on failure. */
const char *buf_cstr(struct buf *b);

#endif
