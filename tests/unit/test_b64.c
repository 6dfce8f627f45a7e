/*
 * test_b64.c - base64 (agent/core/b64.c): RFC 4648 vectors, no line break
 * at any length (Debian's libb64 wraps at 72 columns unless driven right),
 * and a decoder that takes exactly what it should (both alphabets, optional
 * padding) and refuses the rest, within the output's bound. The encoder in
 * place (b64_encode_to: its wide path and its tail) against the reference
 * at every length, alignment and byte value, never a byte past its length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/b64.h"

#include <stdlib.h>
#include <string.h>

static const char *enc(const char *s, size_t n)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 1u << 30);
    assert_int_equal(b64_encode(&b, s, n), 0);
    return buf_cstr(&b);
}

static void test_b64_rfc4648(void **st)
{
    (void)st;
    assert_string_equal(enc("", 0), "");
    assert_string_equal(enc("f", 1), "Zg==");
    assert_string_equal(enc("fo", 2), "Zm8=");
    assert_string_equal(enc("foo", 3), "Zm9v");
    assert_string_equal(enc("foob", 4), "Zm9vYg==");
    assert_string_equal(enc("fooba", 5), "Zm9vYmE=");
    assert_string_equal(enc("foobar", 6), "Zm9vYmFy");
    assert_string_equal(enc("\xff\xfe\x00\x80", 4), "//4AgA==");
}

/* Reference encoder, to compare long outputs byte for byte. */
static char *ref_b64(const unsigned char *s, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1), *p = o;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
        *p++ = A[v >> 18 & 63];
        *p++ = A[v >> 12 & 63];
        *p++ = i + 1 < n ? A[v >> 6 & 63] : '=';
        *p++ = i + 2 < n ? A[v & 63] : '=';
    }
    *p = 0;
    return o;
}

static void test_b64_never_wraps(void **st)
{
    (void)st;
    /* Every length around libb64's 72-column wrap point, and 1 MiB + 1. */
    size_t lens[] = {50, 51, 52, 53, 54, 55, 56, 57, 100, 1000, 4096, (1u << 20) + 1};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        size_t n = lens[k];
        unsigned char *d = malloc(n);
        for (size_t i = 0; i < n; i++) d[i] = (unsigned char)(i * 131 + 7);
        const char *got = enc((const char *)d, n);
        char *want = ref_b64(d, n);
        assert_null(strchr(got, '\n'));
        assert_int_equal(strlen(got), b64_encoded_len(n));
        assert_string_equal(got, want);
        free(want);
        free(d);
    }
}

static void test_encode_to(void **st)
{
    (void)st;
    enum { MAXN = 700, GUARD = 64 };
    unsigned char *src = malloc(MAXN + 32);
    char *dst = malloc(4 * 256 + GUARD); /* the longer of the two outputs below */
    for (size_t i = 0; i < MAXN + 32; i++) src[i] = (unsigned char)(i * 151 + (i >> 8) * 7 + 3);
    for (size_t n = 0; n <= MAXN; n++) {
        for (size_t align = 0; align < 32; align += n < 100 ? 1 : 7) {
            size_t want_len = b64_encoded_len(n);
            memset(dst, '#', want_len + GUARD);
            assert_int_equal(b64_encode_to(dst, src + align, n), want_len);
            char *want = ref_b64(src + align, n);
            assert_memory_equal(dst, want, want_len);
            for (size_t g = 0; g < GUARD; g++) assert_int_equal(dst[want_len + g], '#');
            free(want);
        }
    }
    /* Every byte value in every position of a group. */
    unsigned char all[3 * 256];
    for (size_t i = 0; i < sizeof all; i++) all[i] = (unsigned char)(i % 3 == 0 ? i / 3 : i % 3 == 1 ? 255 - i / 3 : i / 3 ^ 0x5a);
    char *want = ref_b64(all, sizeof all);
    assert_int_equal(b64_encode_to(dst, all, sizeof all), strlen(want));
    assert_memory_equal(dst, want, strlen(want));
    free(want);
    free(dst);
    free(src);
}

static void test_round_trip(void **s)
{
    (void)s;
    unsigned char data[300];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n <= sizeof data; n++) {
        struct buf enc, dec;
        buf_init(&enc, 1 << 20);
        buf_init(&dec, n); /* exactly the decoded size fits */
        assert_int_equal(b64_encode(&enc, data, n), 0);
        assert_int_equal(enc.len, b64_encoded_len(n));
        assert_null(memchr(enc.data ? enc.data : "", '\n', enc.len));
        assert_int_equal(b64_decode(&dec, enc.data, enc.len), 0);
        assert_int_equal(dec.len, n);
        if (n) assert_memory_equal(dec.data, data, n);
        /* Without its padding too. */
        size_t k = enc.len;
        while (k && enc.data[k - 1] == '=') k--;
        buf_reset(&dec);
        assert_int_equal(b64_decode(&dec, enc.data, k), 0);
        assert_int_equal(dec.len, n);
        /* One byte less room: refused. */
        if (n) {
            struct buf small;
            buf_init(&small, n - 1);
            assert_int_equal(b64_decode(&small, enc.data, enc.len), -1);
            buf_free(&small);
        }
        buf_free(&enc);
        buf_free(&dec);
    }
}

static void test_alphabets(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 64);
    assert_int_equal(b64_decode(&b, "+/8=", 4), 0); /* fb ff */
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.data, "\xfb\xff", 2);
    buf_reset(&b);
    assert_int_equal(b64_decode(&b, "-_8", 3), 0); /* URL-safe, unpadded */
    assert_memory_equal(b.data, "\xfb\xff", 2);
    buf_reset(&b);
    assert_int_equal(b64_decode(&b, "aGVsbG8=", 8), 0);
    assert_memory_equal(b.data, "hello", 5);
    buf_reset(&b);
    assert_int_equal(b64_decode(&b, "", 0), 0);
    assert_int_equal(b.len, 0);
    const char *bad[] = {"a", "aGVsbG8==", "aGVsbG8===", "aGV sbG8=", "aGVsbG8=\n", "aG=sbG8=",
                         "aGVsbG{=", "aGVs\x80G8=", "====", "a===", "aGVsbG8=a", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(b64_decode(&b, bad[i], strlen(bad[i])), -1);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64_rfc4648),
        cmocka_unit_test(test_b64_never_wraps),
        cmocka_unit_test(test_encode_to),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_alphabets),
    };
    return cmocka_run_group_tests_name("b64", tests, NULL, NULL);
}
