/*
 * test_entry.c - SANDBOX_JOB_INNER_ENTRY decoding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/run/entry.h"

#include <stdlib.h>
#include <string.h>

static char err[512];

static char **ok(const char *text)
{
    char **argv = NULL;
    err[0] = 0;
    assert_int_equal(entry_decode(text, strlen(text), &argv, err), 0);
    assert_non_null(argv);
    return argv;
}

static void refused(const char *text, size_t n, const char *want)
{
    char **argv = (char **)1;
    err[0] = 0;
    assert_int_equal(entry_decode(text, n, &argv, err), -1);
    assert_null(argv);
    if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
    assert_null(strchr(err, '\n'));
}

static void test_simple(void **s)
{
    (void)s;
    char **a = ok("[\"python3\", \"-c\", \"print(1)\"]");
    assert_string_equal(a[0], "python3");
    assert_string_equal(a[1], "-c");
    assert_string_equal(a[2], "print(1)");
    assert_null(a[3]);
    entry_free(a);
}

static void test_escapes_and_unicode(void **s)
{
    (void)s;
    char **a = ok(" [\"a b\", \"q\\\"uote\", \"\\u00e9\\ud83d\\ude00\", \"\xc3\xa9\", \"\"] ");
    assert_string_equal(a[0], "a b");
    assert_string_equal(a[1], "q\"uote");
    assert_string_equal(a[2], "\xc3\xa9\xf0\x9f\x98\x80");
    assert_string_equal(a[3], "\xc3\xa9");
    assert_string_equal(a[4], "");
    assert_null(a[5]);
    entry_free(a);
}

static void test_empty(void **s)
{
    (void)s;
    refused(NULL, 0, "empty SANDBOX_JOB_INNER_ENTRY");
    refused("", 0, "empty SANDBOX_JOB_INNER_ENTRY");
    refused("[]", 2, "empty SANDBOX_JOB_INNER_ENTRY");
    refused(" [ ] ", 5, "empty SANDBOX_JOB_INNER_ENTRY");
}

static void test_not_json(void **s)
{
    (void)s;
    refused("echo hi", 7, "not valid JSON");
    refused("[\"a\",]", 6, "not valid JSON");
    refused("[\"a\"", 4, "not valid JSON");
    refused("[\"a\"] x", 7, "extra data");
    refused("[\"\xff\"]", 5, "invalid UTF-8");
    refused("[01]", 4, "not valid JSON");
}

static void test_not_array(void **s)
{
    (void)s;
    refused("{\"a\": 1}", 8, "not an object");
    refused("\"ls\"", 4, "not a string");
    refused("null", 4, "not null");
}

static void test_non_strings(void **s)
{
    (void)s;
    refused("[\"a\", 1]", 8, "SANDBOX_JOB_INNER_ENTRY[1] is a number");
    refused("[null]", 6, "[0] is null");
    refused("[\"a\", [\"b\"]]", 12, "[1] is an array");
    refused("[true]", 6, "[0] is a boolean");
    refused("[{}]", 4, "[0] is an object");
}

static void test_nul(void **s)
{
    (void)s;
    refused("[\"a\\u0000b\"]", 12, "\\u0000");
}

static void test_deep_nesting(void **s)
{
    (void)s;
    size_t n = 100000;
    char *t = malloc(n);
    memset(t, '[', n);
    refused(t, n, "nested too deeply");
    free(t);
}

/* 10 MB: more than the kernel lets through an environment variable, so the
 * bound is exercised here rather than through execve. */
static void test_ten_megabytes(void **s)
{
    (void)s;
    size_t n = 10u * 1000 * 1000;
    char *t = malloc(n + 1);
    /* ["xxxx...", "xxxx...", ...] of 1000-byte strings */
    size_t i = 0;
    t[i++] = '[';
    while (i + 1010 < n) {
        if (i > 1) t[i++] = ',';
        t[i++] = '"';
        memset(t + i, 'x', 1000);
        i += 1000;
        t[i++] = '"';
    }
    t[i++] = ']';
    char **argv;
    assert_int_equal(entry_decode(t, i, &argv, err), 0);
    size_t count = 0;
    while (argv[count]) {
        assert_int_equal(strlen(argv[count]), 1000);
        count++;
    }
    assert_true(count > 9000);
    entry_free(argv);
    /* Over the stated bound: refused with the reason, not decoded. */
    char *big = malloc(ENTRY_MAX_BYTES + 2);
    memset(big, ' ', ENTRY_MAX_BYTES + 1);
    refused(big, ENTRY_MAX_BYTES + 1, "over the");
    free(big);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple),        cmocka_unit_test(test_escapes_and_unicode),
        cmocka_unit_test(test_empty),         cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_not_array),     cmocka_unit_test(test_non_strings),
        cmocka_unit_test(test_nul),           cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_ten_megabytes),
    };
    return cmocka_run_group_tests_name("entry", tests, NULL, NULL);
}
