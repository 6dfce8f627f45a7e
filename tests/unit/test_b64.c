/*
 * test_b64.c - base64 (agent/core/b64.c): the encoder never wraps, the
 * decoder takes exactly what it should (both alphabets, optional padding)
 * and refuses the rest, within the output's bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/b64.h"

#include <string.h>

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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip),
                                       cmocka_unit_test(test_alphabets)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
