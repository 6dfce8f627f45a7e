/*
 * test_num.c - the number grammar (agent/core/num.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/num.h"

#include <stdint.h>

static void test_mode(void **s)
{
    (void)s;
    mode_t m;
    assert_int_equal(num_mode("755", &m), 0);
    assert_int_equal(m, 0755);
    assert_int_equal(num_mode("0755", &m), 0);
    assert_int_equal(m, 0755);
    assert_int_equal(num_mode("0o1777", &m), 0);
    assert_int_equal(m, 01777);
    assert_int_equal(num_mode("0", &m), 0);
    assert_int_equal(m, 0);
    assert_int_equal(num_mode("07777", &m), 0);
    assert_int_equal(m, 07777);
    const char *bad[] = {"", "8", "0o", "17777", "000000", "-1", "7a", " 7", "0x7", "77777", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(num_mode(bad[i], &m), -1);
    assert_int_equal(num_mode(NULL, &m), -1);
}

static void test_count(void **s)
{
    (void)s;
    uint64_t v;
    assert_int_equal(num_count("0", 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(num_count("10", 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(num_count("11", 10, &v), -1);
    assert_int_equal(num_count("9223372036854775807", INT64_MAX, &v), 0);
    assert_true(v == (uint64_t)INT64_MAX);
    assert_int_equal(num_count("9223372036854775808", INT64_MAX, &v), -1);
    assert_int_equal(num_count("99999999999999999999999", UINT64_MAX, &v), -1);
    assert_int_equal(num_count("9", 5, &v), -1);
    const char *bad[] = {"", "-1", "+1", "1k", " 1", "1 ", "0x10", "1e3", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(num_count(bad[i], UINT64_MAX, &v), -1);
}

static void test_seconds(void **s)
{
    (void)s;
    double d;
    assert_int_equal(num_seconds("10", 100, &d), 0);
    assert_true(d == 10.0);
    assert_int_equal(num_seconds("0.5", 100, &d), 0);
    assert_true(d == 0.5);
    assert_int_equal(num_seconds("1e1", 100, &d), 0);
    assert_true(d == 10.0);
    assert_int_equal(num_seconds("0", 100, &d), 0);
    const char *bad[] = {"", "-1", "+1", "nan", "inf", "0x10", " 1", "1s", "101", "1e999", ".", "e", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(num_seconds(bad[i], 100, &d), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_count),
        cmocka_unit_test(test_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
