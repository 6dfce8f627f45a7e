/*
 * test_sentinel.c - base64 (RFC 4648 vectors, no line breaks at any length),
 * the JSON writers (Python json.dumps parity) and the sentinel line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/b64.h"
#include "agent/core/jsonw.h"
#include "runner/run/sentinel.h"

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

static const char *js(const char *s, size_t n, enum jsonw_bad mode)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 1u << 20);
    assert_int_equal(jsonw_str(&b, s, n, mode), 0);
    return buf_cstr(&b);
}

static void test_jsonw_python_parity(void **st)
{
    (void)st;
    /* Each expectation is what CPython's json.dumps(s) prints. */
    assert_string_equal(js("a b", 3, JSONW_SURROGATEESCAPE), "\"a b\"");
    assert_string_equal(js("q\"\\/", 4, JSONW_SURROGATEESCAPE), "\"q\\\"\\\\/\"");
    assert_string_equal(js("\n\r\t\b\f\x01\x1f\x7f", 8, JSONW_SURROGATEESCAPE),
                        "\"\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f\"");
    assert_string_equal(js("\xc3\xa9", 2, JSONW_SURROGATEESCAPE), "\"\\u00e9\"");
    assert_string_equal(js("\xe2\x82\xac", 3, JSONW_SURROGATEESCAPE), "\"\\u20ac\"");
    assert_string_equal(js("\xf0\x9f\x98\x80", 4, JSONW_SURROGATEESCAPE), "\"\\ud83d\\ude00\"");
    /* os.fsdecode(b"a\xffb") -> 'a\udcffb' */
    assert_string_equal(js("a\xff" "b", 3, JSONW_SURROGATEESCAPE), "\"a\\udcffb\"");
    /* Truncated sequence, overlong, encoded surrogate: each byte escaped. */
    assert_string_equal(js("\xe2\x82", 2, JSONW_SURROGATEESCAPE), "\"\\udce2\\udc82\"");
    assert_string_equal(js("\xc0\xaf", 2, JSONW_SURROGATEESCAPE), "\"\\udcc0\\udcaf\"");
    assert_string_equal(js("\xed\xa0\x80", 3, JSONW_SURROGATEESCAPE), "\"\\udced\\udca0\\udc80\"");
    /* errors="replace": one U+FFFD per maximal subpart, as CPython. */
    assert_string_equal(js("\xe2\x82" "A", 3, JSONW_REPLACE), "\"\\ufffdA\"");
    assert_string_equal(js("\xc0\xaf", 2, JSONW_REPLACE), "\"\\ufffd\\ufffd\"");
    assert_string_equal(js("\xed\xa0\x80", 3, JSONW_REPLACE), "\"\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(js("\xf4\x90\x80\x80", 4, JSONW_REPLACE), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(js("a\0b", 3, JSONW_REPLACE), "\"a\\u0000b\"");
}

static const char *dbl(double d)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 1024);
    assert_int_equal(jsonw_double(&b, d), 0);
    return buf_cstr(&b);
}

static void test_jsonw_double_repr(void **st)
{
    (void)st;
    /* What CPython's repr(float) prints. */
    assert_string_equal(dbl(0.0), "0.0");
    assert_string_equal(dbl(1.5), "1.5");
    assert_string_equal(dbl(100000.0), "100000.0");
    assert_string_equal(dbl(1700000000.0), "1700000000.0");
    assert_string_equal(dbl(1700000000.123456), "1700000000.123456");
    assert_string_equal(dbl(0.1), "0.1");
    assert_string_equal(dbl(0.0001), "0.0001");
    assert_string_equal(dbl(0.00001), "1e-05");
    assert_string_equal(dbl(1e16), "1e+16");
    assert_string_equal(dbl(1234567890123456.0), "1234567890123456.0");
    assert_string_equal(dbl(-2.5e-7), "-2.5e-07");
    assert_string_equal(dbl(1.7976931348623157e308), "1.7976931348623157e+308");
}

static void test_buf_integers(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(buf_put_u64(&b, 0, 0), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_u64(&b, 18446744073709551615ULL, 0), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_u64(&b, 42, 6), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_i64(&b, -9223372036854775807LL - 1), 0);
    assert_int_equal(buf_putc(&b, ' '), 0);
    assert_int_equal(buf_put_i64(&b, -7), 0);
    assert_string_equal(buf_cstr(&b), "0 18446744073709551615 000042 -9223372036854775808 -7");
    buf_free(&b);
}

static void test_sentinel_core(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1u << 20);
    struct job_outcome o = {0, "{\"n\": 12345678901234567890, \"f\": 1.10}", 38, NULL, "s3cr\"t", 6};
    assert_int_equal(sentinel_json(&b, &o, NULL), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"status\": \"succeeded\", \"exit_code\": 0, \"result\": {\"n\": 12345678901234567890, "
                        "\"f\": 1.10}, \"nonce\": \"s3cr\\\"t\"}");
    buf_reset(&b);
    struct job_outcome f = {137, NULL, 0, "result file is a symbolic link", "", 0};
    assert_int_equal(sentinel_json(&b, &f, "job-1"), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"status\": \"failed\", \"exit_code\": 137, \"result\": {\"exit_code\": 137}, "
                        "\"nonce\": \"\", \"result_error\": \"result file is a symbolic link\", \"job_id\": \"job-1\"}");
    struct buf line;
    buf_init(&line, 1u << 20);
    assert_int_equal(sentinel_line(&line, "{}", 2), 0);
    assert_string_equal(buf_cstr(&line), "__SANDBOX_RESULT__e30=\n");
    buf_free(&line);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64_rfc4648),         cmocka_unit_test(test_b64_never_wraps),
        cmocka_unit_test(test_jsonw_python_parity), cmocka_unit_test(test_jsonw_double_repr),
        cmocka_unit_test(test_buf_integers),       cmocka_unit_test(test_sentinel_core),
    };
    return cmocka_run_group_tests_name("sentinel", tests, NULL, NULL);
}
