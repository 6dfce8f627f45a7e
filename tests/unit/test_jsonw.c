/*
 * test_jsonw.c - the JSON writers (agent/core/jsonw.c): strings as CPython's
 * json.dumps prints them (surrogateescape and replace modes), doubles as
 * repr(float), and jsonw_double's integer fast path printing exactly what
 * jsonw_double_repr (the plain repr() search) prints, for mtimes and for
 * random doubles of every range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/jsonw.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void same(double d)
{
    struct buf a, b;
    buf_init(&a, 1024);
    buf_init(&b, 1024);
    assert_int_equal(jsonw_double(&a, d), 0);
    assert_int_equal(jsonw_double_repr(&b, d), 0);
    if (a.len != b.len || memcmp(a.data, b.data, a.len))
        fail_msg("%.17g: fast '%.*s' reference '%.*s'", d, (int)a.len, a.data, (int)b.len, b.data);
    buf_free(&a);
    buf_free(&b);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_fixed(void **s)
{
    (void)s;
    double v[] = {1.0, 1.5, 2.0, 4.0, 1700000000.0, 1796074943.2022915, 1796074943.1998024, 0.1,
                  123.456, 999999999999999.9, 1e15, 1e16, 0.0, -0.0, -1.5, -1796074943.2022915,
                  0.5, 1e-5, 3.0000000000000004, 1.0000000000000002, 9007199254740993.0};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) same(v[i]);
}

static void test_mtimes(void **s)
{
    (void)s;
    for (int i = 0; i < 200000; i++) {
        int64_t sec = (int64_t)(next() % 4000000000ull) + 1;
        long nsec = (long)(next() % 1000000000ull);
        if (i % 7 == 0) nsec = (nsec / 1000) * 1000; /* microsecond filesystems */
        if (i % 11 == 0) nsec = 0;
        same((double)sec + (double)nsec * 1e-9);
    }
}

static void test_random_bits(void **s)
{
    (void)s;
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = next();
        double d;
        memcpy(&d, &bits, sizeof d);
        if (d != d) continue;
        same(d);
    }
    for (int i = 0; i < 200000; i++) {
        double d = (double)(next() >> 11) / (double)(1ull << (next() % 60));
        same(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonw_python_parity),
        cmocka_unit_test(test_jsonw_double_repr),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_mtimes),
        cmocka_unit_test(test_random_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
