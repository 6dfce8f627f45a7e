/*
 * test_freeze.c - the freeze sweeps' pure parts (agent/core/freeze.c): the
 * modes, the chain from a hierarchy's root to the agent's group.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/freeze.h"

static void test_mode(void **s)
{
    (void)s;
    enum freeze_mode m = FREEZE_HIERARCHY;
    assert_int_equal(freeze_mode_parse(NULL, &m), 0);
    assert_int_equal(m, FREEZE_LEGACY);
    assert_int_equal(freeze_mode_parse("hierarchy", &m), 0);
    assert_int_equal(m, FREEZE_HIERARCHY);
    assert_int_equal(freeze_mode_parse("", &m), 0);
    assert_int_equal(m, FREEZE_LEGACY);
    assert_int_equal(freeze_mode_parse("Legacy", &m), -1);
    assert_int_equal(freeze_mode_parse("all", &m), -1);
    assert_string_equal(freeze_mode_name(FREEZE_HIERARCHY), "hierarchy");
}

static void test_chain(void **s)
{
    (void)s;
    static char c[8][CGROUP_PATH_MAX];
    assert_int_equal(freeze_chain("/sys/fs/cgroup", "/sys/fs/cgroup", c, 8), 1);
    assert_string_equal(c[0], "/sys/fs/cgroup");
    assert_int_equal(freeze_chain("/sys/fs/cgroup", "/sys/fs/cgroup/a/b", c, 8), 3);
    assert_string_equal(c[0], "/sys/fs/cgroup");
    assert_string_equal(c[1], "/sys/fs/cgroup/a");
    assert_string_equal(c[2], "/sys/fs/cgroup/a/b");
    assert_int_equal(freeze_chain("/sys/fs/cgroup/", "/sys/fs/cgroup/a", c, 8), 2);
    assert_string_equal(c[0], "/sys/fs/cgroup");
    /* not below the mount; a sibling whose name starts alike; too deep */
    assert_int_equal(freeze_chain("/sys/fs/cgroup", "/other", c, 8), -1);
    assert_int_equal(freeze_chain("/sys/fs/cgroup", "/sys/fs/cgroupx/a", c, 8), -1);
    assert_int_equal(freeze_chain("/m", "/m/a/b/c", c, 3), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
