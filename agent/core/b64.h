/*
 * b64.h - base64 (standard alphabet, '=' padding, never a line break):
 * encoding of its own (serve's hot path; Debian's libb64 encoder also
 * inserts a line break every 72 characters), decoding on top of libb64,
 * strict where libb64's decoder skips what it does not know.
 */
#ifndef SA_CORE_B64_H
#define SA_CORE_B64_H

#include "agent/core/buf.h"

#include <stddef.h>

size_t b64_encoded_len(size_t n);
/* Write the b64_encoded_len(n) characters of data[0..n) at dst (no
 * terminator); returns how many. */
size_t b64_encode_to(char *dst, const void *data, size_t n);
/* Append them to out. Returns 0, or -1 past out's bound. */
int b64_encode(struct buf *out, const void *data, size_t n);

/* Append the bytes that s[0..n) encodes: the standard or the URL-safe
 * alphabet (as protobuf's JSON mapping accepts), '=' padding optional but
 * correct when present, nothing else (no blanks, no line breaks). Returns 0,
 * or -1 for text that is not base64 or when out's bound would be passed. */
int b64_decode(struct buf *out, const char *s, size_t n);

#endif
