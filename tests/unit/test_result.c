/*
 * test_result.c - the result-file reader: what is carried byte for byte,
 * what is refused and why, and that nothing it is pointed at can hang it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/run/result.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[128];

static int setup(void **st)
{
    (void)st;
    strcpy(dir, "/tmp/sa-unit-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/result.json", dir);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    unlink(path);
    rmdir(dir);
    return 0;
}

static void put(const char *text, size_t n)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
}

static void check_carried(const char *text, const char *want)
{
    struct job_result r;
    put(text, strlen(text));
    result_read(path, 1 << 20, &r);
    assert_string_equal(r.error, "");
    assert_non_null(r.raw);
    assert_int_equal(r.len, strlen(want));
    assert_memory_equal(r.raw, want, r.len);
    result_free(&r);
}

static void check_refused(const char *want)
{
    struct job_result r;
    result_read(path, 1 << 20, &r);
    assert_null(r.raw);
    if (!strstr(r.error, want)) fail_msg("error '%s' lacks '%s'", r.error, want);
}

static void test_exact(void **st)
{
    (void)st;
    /* Big integers, float text, key order, non-ASCII and escapes survive. */
    const char *t = "{\"z\": 123456789012345678901234567890, \"a\": 1.50, \"f\": 1e400, "
                    "\"s\": \"\xc3\xa9\\u00e9\", \"n\": [true, null, {}]}";
    check_carried(t, t);
    check_carried("  \n{\"a\":1}\n\n", "{\"a\":1}");
}

static void test_missing(void **st)
{
    (void)st;
    struct job_result r;
    unlink(path);
    result_read(path, 1 << 20, &r);
    assert_null(r.raw);
    assert_string_equal(r.error, "");
}

static void test_refusals(void **st)
{
    (void)st;
    put("[1, 2]", 6);
    check_refused("holds an array, not a JSON object");
    put("42", 2);
    check_refused("holds a number");
    put("{\"a\": }", 7);
    check_refused("not valid JSON");
    put("{\"a\": 1} {", 10);
    check_refused("extra data");
    put("{\"a\": \"\xff\"}", 10);
    check_refused("not valid UTF-8");
    put("{\"a\": NaN}", 10);
    check_refused("not valid JSON");
    put("", 0);
    check_refused("not valid JSON");
}

static void test_too_big(void **st)
{
    (void)st;
    size_t n = (1 << 20) + 10;
    char *t = malloc(n);
    memset(t, ' ', n);
    t[0] = '{';
    t[n - 1] = '}';
    put(t, n);
    free(t);
    check_refused("over the 1048576 byte limit");
}

static void test_symlink_fifo_device(void **st)
{
    (void)st;
    char target[160];
    snprintf(target, sizeof target, "%s/real.json", dir);
    FILE *f = fopen(target, "w");
    fputs("{\"a\": 1}", f);
    fclose(f);
    unlink(path);
    assert_int_equal(symlink(target, path), 0);
    check_refused("symbolic link");
    unlink(target);
    unlink(path);
    /* A FIFO with no writer would block a plain open() forever. */
    assert_int_equal(mkfifo(path, 0600), 0);
    check_refused("not a regular file");
    unlink(path);
    struct job_result r;
    result_read("/dev/zero", 1 << 20, &r);
    assert_null(r.raw);
    assert_string_equal(r.error, "result file is not a regular file");
    result_read("/proc/self/status", 1 << 20, &r);
    assert_null(r.raw);
}

static void test_max_bytes_env(void **st)
{
    (void)st;
    size_t n;
    char err[256];
    unsetenv("SANDBOX_RESULT_MAX_BYTES");
    assert_int_equal(result_max_bytes(&n, err), 0);
    assert_int_equal(n, 1048576);
    setenv("SANDBOX_RESULT_MAX_BYTES", "10", 1);
    assert_int_equal(result_max_bytes(&n, err), 0);
    assert_int_equal(n, 10);
    setenv("SANDBOX_RESULT_MAX_BYTES", "-1", 1);
    assert_int_equal(result_max_bytes(&n, err), -1);
    setenv("SANDBOX_RESULT_MAX_BYTES", "12k", 1);
    assert_int_equal(result_max_bytes(&n, err), -1);
    unsetenv("SANDBOX_RESULT_MAX_BYTES");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_refusals),     cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_symlink_fifo_device), cmocka_unit_test(test_max_bytes_env),
    };
    return cmocka_run_group_tests_name("result", tests, setup, teardown);
}
