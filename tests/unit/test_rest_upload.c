/*
 * test_rest_upload.c - an upload's X-Metadata-* bounds as envd.yaml states
 * them (agent/api/rest/upload.c, rest_upload_meta_check): a key of at most
 * 246 bytes, keys and values of printable US-ASCII, and at most 4,096
 * bytes of a file's metadata counted envd's way ("user.e2b." + key +
 * value per key), each at and past its bound, refused naming the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/rest/upload.h"

#include <string.h>

static char k246[247], v[5000];

static int check(const char *key, size_t klen, const char *val, size_t vlen, size_t *total, const char **why)
{
    return rest_upload_meta_check(key, klen, val, vlen, total, why);
}

static void test_meta_bounds(void **s)
{
    (void)s;
    const char *why = NULL;
    size_t total = 0;
    memset(k246, 'k', 246);
    memset(v, 'v', sizeof v);
    assert_int_equal(check("a", 1, "", 0, &total, &why), 0);
    assert_int_equal(total, 10); /* user.e2b. + a */
    total = 0;
    assert_int_equal(check(k246, 246, "x", 1, &total, &why), 0);
    assert_int_equal(check("", 0, "x", 1, &total, &why), -1);
    assert_non_null(strstr(why, "empty"));
    total = 0;
    assert_int_equal(check("kk", 247 - 245, "x", 1, &total, &why), 0);
    char k247[248];
    memset(k247, 'k', 247);
    assert_int_equal(check(k247, 247, "x", 1, &total, &why), -1);
    assert_non_null(strstr(why, "246"));
}

static void test_meta_printable(void **s)
{
    (void)s;
    const char *why = NULL;
    size_t total = 0;
    assert_int_equal(check("k", 1, " ~ printable ~ ", 15, &total, &why), 0);
    static const char *bad[] = {"a\tb", "caf\xc3\xa9", "del\x7f", "nul\0x"};
    static const size_t len[] = {3, 5, 4, 5};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(check("k", 1, bad[i], len[i], &total, &why), -1);
        assert_non_null(strstr(why, "printable"));
        assert_int_equal(check(bad[i], len[i], "v", 1, &total, &why), -1);
    }
}

static void test_meta_total(void **s)
{
    (void)s;
    const char *why = NULL;
    size_t total = 0;
    /* One key: 9 + 1 + 4086 = 4096 fits, a byte more does not. */
    assert_int_equal(check("k", 1, v, 4086, &total, &why), 0);
    assert_int_equal(total, 4096);
    total = 0;
    assert_int_equal(check("k", 1, v, 4087, &total, &why), -1);
    assert_non_null(strstr(why, "4096"));
    /* Counted across keys, the prefix once per key. */
    total = 0;
    assert_int_equal(check("a", 1, v, 2038, &total, &why), 0);
    assert_int_equal(check("b", 1, v, 2038, &total, &why), 0);
    assert_int_equal(total, 4096);
    assert_int_equal(check("c", 1, "", 0, &total, &why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_bounds),
        cmocka_unit_test(test_meta_printable),
        cmocka_unit_test(test_meta_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
