/*
 * test_asuser_defaults.c - what POST /init sets for requests that name
 * nothing (agent/api/asuser/defaults.c): variables merged (a name set
 * again takes the new value, in place of the old one), the bound counted
 * after the merge, nothing changed until the commit, the directory and
 * the user kept when a later set names none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/defaults.h"

#include <errno.h>
#include <string.h>

static void test_merge_and_commit(void **st)
{
    (void)st;
    struct asuser_defaults d;
    char *const one[] = {"A=1", "B=2"};
    assert_null(asuser_defaults_env()[0]);
    assert_null(asuser_defaults_workdir());
    assert_int_equal(asuser_defaults_merge(&d, one, 2, 8, "/w", NULL), 0);
    assert_null(asuser_defaults_env()[0]); /* nothing until the commit */
    asuser_defaults_commit(&d);
    char *const *e = asuser_defaults_env();
    assert_string_equal(e[0], "A=1");
    assert_string_equal(e[1], "B=2");
    assert_null(e[2]);
    assert_string_equal(asuser_defaults_workdir(), "/w");
    char *const two[] = {"B=3", "C=4"};
    assert_int_equal(asuser_defaults_merge(&d, two, 2, 8, NULL, NULL), 0);
    asuser_defaults_commit(&d);
    e = asuser_defaults_env();
    assert_string_equal(e[0], "A=1");
    assert_string_equal(e[1], "B=3");
    assert_string_equal(e[2], "C=4");
    assert_null(e[3]);
    assert_string_equal(asuser_defaults_workdir(), "/w"); /* kept */
    char *const three[] = {"D=5"};
    assert_int_equal(asuser_defaults_merge(&d, three, 1, 3, NULL, NULL), -1); /* 4 > 3 once merged */
    assert_int_equal(errno, E2BIG);
    assert_null(d.env);
    e = asuser_defaults_env();
    assert_string_equal(e[2], "C=4"); /* unchanged */
    char *const pre[] = {"AB=x"}; /* a name that starts another is another */
    assert_int_equal(asuser_defaults_merge(&d, pre, 1, 8, NULL, NULL), 0);
    asuser_defaults_drop(&d);
    asuser_defaults_clear();
    assert_null(asuser_defaults_env()[0]);
    assert_null(asuser_defaults_workdir());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_and_commit),
    };
    return cmocka_run_group_tests_name("asuser_defaults", tests, NULL, NULL);
}
