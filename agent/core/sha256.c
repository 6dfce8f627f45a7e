/*
 * agent/core/sha256.c - SHA-256 over BearSSL's br_sha256 (see sha256.h).
 */
#include "agent/core/sha256.h"
#include "agent/core/nonce.h"

void sha256_init(struct sha256 *h) { br_sha256_init(&h->br); }

void sha256_update(struct sha256 *h, const void *data, size_t n)
{
    if (n) br_sha256_update(&h->br, data, n);
}

void sha256_final(struct sha256 *h, unsigned char out[SHA256_LEN])
{
    br_sha256_out(&h->br, out);
    nonce_overwrite(h, sizeof *h);
}

void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN])
{
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, data, n);
    sha256_final(&h, out);
}
