/*
 * test_oom.c - telling the OOM killer's deaths from others (agent/core/oom.c):
 * SIGKILL not sent by the agent, with the count risen; and the count as
 * this machine gives it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/oom.h"

#include <signal.h>

#define EXITED(code) (((code) & 0xff) << 8)
#define SIGNALED(sig) ((sig) & 0x7f)

static void test_killed(void **st)
{
    (void)st;
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 0, 0, 1), 1);
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 0, 7, 9), 1);
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 1, 0, 1), 0);  /* the agent sent it */
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 0, 3, 3), 0);  /* no kill counted meanwhile */
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 0, -1, 4), 0); /* unknown before */
    assert_int_equal(oom_killed(SIGNALED(SIGKILL), 0, 4, -1), 0); /* unknown after */
    assert_int_equal(oom_killed(SIGNALED(SIGTERM), 0, 0, 1), 0);
    assert_int_equal(oom_killed(EXITED(137), 0, 0, 1), 0);        /* a shell's 137 is an exit */
    assert_int_equal(oom_killed(SIGNALED(SIGKILL) | 0x80, 0, 0, 1), 1);
}

static void test_count(void **st)
{
    (void)st;
    long long n = oom_kills(NULL);
    assert_true(n >= -1);
    assert_int_equal(oom_kills("/nonexistent/cgroup") >= -1, 1); /* not below the agent's: its own count */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed),
        cmocka_unit_test(test_count),
    };
    return cmocka_run_group_tests_name("oom", tests, NULL, NULL);
}
