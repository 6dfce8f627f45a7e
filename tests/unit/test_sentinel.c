/*
 * test_sentinel.c - the outcome JSON and the sentinel line (runner/run/sentinel.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/run/sentinel.h"

#include <stdlib.h>
#include <string.h>

static void test_sentinel_core(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1u << 20);
    struct job_outcome o = {0, "{\"n\": 12345678901234567890, \"f\": 1.10}", 38, NULL, "s3cr\"t", 6, 0};
    assert_int_equal(sentinel_json(&b, &o, NULL), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"status\": \"succeeded\", \"exit_code\": 0, \"result\": {\"n\": 12345678901234567890, "
                        "\"f\": 1.10}, \"nonce\": \"s3cr\\\"t\"}");
    buf_reset(&b);
    struct job_outcome f = {137, NULL, 0, "result file is a symbolic link", "", 0, 0};
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

/* "oom_killed": true right after the nonce, only when true; result_error
 * and job_id after it. */
static void test_sentinel_oom(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1u << 20);
    struct job_outcome o = {137, NULL, 0, NULL, "n", 1, 1};
    assert_int_equal(sentinel_json(&b, &o, NULL), 0);
    assert_string_equal(buf_cstr(&b), "{\"status\": \"failed\", \"exit_code\": 137, \"result\": {\"exit_code\": 137}, "
                                      "\"nonce\": \"n\", \"oom_killed\": true}");
    buf_reset(&b);
    struct job_outcome f = {137, NULL, 0, "not a regular file", "n", 1, 1};
    assert_int_equal(sentinel_json(&b, &f, "j"), 0);
    assert_string_equal(buf_cstr(&b), "{\"status\": \"failed\", \"exit_code\": 137, \"result\": {\"exit_code\": 137}, "
                                      "\"nonce\": \"n\", \"oom_killed\": true, \"result_error\": \"not a regular file\", "
                                      "\"job_id\": \"j\"}");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentinel_core),
        cmocka_unit_test(test_sentinel_oom),
    };
    return cmocka_run_group_tests_name("sentinel", tests, NULL, NULL);
}
