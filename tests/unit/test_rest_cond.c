/*
 * test_rest_cond.c - conditional GETs of /files (agent/api/rest/cond.c): the
 * three HTTP-date forms and what they refuse, Last-Modified's form, and RFC
 * 9110's order of If-Match, If-Unmodified-Since, If-None-Match,
 * If-Modified-Since and If-Range as Go's ServeContent judges them with no
 * ETag (equal, older and newer dates; "*"; a file with no time).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/cond.h"

#include <string.h>

#define T 784111777 /* Sun, 06 Nov 1994 08:49:37 GMT */

static void test_dates(void **s)
{
    (void)s;
    int64_t t = 0;
    char out[REST_COND_DATE_LEN];
    assert_int_equal(rest_cond_parse_date("Sun, 06 Nov 1994 08:49:37 GMT", &t), 0);
    assert_int_equal(t, T);
    assert_int_equal(rest_cond_parse_date("Sunday, 06-Nov-94 08:49:37 GMT", &t), 0);
    assert_int_equal(t, T);
    assert_int_equal(rest_cond_parse_date("Sun Nov  6 08:49:37 1994", &t), 0);
    assert_int_equal(t, T);
    assert_int_equal(rest_cond_parse_date("sun, 06 nov 1994 8:49:37 GMT", &t), 0); /* as Go: names without case, one-digit hour */
    assert_int_equal(t, T);
    assert_int_equal(rest_cond_parse_date("Thu, 01-Jan-30 00:00:00 GMT", &t), -1); /* RFC 850 needs the long name */
    assert_int_equal(rest_cond_parse_date("Thursday, 01-Jan-30 00:00:00 GMT", &t), 0);
    assert_int_equal(t, 1893456000); /* 2030: a two-digit year below 69 is 20xx */
    static const char *bad[] = {"", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT ",
                                "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
                                "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
                                "Sun, 06 Nov 1994 08:49:37 PST", "Xyz, 06 Nov 1994 08:49:37 GMT",
                                "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
                                "Sun, 29 Feb 1900 08:49:37 GMT", "1994-11-06T08:49:37Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(rest_cond_parse_date(bad[i], &t), -1);
    assert_int_equal(rest_cond_parse_date("Tue, 29 Feb 2000 00:00:00 GMT", &t), 0);
    assert_int_equal(rest_cond_format_date(T, out), 0);
    assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(rest_cond_format_date(0, out), 0);
    assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_int_equal(rest_cond_has_time(0, 0), 0);
    assert_int_equal(rest_cond_has_time(0, 1), 1);
}

static enum rest_cond_result eval(struct rest_cond_req h, int64_t mtime, int *range_ok)
{
    return rest_cond_eval(&h, mtime, 500000000, range_ok);
}

static void test_order(void **s)
{
    (void)s;
    int ok;
    const char *at = "Sun, 06 Nov 1994 08:49:37 GMT", *before = "Sun, 06 Nov 1994 08:49:36 GMT",
               *after = "Sun, 06 Nov 1994 08:49:38 GMT";
    struct rest_cond_req none = {0};
    assert_int_equal(eval(none, T, &ok), REST_COND_SERVE);
    assert_int_equal(ok, 1);
    /* If-Modified-Since: equal or later is 304, earlier serves; junk is ignored. */
    assert_int_equal(eval((struct rest_cond_req){.if_modified_since = at}, T, &ok), REST_COND_NOT_MODIFIED);
    assert_int_equal(eval((struct rest_cond_req){.if_modified_since = after}, T, &ok), REST_COND_NOT_MODIFIED);
    assert_int_equal(eval((struct rest_cond_req){.if_modified_since = before}, T, &ok), REST_COND_SERVE);
    assert_int_equal(eval((struct rest_cond_req){.if_modified_since = "junk"}, T, &ok), REST_COND_SERVE);
    struct rest_cond_req ims = {.if_modified_since = at};
    assert_int_equal(rest_cond_eval(&ims, 0, 0, &ok), REST_COND_SERVE); /* the epoch: no time */
    /* If-None-Match: "*" is 304; a tag (never ours) serves and silences If-Modified-Since. */
    assert_int_equal(eval((struct rest_cond_req){.if_none_match = "*"}, T, &ok), REST_COND_NOT_MODIFIED);
    assert_int_equal(eval((struct rest_cond_req){.if_none_match = "\"a\", W/\"b\""}, T, &ok), REST_COND_SERVE);
    assert_int_equal(eval((struct rest_cond_req){.if_none_match = "\"a\", *"}, T, &ok), REST_COND_NOT_MODIFIED);
    assert_int_equal(eval((struct rest_cond_req){.if_none_match = "\"a\"", .if_modified_since = at}, T, &ok),
                     REST_COND_SERVE);
    /* If-Match: only "*" holds; If-Unmodified-Since only when no If-Match. */
    assert_int_equal(eval((struct rest_cond_req){.if_match = "*"}, T, &ok), REST_COND_SERVE);
    assert_int_equal(eval((struct rest_cond_req){.if_match = "\"x\""}, T, &ok), REST_COND_FAILED);
    assert_int_equal(eval((struct rest_cond_req){.if_match = "x, *"}, T, &ok), REST_COND_FAILED); /* stops at junk */
    assert_int_equal(eval((struct rest_cond_req){.if_unmodified_since = before}, T, &ok), REST_COND_FAILED);
    assert_int_equal(eval((struct rest_cond_req){.if_unmodified_since = at}, T, &ok), REST_COND_SERVE);
    assert_int_equal(eval((struct rest_cond_req){.if_match = "*", .if_unmodified_since = before}, T, &ok),
                     REST_COND_SERVE);
    assert_int_equal(eval((struct rest_cond_req){.if_match = "\"x\"", .if_none_match = "*"}, T, &ok),
                     REST_COND_FAILED); /* 412 before 304 */
    /* If-Range: the exact second, never an entity tag. */
    assert_int_equal(eval((struct rest_cond_req){.if_range = at}, T, &ok), REST_COND_SERVE);
    assert_int_equal(ok, 1);
    assert_int_equal(eval((struct rest_cond_req){.if_range = after}, T, &ok), REST_COND_SERVE);
    assert_int_equal(ok, 0);
    assert_int_equal(eval((struct rest_cond_req){.if_range = "\"tag\""}, T, &ok), REST_COND_SERVE);
    assert_int_equal(ok, 0);
    assert_int_equal(eval((struct rest_cond_req){.if_range = "junk"}, T, &ok), REST_COND_SERVE);
    assert_int_equal(ok, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
