/*
 * test_rest_upload.c - an upload's X-Metadata-* bounds (agent/api/rest/upload_file.c,
 * rest_upload_meta_check): a key and a value must fit an extended attribute, and
 * what does not is refused naming the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/upload.h"

#include <string.h>

static void test_meta_bounds(void **s)
{
    (void)s;
    const char *why = NULL;
    assert_int_equal(rest_upload_meta_check(1, 0, &why), 0);
    assert_int_equal(rest_upload_meta_check(246, 65536, &why), 0); /* user.e2b. + 246 = 255 */
    assert_int_equal(rest_upload_meta_check(0, 1, &why), -1);
    assert_non_null(strstr(why, "empty"));
    assert_int_equal(rest_upload_meta_check(247, 1, &why), -1);
    assert_non_null(strstr(why, "255"));
    assert_int_equal(rest_upload_meta_check(3, 65537, &why), -1);
    assert_non_null(strstr(why, "65536"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
