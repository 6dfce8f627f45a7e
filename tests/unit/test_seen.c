/*
 * test_seen.c - the session's duplicate window (agent/session/seen.c): a
 * fixed ring of the last ids, the oldest forgotten first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/session/seen.h"

#include <stdio.h>

#define S(x) x, sizeof(x) - 1

static void test_seen_window(void **st)
{
    (void)st;
    struct seen *s = seen_new(4096);
    char id[32];
    assert_non_null(s);
    assert_int_equal(seen_check_add(s, S("first")), 0);
    assert_int_equal(seen_check_add(s, S("first")), 1);
    for (int i = 0; i < 4095; i++) {
        int n = snprintf(id, sizeof id, "id%d", i);
        assert_int_equal(seen_check_add(s, id, (size_t)n), 0);
    }
    assert_true(seen_contains(s, S("first")));
    assert_int_equal(seen_check_add(s, S("one-more")), 0);
    assert_false(seen_contains(s, S("first")));
    assert_true(seen_contains(s, S("id0")));
    assert_true(seen_contains(s, S("id4094")));
    /* Many rounds through the ring keep exactly the last 4096. */
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(id, sizeof id, "r%d", i);
        assert_int_equal(seen_check_add(s, id, (size_t)n), 0);
    }
    assert_true(seen_contains(s, S("r19999")));
    assert_true(seen_contains(s, S("r15904")));
    assert_false(seen_contains(s, S("r15903")));
    seen_free(s);
    assert_null(seen_new(0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seen_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
