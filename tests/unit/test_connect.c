/*
 * test_connect.c - the Connect protocol pieces (agent/serve/connect.c):
 * error codes and their HTTP statuses, error and end-stream bodies, the
 * envelope, and the Content-Type, Connect-Timeout-Ms and
 * Keepalive-Ping-Interval grammars.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/connect/connect.h"

#include <string.h>

static void test_code_table(void **s)
{
    (void)s;
    static const struct {
        enum rpc_code code;
        const char *name;
        int status;
    } want[] = {
        {RPC_CANCELED, "canceled", 499},
        {RPC_UNKNOWN, "unknown", 500},
        {RPC_INVALID_ARGUMENT, "invalid_argument", 400},
        {RPC_DEADLINE_EXCEEDED, "deadline_exceeded", 504},
        {RPC_NOT_FOUND, "not_found", 404},
        {RPC_ALREADY_EXISTS, "already_exists", 409},
        {RPC_PERMISSION_DENIED, "permission_denied", 403},
        {RPC_RESOURCE_EXHAUSTED, "resource_exhausted", 429},
        {RPC_FAILED_PRECONDITION, "failed_precondition", 400},
        {RPC_ABORTED, "aborted", 409},
        {RPC_OUT_OF_RANGE, "out_of_range", 400},
        {RPC_UNIMPLEMENTED, "unimplemented", 501},
        {RPC_INTERNAL, "internal", 500},
        {RPC_UNAVAILABLE, "unavailable", 503},
        {RPC_DATA_LOSS, "data_loss", 500},
        {RPC_UNAUTHENTICATED, "unauthenticated", 401},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(want[i].code, (int)i + 1); /* gRPC's numbering */
        assert_string_equal(connect_code_name(want[i].code), want[i].name);
        assert_int_equal(connect_code_status(want[i].code), want[i].status);
    }
    assert_string_equal(connect_code_name((enum rpc_code)99), "unknown");
    assert_int_equal(connect_code_status((enum rpc_code)99), 500);
    assert_string_equal(connect_code_name((enum rpc_code)-1), "unknown");
}

static void test_error_bodies(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(connect_error_json(&b, RPC_NOT_FOUND, "no \"x\""), 0);
    assert_string_equal(buf_cstr(&b), "{\"code\": \"not_found\", \"message\": \"no \\\"x\\\"\"}");
    buf_reset(&b);
    assert_int_equal(connect_error_json(&b, RPC_INTERNAL, NULL), 0);
    assert_string_equal(buf_cstr(&b), "{\"code\": \"internal\"}");
    buf_reset(&b);
    /* Bytes that are not UTF-8 still give valid JSON. */
    assert_int_equal(connect_error_json(&b, RPC_INTERNAL, "a\xff"), 0);
    assert_string_equal(buf_cstr(&b), "{\"code\": \"internal\", \"message\": \"a\\ufffd\"}");
    buf_reset(&b);
    assert_int_equal(connect_end_json(&b, RPC_OK, "ignored"), 0);
    assert_string_equal(buf_cstr(&b), "{}");
    buf_reset(&b);
    assert_int_equal(connect_end_json(&b, RPC_UNAVAILABLE, "bye"), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"error\": {\"code\": \"unavailable\", \"message\": \"bye\"}}");
    buf_free(&b);
}

static void test_envelope_round_trip(void **s)
{
    (void)s;
    struct buf b;
    struct connect_envelope e;
    const char *why = NULL;
    buf_init(&b, 1 << 20);
    assert_int_equal(connect_envelope_put(&b, 0, "{\"a\":1}", 7), 0);
    assert_int_equal(b.len, 12);
    assert_memory_equal(b.data, "\x00\x00\x00\x00\x07", 5);
    assert_int_equal(connect_envelope_get(b.data, b.len, 100, &e, &why), 12);
    assert_int_equal(e.flags, 0);
    assert_int_equal(e.len, 7);
    assert_memory_equal(e.msg, "{\"a\":1}", 7);
    /* Every proper prefix is incomplete, never an error. */
    for (size_t k = 0; k < b.len; k++)
        assert_int_equal(connect_envelope_get(b.data, k, 100, &e, &why), 0);
    /* The length is big-endian. */
    buf_reset(&b);
    char big[300];
    memset(big, 'x', sizeof big);
    assert_int_equal(connect_envelope_put(&b, CONNECT_FLAG_END, big, sizeof big), 0);
    assert_memory_equal(b.data, "\x02\x00\x00\x01\x2c", 5);
    assert_int_equal(connect_envelope_get(b.data, b.len, 300, &e, &why), 305);
    assert_int_equal(e.flags, CONNECT_FLAG_END);
    assert_int_equal(connect_envelope_get(b.data, b.len, 299, &e, &why), -1);
    assert_non_null(why);
    buf_free(&b);
}

static void test_envelope_refusals(void **s)
{
    (void)s;
    struct connect_envelope e;
    const char *why;
    /* Unknown flag bits. */
    why = NULL;
    assert_int_equal(connect_envelope_get("\x04\0\0\0\0", 5, 10, &e, &why), -1);
    assert_non_null(why);
    assert_int_equal(connect_envelope_get("\x80\0\0\0\0", 5, 10, &e, &why), -1);
    /* A huge length is refused before any byte of it is waited for. */
    assert_int_equal(connect_envelope_get("\x00\xff\xff\xff\xff", 5, 1 << 20, &e, &why), -1);
    /* The request of a server-streaming call. */
    assert_int_equal(connect_request_message("\x00\0\0\0\x02{}", 7, &e, &why), 0);
    assert_int_equal(e.len, 2);
    assert_int_equal(connect_request_message("\x00\0\0\0\x00", 5, &e, &why), 0);
    assert_int_equal(e.len, 0);
    assert_int_equal(connect_request_message("\x01\0\0\0\x02{}", 7, &e, &why), -1);
    assert_int_equal(connect_request_message("\x02\0\0\0\x02{}", 7, &e, &why), -1);
    assert_int_equal(connect_request_message("\x00\0\0\0\x02{}x", 8, &e, &why), -1);
    assert_int_equal(connect_request_message("\x00\0\0\0\x03{}", 7, &e, &why), -1);
    assert_int_equal(connect_request_message("\x00\0\0", 3, &e, &why), -1);
    assert_int_equal(connect_request_message("", 0, &e, &why), -1);
}

static void test_ctype(void **s)
{
    (void)s;
    assert_int_equal(connect_ctype("application/json"), CONNECT_CTYPE_UNARY);
    assert_int_equal(connect_ctype("application/json; charset=utf-8"), CONNECT_CTYPE_UNARY);
    assert_int_equal(connect_ctype("Application/JSON ;charset=utf-8"), CONNECT_CTYPE_UNARY);
    assert_int_equal(connect_ctype("application/connect+json"), CONNECT_CTYPE_STREAM);
    assert_int_equal(connect_ctype("application/connect+json;charset=utf-8"), CONNECT_CTYPE_STREAM);
    assert_int_equal(connect_ctype("application/jsonx"), CONNECT_CTYPE_OTHER);
    assert_int_equal(connect_ctype("application/proto"), CONNECT_CTYPE_OTHER);
    assert_int_equal(connect_ctype("application/connect+proto"), CONNECT_CTYPE_OTHER);
    assert_int_equal(connect_ctype(""), CONNECT_CTYPE_OTHER);
    assert_int_equal(connect_ctype(NULL), CONNECT_CTYPE_OTHER);
}

static void test_timeout_header(void **s)
{
    (void)s;
    uint64_t ms;
    assert_int_equal(connect_timeout_ms("60000", &ms), 0);
    assert_int_equal(ms, 60000);
    assert_int_equal(connect_timeout_ms("0", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(connect_timeout_ms("9999999999", &ms), 0);
    assert_int_equal(ms, 9999999999ull);
    assert_int_equal(connect_timeout_ms("0000000001", &ms), 0);
    assert_int_equal(ms, 1);
    const char *bad[] = {"", "12345678901", "-1", "+1", "1.5", " 1", "1 ", "1e3", "0x10", "one", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(connect_timeout_ms(bad[i], &ms), -1);
    assert_int_equal(connect_timeout_ms(NULL, &ms), -1);
}

static void test_keepalive_header(void **s)
{
    (void)s;
    unsigned k;
    assert_int_equal(connect_keepalive_s("50", &k), 0);
    assert_int_equal(k, 50);
    assert_int_equal(connect_keepalive_s("86400", &k), 0);
    assert_int_equal(k, 86400);
    const char *bad[] = {"", "0", "86401", "-5", "5s", "1.5", " 5", "99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(connect_keepalive_s(bad[i], &k), -1);
    assert_int_equal(connect_keepalive_s(NULL, &k), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_table),          cmocka_unit_test(test_error_bodies),
        cmocka_unit_test(test_envelope_round_trip), cmocka_unit_test(test_envelope_refusals),
        cmocka_unit_test(test_ctype),               cmocka_unit_test(test_timeout_header),
        cmocka_unit_test(test_keepalive_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
