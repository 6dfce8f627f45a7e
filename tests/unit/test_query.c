/*
 * test_query.c - query string parameters (agent/api/http/query.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/query.h"

#include <string.h>

static void test_get(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 64);
    const char *q = "path=%2Fhome%2Fu%2Fa+b%0A%FF&username=user&flag&%70ath2=x";
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

/* A name given twice is ambiguous, whichever value comes first, also when
 * one of the keys is escaped or has no value. */
static void test_repeated(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 64);
    const char *twice[] = {
        "username=root&username=user", "username=user&username=root", "path=a&x=1&path=b",
        "path=a&%70ath=b", "path&path=b", "path=a&path", "path=%zz&path=b", NULL,
    };
    for (int i = 0; twice[i]; i++) {
        assert_int_equal(query_get(twice[i], twice[i][0] == 'u' ? "username" : "path", &b),
                         QUERY_REPEATED);
    }
    /* Other names may repeat; a different key is no repeat. */
    assert_int_equal(query_get("x=1&x=2&path=a&path2=b", "path", &b), 1);
    assert_string_equal(b.data, "a");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_get), cmocka_unit_test(test_repeated)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
