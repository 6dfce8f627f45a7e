/*
 * test_sha256.c - SHA-256 (agent/core/sha256.c, over BearSSL): the FIPS
 * 180-2 / NIST vectors (empty, "abc", the two-block message, a million
 * 'a'), the same digests fed in pieces of every size, and the context
 * wiped by sha256_final.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *hex(const unsigned char d[SHA256_LEN])
{
    static char s[2 * SHA256_LEN + 1];
    for (int i = 0; i < SHA256_LEN; i++) snprintf(s + 2 * i, 3, "%02x", d[i]);
    return s;
}

static const char *digest(const char *s, size_t n)
{
    unsigned char d[SHA256_LEN];
    sha256(s, n, d);
    return hex(d);
}

static const char TWO_BLOCKS[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

static void test_sha256_vectors(void **st)
{
    (void)st;
    assert_string_equal(digest("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_string_equal(digest("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_string_equal(digest(TWO_BLOCKS, strlen(TWO_BLOCKS)),
                        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* A NUL inside is data like any other byte. */
    assert_string_equal(digest("\0", 1), "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
}

static void test_sha256_million_a(void **st)
{
    (void)st;
    size_t n = 1000000;
    char *a = malloc(n);
    memset(a, 'a', n);
    assert_string_equal(digest(a, n), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* Streamed in 1000 updates of 1000 bytes. */
    struct sha256 h;
    unsigned char d[SHA256_LEN];
    sha256_init(&h);
    for (size_t i = 0; i < n; i += 1000) sha256_update(&h, a + i, 1000);
    sha256_final(&h, d);
    assert_string_equal(hex(d), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_sha256_pieces_of_every_size(void **st)
{
    (void)st;
    /* 300 bytes (past several 64-byte blocks) split at every piece size,
     * empty updates included: always the one-call digest. */
    unsigned char msg[300], want[SHA256_LEN], got[SHA256_LEN];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (unsigned char)(i * 7 + 3);
    sha256(msg, sizeof msg, want);
    for (size_t piece = 1; piece <= sizeof msg; piece++) {
        struct sha256 h;
        sha256_init(&h);
        for (size_t off = 0; off < sizeof msg; off += piece) {
            sha256_update(&h, msg + off, off + piece <= sizeof msg ? piece : sizeof msg - off);
            sha256_update(&h, msg, 0);
        }
        sha256_final(&h, got);
        assert_memory_equal(got, want, SHA256_LEN);
    }
}

static void test_sha256_final_wipes(void **st)
{
    (void)st;
    struct sha256 h, zero;
    unsigned char d[SHA256_LEN];
    memset(&zero, 0, sizeof zero);
    sha256_init(&h);
    sha256_update(&h, "secret-token-secret-token", 25);
    sha256_final(&h, d);
    assert_memory_equal(&h, &zero, sizeof h);
    /* And it can be used again after an init. */
    sha256_init(&h);
    sha256_update(&h, "abc", 3);
    sha256_final(&h, d);
    assert_string_equal(hex(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_million_a),
        cmocka_unit_test(test_sha256_pieces_of_every_size),
        cmocka_unit_test(test_sha256_final_wipes),
    };
    return cmocka_run_group_tests_name("sha256", tests, NULL, NULL);
}
