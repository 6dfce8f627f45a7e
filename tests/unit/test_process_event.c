/*
 * test_process_event.c - the messages of a Start or Connect stream
 * (agent/api/process/event.h), byte for byte: start, data (with and without its
 * replay offset), keepalive, end (with the error only when there is one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/process/event.h"

#include <string.h>

static void test_events(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(process_event_start(&b, 42), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"start\": {\"pid\": 42}}}");
    buf_reset(&b);
    assert_int_equal(process_event_data(&b, PROC_STDERR, "hi\n", 3, 0, 0), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"data\": {\"stderr\": \"aGkK\"}}}");
    buf_reset(&b);
    assert_int_equal(process_event_data(&b, PROC_PTY, "\xff", 1, 1, 123456789012ull), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"data\": {\"pty\": \"/w==\"}}, \"offset\": 123456789012}");
    buf_reset(&b);
    assert_int_equal(process_event_keepalive(&b), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"keepalive\": {}}}");
    buf_reset(&b);
    struct proc_end e = {.exited = 1, .exit_code = 0, .status = "exit status 0", .error = ""};
    assert_int_equal(process_event_end(&b, &e), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"end\": {\"exitCode\": 0, \"exited\": true, "
                                      "\"status\": \"exit status 0\"}}}");
    buf_reset(&b);
    struct proc_end k = {.exited = 0, .exit_code = -1, .status = "signal: killed", .error = "signal: killed"};
    assert_int_equal(process_event_end(&b, &k), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"end\": {\"exitCode\": -1, \"exited\": false, "
                                      "\"status\": \"signal: killed\", \"error\": \"signal: killed\"}}}");
    buf_reset(&b);
    proc_status_oom(&k); /* the OOM killer's: said in error, and oomKilled */
    assert_int_equal(process_event_end(&b, &k), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"end\": {\"exitCode\": -1, \"exited\": false, "
                                      "\"status\": \"signal: killed\", \"error\": \"signal: killed (out of memory)\", "
                                      "\"oomKilled\": true}}}");
    /* Past the bound: -1, never a partial promise. */
    struct buf small;
    buf_init(&small, 8);
    assert_int_equal(process_event_data(&small, PROC_STDOUT, "abcdef", 6, 0, 0), -1);
    buf_free(&small);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
