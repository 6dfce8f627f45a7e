/*
 * utf8.h - the one UTF-8 decoder of the agent, strict as Python's: no overlong
 * forms, no encoded surrogates, nothing above U+10FFFF.
 */
#ifndef SA_CORE_UTF8_H
#define SA_CORE_UTF8_H

#include <stddef.h>

/*
 * Decode the sequence at s[0..n). Returns its length (1-4) and sets *cp when it
 * is valid. When it is not, returns 0 and sets *bad to the length of the
 * "maximal subpart" (1-3 bytes) that Python's decoder replaces with a single
 * U+FFFD in errors="replace" mode.
 */
size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp, size_t *bad);

/* Offset of the first invalid byte, or n when s[0..n) is valid UTF-8. */
size_t utf8_check(const unsigned char *s, size_t n);

#endif
