/*
 * num.h - the one grammar for numbers the agent reads from a command line or
 * the environment: octal modes, decimal counts and sizes, durations in
 * seconds, hex digits. Strict on purpose: a value the agent half-understands
 * is a usage error, never a guess. No I/O, no globals: unit-tested
 * (tests/unit/test_num.c) and fuzzed (tests/fuzz/fuzz_num.c) on their own.
 */
#ifndef SA_CORE_NUM_H
#define SA_CORE_NUM_H

#include <stdint.h>
#include <sys/types.h>

/* A year: the longest duration any option or variable takes. Anything longer
 * is a typo, and keeps timer arithmetic sane. */
#define NUM_MAX_SECONDS (365.0 * 24 * 3600)

/* "755", "0755", "0o755": 1 to 4 octal digits after the optional prefix, at
 * most 07777. Returns 0, or -1 for anything else. */
int num_mode(const char *s, mode_t *out);

/* A decimal count (of bytes, requests, ...), 0 .. max: digits only (no sign,
 * no spaces, no suffix, no hex). Returns 0, or -1 for anything else,
 * including overflow. */
int num_count(const char *s, uint64_t max, uint64_t *out);

/* Seconds as a decimal number ("10", "0.5", "1e3"), 0 .. max, finite: no
 * sign, no hex, no "inf"/"nan", no blanks. Returns 0, or -1 otherwise. */
int num_seconds(const char *s, double max, double *out);

/* The value of one hex digit (either case), or -1. */
int num_hexval(int c);

#endif
