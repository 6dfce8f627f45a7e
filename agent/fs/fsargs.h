/*
 * fsargs.h - pure parsers for the numeric options of `fs` and `exec`:
 * octal modes, byte counts and durations. No I/O, no globals: unit-tested and
 * fuzzed on their own.
 */
#ifndef SA_FSARGS_H
#define SA_FSARGS_H

#include <stdint.h>
#include <sys/types.h>

/* "755", "0755", "0o755": 1 to 4 octal digits after the optional prefix, at
 * most 07777. Returns 0, or -1 for anything else. */
int fsargs_mode(const char *s, mode_t *out);

/* A decimal count of bytes, 0 .. max: digits only (no sign, no spaces, no
 * suffix). Returns 0, or -1 for anything else, including overflow. */
int fsargs_count(const char *s, uint64_t max, uint64_t *out);

/* Seconds as a decimal number ("10", "0.5", "1e3"), 0 .. max, finite.
 * Returns 0, or -1 for anything else. */
int fsargs_seconds(const char *s, double max, double *out);

#endif
