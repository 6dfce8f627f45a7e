/*
 * test_query.c - query string parameters (agent/api/query.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/query.h"

#include <string.h>

static void test_get(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 64);
    const char *q = "path=%2Fhome%2Fu%2Fa+b%0A%FF&username=user&path=second&flag&%70ath2=x";
    assert_int_equal(query_get(q, "path", &b), 1);
    assert_int_equal(b.len, 13);
    assert_memory_equal(b.data, "/home/u/a b\n\xff", 13);
    assert_int_equal(query_get(q, "username", &b), 1);
    assert_string_equal(b.data, "user");
    assert_int_equal(query_get(q, "flag", &b), 1);
    assert_int_equal(b.len, 0);
    assert_int_equal(query_get(q, "path2", &b), 1); /* the key is decoded too */
    assert_string_equal(b.data, "x");
    assert_int_equal(query_get(q, "nope", &b), 0);
    assert_int_equal(query_get("", "path", &b), 0);
    assert_int_equal(query_get("path=%zz", "path", &b), -1);
    assert_int_equal(query_get("path=%4", "path", &b), -1);
    assert_int_equal(query_get("path=a%00b", "path", &b), 1);
    assert_int_equal(b.len, 3);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_get)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
