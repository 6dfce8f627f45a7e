/*
 * agent/core/sha256.h - SHA-256, the agent's one digest: BearSSL's br_sha256
 * behind a small API (signatures over a URL, digests of content). Streaming
 * (init, update, final) or one call (sha256).
 */
#ifndef SA_CORE_SHA256_H
#define SA_CORE_SHA256_H

#include <bearssl_hash.h>
#include <stddef.h>

#define SHA256_LEN 32

struct sha256 {
    br_sha256_context br;
};

void sha256_init(struct sha256 *h);
void sha256_update(struct sha256 *h, const void *data, size_t n);
/* The digest of everything given since sha256_init into out; the context is
 * wiped (what it held may be a secret) and must be initialised again before
 * another use. */
void sha256_final(struct sha256 *h, unsigned char out[SHA256_LEN]);
/* The digest of data[0..n) in one call. */
void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN]);

#endif
