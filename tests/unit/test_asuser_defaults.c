/*
 * test_asuser_defaults.c - what POST /init sets for requests that name
 * nothing (agent/api/asuser/defaults.c): variables merged (a name set
 * again takes the new value, in place of the old one), the bound counted
 * after the merge, nothing changed until the commit, the directory and
 * the user kept when a later set names none; the room in bytes (each
 * variable as execve counts it) refusing a set that would not fit, with a
 * message naming the figures, and changing nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/defaults.h"
#include "agent/core/err.h"
#include "agent/core/spawn.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void test_merge_and_commit(void **st)
{
    (void)st;
    struct asuser_defaults d;
    char err[ERR_LEN];
    char *const one[] = {"A=1", "B=2"};
    assert_null(asuser_defaults_env()[0]);
    assert_null(asuser_defaults_workdir());
    assert_int_equal(asuser_defaults_merge(&d, one, 2, 8, "/w", NULL, err), 0);
    assert_null(asuser_defaults_env()[0]); /* nothing until the commit */
    asuser_defaults_commit(&d);
    char *const *e = asuser_defaults_env();
    assert_string_equal(e[0], "A=1");
    assert_string_equal(e[1], "B=2");
    assert_null(e[2]);
    assert_string_equal(asuser_defaults_workdir(), "/w");
    char *const two[] = {"B=3", "C=4"};
    assert_int_equal(asuser_defaults_merge(&d, two, 2, 8, NULL, NULL, err), 0);
    asuser_defaults_commit(&d);
    e = asuser_defaults_env();
    assert_string_equal(e[0], "A=1");
    assert_string_equal(e[1], "B=3");
    assert_string_equal(e[2], "C=4");
    assert_null(e[3]);
    assert_string_equal(asuser_defaults_workdir(), "/w"); /* kept */
    char *const three[] = {"D=5"};
    assert_int_equal(asuser_defaults_merge(&d, three, 1, 3, NULL, NULL, err), -1); /* 4 > 3 once merged */
    assert_int_equal(errno, E2BIG);
    assert_string_equal(err, "'envVars': more than 3 variables in all");
    assert_null(d.env);
    e = asuser_defaults_env();
    assert_string_equal(e[2], "C=4"); /* unchanged */
    char *const pre[] = {"AB=x"}; /* a name that starts another is another */
    assert_int_equal(asuser_defaults_merge(&d, pre, 1, 8, NULL, NULL, err), 0);
    asuser_defaults_drop(&d);
    asuser_defaults_clear();
    assert_null(asuser_defaults_env()[0]);
    assert_null(asuser_defaults_workdir());
}

/* The bytes of the set, as execve counts them. */
static size_t cost(char *const *v)
{
    size_t n = 0;
    for (size_t i = 0; v[i]; i++) n += SPAWN_ARG_COST(strlen(v[i]));
    return n;
}

static void test_room(void **st)
{
    (void)st;
    struct asuser_defaults d;
    char err[ERR_LEN], want[ERR_LEN];
    char *const one[] = {"A=12345", "B=1"};
    size_t need = SPAWN_ARG_COST(7) + SPAWN_ARG_COST(3);
    asuser_defaults_room(need); /* exactly enough */
    assert_int_equal(asuser_defaults_merge(&d, one, 2, 8, NULL, NULL, err), 0);
    asuser_defaults_commit(&d);
    assert_int_equal(cost(asuser_defaults_env()), need);
    /* A name set again is counted once, at its new length. */
    char *const shorter[] = {"A=1"};
    assert_int_equal(asuser_defaults_merge(&d, shorter, 1, 8, NULL, NULL, err), 0);
    asuser_defaults_drop(&d);
    /* One byte more than the room: refused, naming the figures; nothing changes. */
    char *const more[] = {"B=12"};
    assert_int_equal(asuser_defaults_merge(&d, more, 1, 8, "/x", NULL, err), -1);
    assert_int_equal(errno, E2BIG);
    assert_null(d.env);
    snprintf(want, sizeof want, "'envVars': %zu bytes in all once merged, over the %zu a process has room for "
             "(of the kernel's %zu for arguments and environment)", need + 1, need, spawn_arg_max());
    assert_string_equal(err, want);
    assert_string_equal(asuser_defaults_env()[1], "B=1");
    assert_null(asuser_defaults_workdir());
    /* No bound again (what the API's end sets). */
    asuser_defaults_room(SIZE_MAX);
    assert_int_equal(asuser_defaults_merge(&d, more, 1, 8, NULL, NULL, err), 0);
    asuser_defaults_drop(&d);
    asuser_defaults_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_and_commit),
        cmocka_unit_test(test_room),
    };
    return cmocka_run_group_tests_name("asuser_defaults", tests, NULL, NULL);
}
