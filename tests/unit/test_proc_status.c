/*
 * test_proc_status.c - the texts of a process's end (agent/proc/status.h), as
 * envd (Go's os/exec) spells them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/proc/status.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

/* Wait statuses as the kernel encodes them. */
#define EXITED(code) (((code) & 0xff) << 8)
#define SIGNALED(sig) ((sig) & 0x7f)
#define CORE 0x80

static void test_exit_status(void **st)
{
    (void)st;
    struct proc_end e;
    proc_status_from_wait(EXITED(0), &e);
    assert_int_equal(e.exited, 1);
    assert_int_equal(e.exit_code, 0);
    assert_string_equal(e.status, "exit status 0");
    assert_string_equal(e.error, "");
    proc_status_from_wait(EXITED(3), &e);
    assert_int_equal(e.exit_code, 3);
    assert_string_equal(e.status, "exit status 3");
    assert_string_equal(e.error, "exit status 3");
    proc_status_from_wait(EXITED(255), &e);
    assert_string_equal(e.status, "exit status 255");
}

static void test_signal_death(void **st)
{
    (void)st;
    struct proc_end e;
    proc_status_from_wait(SIGNALED(SIGKILL), &e);
    assert_int_equal(e.exited, 0);
    assert_int_equal(e.exit_code, -1);
    assert_string_equal(e.status, "signal: killed");
    assert_string_equal(e.error, "signal: killed");
    proc_status_from_wait(SIGNALED(SIGTERM), &e);
    assert_string_equal(e.status, "signal: terminated");
    proc_status_from_wait(SIGNALED(SIGSEGV) | CORE, &e);
    assert_string_equal(e.status, "signal: segmentation fault (core dumped)");
    proc_status_from_wait(SIGNALED(SIGINT), &e);
    assert_string_equal(e.status, "signal: interrupt");
    /* A real-time signal has no name in Go's table. */
    proc_status_from_wait(SIGNALED(40), &e);
    assert_string_equal(e.status, "signal: signal 40");
    assert_null(proc_status_signal_name(0));
    assert_string_equal(proc_status_signal_name(SIGHUP), "hangup");
}

static void test_oom(void **st)
{
    (void)st;
    struct proc_end e;
    proc_status_from_wait(SIGNALED(SIGKILL), &e);
    assert_int_equal(e.oom_killed, 0);
    proc_status_oom(&e);
    assert_int_equal(e.oom_killed, 1);
    assert_string_equal(e.status, "signal: killed");
    assert_string_equal(e.error, "signal: killed (out of memory)");
}

static void test_exec_error(void **st)
{
    (void)st;
    struct proc_end e;
    proc_status_from_exec_error("nosuchcmd", ENOENT, &e);
    assert_int_equal(e.exited, 1);
    assert_int_equal(e.exit_code, 127);
    assert_string_equal(e.status, "exit status 127");
    assert_string_equal(e.error, "cannot run 'nosuchcmd': command not found");
    proc_status_from_exec_error("/etc/passwd", EACCES, &e);
    assert_int_equal(e.exit_code, 126);
    assert_string_equal(e.error, "cannot run '/etc/passwd': Permission denied");
    /* Its working directory, entered as its user, was the step that failed. */
    proc_status_from_exec_error(NULL, EACCES, &e);
    assert_int_equal(e.exit_code, 126);
    assert_string_equal(e.error, "cannot enter the working directory: Permission denied");
    proc_status_from_exec_error(NULL, ENOENT, &e);
    assert_int_equal(e.exit_code, 127);
    assert_string_equal(e.error, "cannot enter the working directory: No such file or directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_signal_death),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_exec_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
