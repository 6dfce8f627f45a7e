/*
 * test_hparam.c - header value parameters (agent/api/http/hparam.c): media types,
 * token and quoted parameters, RFC 8187 extended values, Accept-Encoding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/hparam.h"

#include <string.h>

static void test_type(void **s)
{
    (void)s;
    assert_true(hparam_type_is("application/octet-stream", "application/octet-stream"));
    assert_true(hparam_type_is("  Multipart/Form-Data ; boundary=x", "multipart/form-data"));
    assert_false(hparam_type_is("multipart/form-datax", "multipart/form-data"));
    assert_false(hparam_type_is("", "text/plain"));
}

static void test_params(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 64);
    const char *v = "form-data; name=\"f\\\"i;le\"; filename=plain ; Empty=\"\"; x";
    assert_int_equal(hparam_get(v, "name", &b), 1);
    assert_string_equal(b.data, "f\"i;le");
    assert_int_equal(hparam_get(v, "FILENAME", &b), 1);
    assert_string_equal(b.data, "plain");
    assert_int_equal(hparam_get(v, "empty", &b), 1);
    assert_int_equal(b.len, 0);
    assert_int_equal(hparam_get(v, "x", &b), 0); /* no value: not a parameter */
    assert_int_equal(hparam_get(v, "filename*", &b), 0);
    assert_int_equal(hparam_get("a; filename*=UTF-8'en'%41%e2%98%83%00z", "filename*", &b), 1);
    assert_int_equal(b.len, 6);
    assert_memory_equal(b.data, "A\xe2\x98\x83\0z", 6);
    assert_int_equal(hparam_get("a; filename*=no-quotes%41", "filename*", &b), -1);
    assert_int_equal(hparam_get("a; filename*=x''%4", "filename*", &b), -1);
    assert_int_equal(hparam_get("a; name=\"unterminated", "name", &b), -1);
    assert_int_equal(hparam_get("a; name=\"0123456789012345678901234567890123456789012345678901234567890123456789\"",
                                "name", &b), -1); /* past the bound */
    buf_free(&b);
}

static void test_accepts(void **s)
{
    (void)s;
    assert_true(hparam_accepts("gzip, deflate", "gzip"));
    assert_true(hparam_accepts("GZIP;q=0.5", "gzip"));
    assert_false(hparam_accepts("gzip;q=0", "gzip"));
    assert_false(hparam_accepts("gzip; q=0.000, *", "gzip"));
    assert_true(hparam_accepts("*", "gzip"));
    assert_false(hparam_accepts("*;q=0", "gzip"));
    assert_false(hparam_accepts("identity", "gzip"));
    assert_false(hparam_accepts("", "gzip"));
    assert_false(hparam_accepts("xgzip", "gzip"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type), cmocka_unit_test(test_params), cmocka_unit_test(test_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
