/*
 * test_rewrite.c - SANDBOX_AGENT_SIGNAL_REWRITE (agent/core/rewrite.c):
 * numbers and names, drops, identity elsewhere, and every refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/core/rewrite.h"

#include <signal.h>
#include <string.h>

static void test_pairs(void **st)
{
    (void)st;
    struct rewrite r;
    char err[ERR_LEN];
    assert_int_equal(rewrite_parse(&r, "15:3, SIGUSR1:0 ,HUP:USR2,RTMIN+2:RTMAX-1,", err), 0);
    assert_int_equal(rewrite_apply(&r, SIGTERM), SIGQUIT);
    assert_int_equal(rewrite_apply(&r, SIGUSR1), 0);
    assert_int_equal(rewrite_apply(&r, SIGHUP), SIGUSR2);
    assert_int_equal(rewrite_apply(&r, SIGRTMIN + 2), SIGRTMAX - 1);
    assert_int_equal(rewrite_apply(&r, SIGINT), SIGINT);
    assert_int_equal(rewrite_apply(&r, 64), 64);
    assert_int_equal(rewrite_parse(&r, "", err), 0);
    assert_int_equal(rewrite_apply(&r, SIGTERM), SIGTERM);
}

static void test_names(void **st)
{
    (void)st;
    assert_int_equal(rewrite_signum("TERM", 4), SIGTERM);
    assert_int_equal(rewrite_signum("SIGWINCH", 8), SIGWINCH);
    assert_int_equal(rewrite_signum("64", 2), 64);
    assert_int_equal(rewrite_signum("0", 1), 0);
    assert_int_equal(rewrite_signum("65", 2), -1);
    assert_int_equal(rewrite_signum("0015", 4), -1);
    assert_int_equal(rewrite_signum("RTMIN", 5), SIGRTMIN);
    assert_int_equal(rewrite_signum("RTMAX-0", 7), SIGRTMAX);
    assert_int_equal(rewrite_signum("RTMIN-1", 7), -1);
    assert_int_equal(rewrite_signum("RTMAX+1", 7), -1);
    assert_int_equal(rewrite_signum("term", 4), -1);
    assert_int_equal(rewrite_signum("SIG", 3), -1);
    assert_int_equal(rewrite_signum("", 0), -1);
}

static void test_refusals(void **st)
{
    (void)st;
    struct rewrite r;
    char err[ERR_LEN];
    const char *bad[] = {"15", "15:", ":3", "x:3", "9:1", "STOP:1", "0:1", "15:99", "17:1", "1:CHLD",
                         "15:3,,1", "15 :3x", "15:3:4"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        if (rewrite_parse(&r, bad[i], err) == 0) fail_msg("accepted '%s'", bad[i]);
        assert_true(err[0] != 0);
    }
    char big[REWRITE_MAX_TEXT + 2];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(rewrite_parse(&r, big, err), -1);
}

/* The supervisor's own defaults give way to whatever the user named. */
static void test_defaults(void **st)
{
    (void)st;
    struct rewrite r;
    char err[ERR_LEN];
    assert_int_equal(rewrite_parse(&r, "TSTP:TSTP, TTIN:0", err), 0);
    rewrite_default(&r, SIGTSTP, SIGSTOP);
    rewrite_default(&r, SIGTTIN, SIGSTOP);
    rewrite_default(&r, SIGTTOU, SIGSTOP);
    assert_int_equal(rewrite_apply(&r, SIGTSTP), SIGTSTP);
    assert_int_equal(rewrite_apply(&r, SIGTTIN), 0);
    assert_int_equal(rewrite_apply(&r, SIGTTOU), SIGSTOP);
    rewrite_default(&r, 0, SIGSTOP);
    rewrite_default(&r, REWRITE_NSIG, SIGSTOP);
    rewrite_default(&r, SIGUSR1, REWRITE_NSIG);
    assert_int_equal(rewrite_apply(&r, SIGUSR1), SIGUSR1);
    rewrite_init(&r);
    rewrite_default(&r, SIGTSTP, SIGSTOP);
    assert_int_equal(rewrite_apply(&r, SIGTSTP), SIGSTOP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_defaults),
    };
    return cmocka_run_group_tests_name("rewrite", tests, NULL, NULL);
}
