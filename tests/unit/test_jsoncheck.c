/*
 * test_jsoncheck.c - the strict RFC 8259 validator (agent/core/jsoncheck.c):
 * what JSON clients accept passes, what they refuse (or cJSON wrongly takes)
 * fails, the top-level type and span, depth and UTF-8 limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/jsoncheck.h"

#include <stdlib.h>
#include <string.h>

static void test_jsoncheck_grammar(void **st)
{
    (void)st;
    struct jsoncheck jc;
    const char *good[] = {"0", "-0", "1.5e+10", "-1E-2", "\"\\u0041\\ud800\"", "[]", "{}", " true ", "null",
                          "{\"a\":[1,{\"b\":null}]}"};
    const char *bad[] = {"+1", "01", "1.", ".5", "-", "1e", "[1,]", "{\"a\"}", "{a:1}", "'a'", "\"\\x\"",
                         "\"\t\"", "tru", "Infinity", "\xef\xbb\xbf{}", "\"\\u12G4\""};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (jsoncheck(good[i], strlen(good[i]), &jc) != 0) fail_msg("rejected %s: %s", good[i], jc.err);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (jsoncheck(bad[i], strlen(bad[i]), &jc) == 0) fail_msg("accepted %s", bad[i]);
}

static void test_type_and_span(void **st)
{
    (void)st;
    struct jsoncheck jc;
    const char *s = "  {\"a\": 1}\n";
    assert_int_equal(jsoncheck(s, strlen(s), &jc), 0);
    assert_int_equal(jc.type, JSON_OBJECT);
    assert_int_equal(jc.start, 2);
    assert_int_equal(jc.end, 10);
    assert_int_equal(jc.has_nul, 0);
    assert_int_equal(jsoncheck("\"a\\u0000\"", 9, &jc), 0);
    assert_int_equal(jc.type, JSON_STRING);
    assert_int_equal(jc.has_nul, 1);
    assert_int_equal(jsoncheck("[1] [2]", 7, &jc), -1);
    assert_non_null(jc.err);
    assert_int_equal(jsoncheck("", 0, &jc), -1);
}

static void test_utf8_and_depth(void **st)
{
    (void)st;
    struct jsoncheck jc;
    assert_int_equal(jsoncheck("\"\xc3\xa9\"", 4, &jc), 0);
    assert_int_equal(jsoncheck("\"\xc0\xaf\"", 4, &jc), -1); /* overlong */
    assert_int_equal(jsoncheck("\"\xed\xa0\x80\"", 5, &jc), -1); /* encoded surrogate */
    size_t n = JSONCHECK_MAX_DEPTH + 1;
    char *deep = malloc(2 * n);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    assert_int_equal(jsoncheck(deep, 2 * n, &jc), -1);
    assert_int_equal(jsoncheck(deep + 1, 2 * n - 2, &jc), 0);
    free(deep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsoncheck_grammar),
        cmocka_unit_test(test_type_and_span),
        cmocka_unit_test(test_utf8_and_depth),
    };
    return cmocka_run_group_tests_name("jsoncheck", tests, NULL, NULL);
}
