/*
 * test_process_event.c - the messages of a Start or Connect stream
 * (agent/api/process/event.h), byte for byte: start, data (with and without its
 * replay offset), keepalive, end (with the error only when there is one);
 * the data event written in place: exactly its announced length, the same
 * bytes as the buffer's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/process/event.h"

#include <stdint.h>
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

static void test_data_in_place(void **st)
{
    (void)st;
    char out[8192], data[4096];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (char)(i * 29 + 5);
    size_t lens[] = {0, 1, 2, 3, 4, 47, 48, 49, 1000, 4096};
    uint64_t offs[] = {0, 9, 10, 123456789012ull, UINT64_MAX};
    for (int ch = 0; ch < PROC_CHANS; ch++)
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++)
                for (int with = 0; with < 2; with++) {
                    struct buf b;
                    buf_init(&b, 1 << 20);
                    assert_int_equal(process_event_data(&b, ch, data, lens[i], with, offs[k]), 0);
                    size_t n = process_event_data_len(ch, lens[i], with, offs[k]);
                    assert_int_equal(n, b.len);
                    memset(out, '#', sizeof out);
                    process_event_data_put(out, ch, data, lens[i], with, offs[k]);
                    assert_memory_equal(out, b.data, n);
                    assert_int_equal(out[n], '#');
                    buf_free(&b);
                }
    /* The offset's digits, as buf_put_u64 writes them. */
    struct buf b;
    buf_init(&b, 256);
    assert_int_equal(process_event_data(&b, PROC_STDOUT, "a", 1, 1, UINT64_MAX), 0);
    assert_string_equal(buf_cstr(&b), "{\"event\": {\"data\": {\"stdout\": \"YQ==\"}}, \"offset\": 18446744073709551615}");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_data_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
