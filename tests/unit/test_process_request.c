/*
 * test_process_request.c - decoding the process.Process requests
 * (agent/api/process/request.h): what the E2B SDK sends, protobuf's JSON forms
 * (numbers as strings, null as the default, both base64 alphabets, enum
 * names and numbers), unknown fields, and every refusal naming its field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/process/request.h"
#include "agent/core/err.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static cJSON *msg;

static const cJSON *parse(const char *json)
{
    cJSON_Delete(msg);
    msg = cJSON_Parse(json);
    assert_non_null(msg);
    return msg;
}

static void test_start_as_the_sdk_sends_it(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_start r;
    assert_int_equal(process_request_start(parse("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\","
                                         "\"echo hi\"],\"envs\":{\"FOO\":\"bar\",\"E\":\"\"},"
                                         "\"cwd\":\"/tmp\"},\"stdin\":false}"),
                                   &r, err),
                     0);
    assert_string_equal(r.argv[0], "/bin/bash");
    assert_string_equal(r.argv[3], "echo hi");
    assert_null(r.argv[4]);
    assert_int_equal(r.nenvs, 2);
    assert_string_equal(r.envs[0], "FOO=bar");
    assert_string_equal(r.envs[1], "E=");
    assert_null(r.envs[2]);
    assert_string_equal(r.cwd, "/tmp");
    assert_int_equal(r.stdin_pipe, 0);
    assert_int_equal(r.pty, 0);
    assert_null(r.tag);
    process_request_start_free(&r);
    /* A pty, a tag, a timeout; stdin is the pty's. */
    assert_int_equal(process_request_start(parse("{\"process\":{\"cmd\":\"sh\"},\"pty\":{\"size\":{\"cols\":80,"
                                         "\"rows\":\"24\"}},\"tag\":\"t\",\"timeout\":\"1.5\","
                                         "\"stdin\":true,\"other\":[1]}"),
                                   &r, err),
                     0);
    assert_int_equal(r.pty, 1);
    assert_int_equal(r.cols, 80);
    assert_int_equal(r.rows, 24);
    assert_int_equal(r.stdin_pipe, 0);
    assert_string_equal(r.tag, "t");
    assert_true(r.timeout == 1.5);
    assert_null(r.argv[1]);
    process_request_start_free(&r);
    /* stdin absent: a pipe, as envd; nulls are defaults. */
    assert_int_equal(process_request_start(parse("{\"process\":{\"cmd\":\"cat\",\"args\":null,\"envs\":null,"
                                         "\"cwd\":null},\"pty\":null,\"timeout\":2}"),
                                   &r, err),
                     0);
    assert_int_equal(r.stdin_pipe, 1);
    assert_null(r.cwd);
    assert_int_equal(r.nenvs, 0);
    assert_true(r.timeout == 2.0);
    process_request_start_free(&r);
}

static void refused_start(const char *json, const char *word)
{
    char err[ERR_LEN];
    struct process_request_start r;
    assert_int_equal(process_request_start(parse(json), &r, err), -1);
    if (!strstr(err, word)) fail_msg("'%s' does not name '%s' for %s", err, word, json);
    process_request_start_free(&r);
}

static void test_start_refusals(void **st)
{
    (void)st;
    refused_start("{}", "process");
    refused_start("{\"process\":[]}", "process");
    refused_start("{\"process\":{}}", "cmd");
    refused_start("{\"process\":{\"cmd\":\"\"}}", "cmd");
    refused_start("{\"process\":{\"cmd\":\"x\",\"args\":{}}}", "args");
    refused_start("{\"process\":{\"cmd\":\"x\",\"args\":[\"a\",null]}}", "args");
    refused_start("{\"process\":{\"cmd\":\"x\",\"envs\":{\"\":\"v\"}}}", "env name");
    refused_start("{\"process\":{\"cmd\":\"x\",\"envs\":{\"A=B\":\"v\"}}}", "A=B");
    refused_start("{\"process\":{\"cmd\":\"x\",\"envs\":{\"A\":true}}}", "'A'");
    refused_start("{\"process\":{\"cmd\":\"x\",\"cwd\":1}}", "cwd");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"pty\":{}}", "size");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"cols\":-1}}}", "cols");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":1.5}}}", "rows");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":65536}}}", "rows");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"stdin\":1}", "stdin");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"tag\":[]}", "tag");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"timeout\":-1}", "timeout");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"timeout\":\"soon\"}", "timeout");
    refused_start("{\"process\":{\"cmd\":\"x\"},\"timeout\":1e300}", "timeout");
}

static void test_selector(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_sel s;
    assert_int_equal(process_request_selector(parse("{\"process\":{\"pid\":4294967295}}"), &s, err), 0);
    assert_true(s.has_pid && s.pid == 4294967295u && !s.tag);
    assert_int_equal(process_request_selector(parse("{\"process\":{\"pid\":\"17\",\"tag\":\"x\"}}"), &s, err), 0);
    assert_true(s.has_pid && s.pid == 17 && !s.tag); /* a oneof: the pid wins */
    assert_int_equal(process_request_selector(parse("{\"process\":{\"tag\":\"x\"}}"), &s, err), 0);
    assert_true(!s.has_pid && !strcmp(s.tag, "x"));
    assert_int_equal(process_request_selector(parse("{}"), &s, err), -1);
    assert_int_equal(process_request_selector(parse("{\"process\":{}}"), &s, err), -1);
    assert_non_null(strstr(err, "pid"));
    assert_int_equal(process_request_selector(parse("{\"process\":{\"pid\":4294967296}}"), &s, err), -1);
    assert_int_equal(process_request_selector(parse("{\"process\":{\"pid\":\"-1\"}}"), &s, err), -1);
    assert_int_equal(process_request_selector(parse("{\"process\":{\"pid\":\" 1\"}}"), &s, err), -1);
}

static void test_input(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_input r;
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"aGVsbG8=\"}}"),
                                   &r, err),
                     0);
    assert_int_equal(r.to_pty, 0);
    assert_int_equal(r.data.len, 5);
    assert_memory_equal(r.data.data, "hello", 5);
    process_request_input_free(&r);
    /* URL-safe, unpadded, to the pty. */
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3},\"input\":{\"pty\":\"-_8\"}}"), &r, err), 0);
    assert_int_equal(r.to_pty, 1);
    assert_int_equal(r.data.len, 2);
    assert_memory_equal(r.data.data, "\xfb\xff", 2);
    process_request_input_free(&r);
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"\"}}"), &r, err), 0);
    assert_int_equal(r.data.len, 0);
    process_request_input_free(&r);
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"a b\"}}"), &r, err), -1);
    assert_non_null(strstr(err, "base64"));
    process_request_input_free(&r);
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3},\"input\":{}}"), &r, err), -1);
    process_request_input_free(&r);
    assert_int_equal(process_request_input(parse("{\"process\":{\"pid\":3}}"), &r, err), -1);
    assert_non_null(strstr(err, "input"));
    process_request_input_free(&r);
}

static void test_signal(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_signal r;
    assert_int_equal(process_request_signal(parse("{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGKILL\"}"), &r, err), 0);
    assert_int_equal(r.sig, SIGKILL);
    assert_int_equal(process_request_signal(parse("{\"process\":{\"pid\":3},\"signal\":15}"), &r, err), 0);
    assert_int_equal(r.sig, SIGTERM);
    assert_int_equal(process_request_signal(parse("{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGWINCH\"}"), &r, err), 0);
    assert_int_equal(r.sig, SIGWINCH);
    const char *bad[] = {"\"SIGNAL_UNSPECIFIED\"", "0", "65", "1.5", "\"SIGKILL\"", "\"SIGNAL_\"", "null", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"process\":{\"pid\":3},\"signal\":%s}", bad[i]);
        assert_int_equal(process_request_signal(parse(json), &r, err), -1);
        assert_non_null(strstr(err, "signal"));
    }
}

static void test_update(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_update r;
    assert_int_equal(process_request_update(parse("{\"process\":{\"pid\":3},\"pty\":{\"size\":{\"cols\":100,"
                                          "\"rows\":30}}}"),
                                    &r, err),
                     0);
    assert_int_equal(r.cols, 100);
    assert_int_equal(r.rows, 30);
    assert_int_equal(process_request_update(parse("{\"process\":{\"pid\":3}}"), &r, err), -1);
    assert_non_null(strstr(err, "pty"));
}

static void test_stream_messages(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct process_request_stream r;
    assert_int_equal(process_request_stream(parse("{\"start\":{\"process\":{\"pid\":9}}}"), &r, err), 0);
    assert_int_equal(r.kind, PROCREQ_STREAM_START);
    assert_int_equal(r.in.sel.pid, 9);
    process_request_stream_free(&r);
    assert_int_equal(process_request_stream(parse("{\"data\":{\"input\":{\"pty\":\"eA==\"}}}"), &r, err), 0);
    assert_int_equal(r.kind, PROCREQ_STREAM_DATA);
    assert_int_equal(r.in.to_pty, 1);
    assert_int_equal(r.in.data.len, 1);
    process_request_stream_free(&r);
    assert_int_equal(process_request_stream(parse("{\"keepalive\":{}}"), &r, err), 0);
    assert_int_equal(r.kind, PROCREQ_STREAM_KEEPALIVE);
    process_request_stream_free(&r);
    assert_int_equal(process_request_stream(parse("{}"), &r, err), -1);
    process_request_stream_free(&r);
    assert_int_equal(process_request_stream(parse("{\"start\":{}}"), &r, err), -1);
    process_request_stream_free(&r);
    assert_int_equal(process_request_stream(parse("{\"data\":5}"), &r, err), -1);
    process_request_stream_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_as_the_sdk_sends_it),
        cmocka_unit_test(test_start_refusals),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_input),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_update),
        cmocka_unit_test(test_stream_messages),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cJSON_Delete(msg);
    return rc;
}
