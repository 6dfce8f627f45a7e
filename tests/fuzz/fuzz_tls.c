/*
 * fuzz_tls.c - libFuzzer target: the PEM bundle reader of the TLS client
 * (runner/run/tls.c, tls_trust_parse: its scan for certificate objects,
 * base64, BearSSL's X.509 decoder). Any bytes give anchors or a refusal
 * with a reason; never a crash, a leak, or an anchor without a key.
 */
#include "agent/core/err.h"
#include "runner/run/tls.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tls_trust t;
    char err[ERR_LEN];
    err[0] = '\0';
    if (tls_trust_parse(&t, data, size, err) == 0) {
        if (t.n == 0) __builtin_trap();
        for (size_t i = 0; i < t.n; i++) {
            const br_x509_pkey *k = &t.ta[i].pkey;
            if (k->key_type == BR_KEYTYPE_RSA ? !k->key.rsa.nlen || !k->key.rsa.elen
                                              : k->key_type != BR_KEYTYPE_EC || !k->key.ec.qlen)
                __builtin_trap();
        }
        tls_trust_free(&t);
    } else if (!err[0] || t.n || t.ta) {
        __builtin_trap();
    }
    return 0;
}
