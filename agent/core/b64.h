/*
 * b64.h - base64 (standard alphabet, '=' padding, never a line break) on top of
 * libb64. The protocol forbids line breaks; Debian's libb64 encoder inserts
 * one every 72 characters, so this file is the only caller of it.
 */
#ifndef SA_B64_H
#define SA_B64_H

#include "agent/core/buf.h"

#include <stddef.h>

size_t b64_encoded_len(size_t n);
int b64_encode(struct buf *out, const void *data, size_t n);

#endif
