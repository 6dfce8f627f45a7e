/*
 * test_utf8.c - the strict UTF-8 decoder (agent/core/utf8.c): valid forms of
 * every length, and CPython's "maximal subpart" lengths for what is invalid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/utf8.h"

#include <string.h>

static void ok(const char *s, size_t len, unsigned want)
{
    unsigned cp = 0;
    size_t bad = 9;
    assert_int_equal(utf8_next((const unsigned char *)s, strlen(s), &cp, &bad), len);
    assert_int_equal(cp, want);
}

static void ko(const char *s, size_t n, size_t want_bad)
{
    unsigned cp;
    size_t bad = 0;
    assert_int_equal(utf8_next((const unsigned char *)s, n, &cp, &bad), 0);
    assert_int_equal(bad, want_bad);
}

static void test_valid(void **st)
{
    (void)st;
    ok("A", 1, 0x41);
    ok("\xc3\xa9", 2, 0xe9);
    ok("\xe2\x82\xac", 3, 0x20ac);
    ok("\xf0\x9f\x98\x80", 4, 0x1f600);
    ok("\xf4\x8f\xbf\xbf", 4, 0x10ffff);
}

static void test_invalid_subparts(void **st)
{
    (void)st;
    ko("\x80", 1, 1);                 /* lone continuation */
    ko("\xc0\xaf", 2, 1);             /* overlong lead: each byte alone */
    ko("\xe2\x82", 2, 2);             /* truncated: the valid prefix is one subpart */
    ko("\xe2\x82" "A", 3, 2);
    ko("\xed\xa0\x80", 3, 1);         /* encoded surrogate */
    ko("\xf4\x90\x80\x80", 4, 1);     /* above U+10FFFF */
    ko("\xf0\x9f\x98", 3, 3);
    ko("\xff", 1, 1);
}

static void test_check(void **st)
{
    (void)st;
    const char *s = "caf\xc3\xa9 \xe2\x82\xac";
    assert_int_equal(utf8_check((const unsigned char *)s, strlen(s)), strlen(s));
    assert_int_equal(utf8_check((const unsigned char *)"ab\xffz", 4), 2);
    assert_int_equal(utf8_check((const unsigned char *)"", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid_subparts),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
