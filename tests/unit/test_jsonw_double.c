/*
 * test_jsonw_double.c - jsonw_double's integer fast path must print exactly what
 * jsonw_double_repr (the plain repr() search) prints, for mtimes and for random doubles of every range.
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
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_mtimes),
        cmocka_unit_test(test_random_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
