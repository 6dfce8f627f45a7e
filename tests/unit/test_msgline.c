/*
 * test_msgline.c - the session's message lines (agent/session/msgline.c):
 * id validation, request and reply recognition, the id peek of too-long
 * lines, the error and reply lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/session/msgline.h"

#include <string.h>

#define S(x) x, sizeof(x) - 1

static void test_id_valid(void **st)
{
    (void)st;
    assert_true(msgline_id_valid(S("a")));
    assert_true(msgline_id_valid(S("A-z.0:9_x")));
    assert_false(msgline_id_valid(S("")));
    assert_false(msgline_id_valid(S("a__b")));
    assert_false(msgline_id_valid(S("__")));
    /* A leading or trailing '_' would run into the "__" around it. */
    assert_false(msgline_id_valid(S("_a_")));
    assert_false(msgline_id_valid(S("_a")));
    assert_false(msgline_id_valid(S("a_")));
    assert_false(msgline_id_valid(S("_")));
    assert_true(msgline_id_valid(S("a_b_c")));
    assert_false(msgline_id_valid(S("a b")));
    assert_false(msgline_id_valid(S("a/b")));
    assert_false(msgline_id_valid(S("caf\xc3\xa9")));
    char id[130];
    memset(id, 'x', sizeof id);
    assert_true(msgline_id_valid(id, 128));
    assert_false(msgline_id_valid(id, 129));
}

static void test_nonce_problem(void **st)
{
    (void)st;
    assert_null(msgline_nonce_problem(S("")));
    assert_null(msgline_nonce_problem(S("n0nce-S3cret value_x~!")));
    assert_string_equal(msgline_nonce_problem(S("a__b")), "it holds '__'");
    assert_string_equal(msgline_nonce_problem(S("_ab")), "it starts or ends with '_'");
    assert_string_equal(msgline_nonce_problem(S("ab_")), "it starts or ends with '_'");
    assert_string_equal(msgline_nonce_problem(S("_")), "it starts or ends with '_'");
    assert_non_null(strstr(msgline_nonce_problem(S("a\nb")), "printable ASCII"));
    assert_non_null(strstr(msgline_nonce_problem(S("a\rb")), "printable ASCII"));
    assert_non_null(strstr(msgline_nonce_problem(S("a\x7f")), "printable ASCII"));
    assert_non_null(strstr(msgline_nonce_problem(S("caf\xc3\xa9")), "printable ASCII"));
    assert_non_null(strstr(msgline_nonce_problem("a\0b", 3), "printable ASCII"));
}

static void test_parse_request(void **st)
{
    (void)st;
    struct msgline_request m;
    assert_int_equal(msgline_parse_request(S("{\"id\": \"r1\", \"method\": \"m\", \"params\": {\"id\": \"no\"}}"), &m), MSG_OK);
    assert_string_equal(m.id, "r1");
    assert_true(m.timeout == 0);
    /* The last "id" counts (json.loads), escapes decode, nested ids do not count. */
    assert_int_equal(msgline_parse_request(S("{\"params\": [{\"id\": \"x\"}], \"id\": \"a\", \"\\u0069d\": \"\\u0062c\"}"), &m), MSG_OK);
    assert_string_equal(m.id, "bc");
    assert_int_equal(msgline_parse_request(S("{\"id\": \"t\", \"timeout\": 2.5}"), &m), MSG_OK);
    assert_true(m.timeout == 2.5);
    assert_int_equal(msgline_parse_request(S("{\"id\": \"t\", \"timeout\": null}"), &m), MSG_OK);
    assert_true(m.timeout == 0);
    assert_int_equal(msgline_parse_request(S("  \t\r"), &m), MSG_BLANK);
    /* Bad, with the id readable: answerable. */
    assert_int_equal(msgline_parse_request(S("{\"id\": \"t\", \"timeout\": -1}"), &m), MSG_BAD);
    assert_string_equal(m.id, "t");
    assert_int_equal(msgline_parse_request(S("{\"id\": \"t\", \"timeout\": \"5\"}"), &m), MSG_BAD);
    assert_string_equal(m.id, "t");
    assert_int_equal(msgline_parse_request(S("{\"id\": \"p\", \"params\": [1,"), &m), MSG_BAD);
    assert_string_equal(m.id, "p");
    assert_int_equal(msgline_parse_request(S("{\"id\": \"u\", \"x\": \"\xff\"}"), &m), MSG_BAD);
    assert_string_equal(m.id, "u");
    /* Bad, no id to answer. */
    assert_int_equal(msgline_parse_request(S("garbage"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msgline_parse_request(S("[\"id\", \"x\"]"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msgline_parse_request(S("{\"id\": \"a__b\"}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msgline_parse_request(S("{\"id\": 5}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msgline_parse_request(S("{\"id\": \"a\\u0000\"}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msgline_parse_request(S("{\"method\": \"x\"}"), &m), MSG_BAD);
    assert_string_equal(m.why, "no \"id\"");
}

static void test_peek_id(void **st)
{
    (void)st;
    char id[MSG_ID_MAX + 1];
    size_t n;
    assert_int_equal(msgline_peek_id(S("{\"id\": \"big\", \"params\": \"zzzz"), id, &n), 1);
    assert_string_equal(id, "big");
    assert_int_equal(msgline_peek_id(S("{\"method\": \"m\", \"id\": \"late\", \"params\": [[[["), id, &n), 1);
    assert_string_equal(id, "late");
    /* A quoted "id" inside a string value is not the id. */
    assert_int_equal(msgline_peek_id(S("{\"method\": \"\\\"id\\\": \\\"evil\\\"\", \"params\": \"zz"), id, &n), 0);
    /* Cut inside the id value: not readable. */
    assert_int_equal(msgline_peek_id(S("{\"id\": \"abc"), id, &n), 0);
    assert_int_equal(msgline_peek_id(S("{\"params\": \"zzzz"), id, &n), 0);
    assert_int_equal(msgline_peek_id(S(""), id, &n), 0);
}

static void test_parse_reply(void **st)
{
    (void)st;
    char id[MSG_ID_MAX + 1];
    size_t n;
    assert_int_equal(msgline_parse_reply(S("{\"id\": \"r\", \"result\": null}"), id, &n), 1);
    assert_string_equal(id, "r");
    assert_int_equal(msgline_parse_reply(S("{\"error\": {}, \"id\": \"e\"}"), id, &n), 1);
    assert_int_equal(msgline_parse_reply(S("{\"id\": \"r\", \"neither\": 1}"), id, &n), 0);
    assert_int_equal(msgline_parse_reply(S("{\"id\": \"r\", \"result\": 1"), id, &n), 0);
    assert_int_equal(msgline_parse_reply(S("hello"), id, &n), 0);
    assert_int_equal(msgline_parse_reply(S("{\"id\": \"a__b\", \"result\": 1}"), id, &n), 0);
}

static void test_error_and_reply_line(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(msgline_error_json(&b, S("x1"), "timeout", "no answer within 1 s"), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"id\": \"x1\", \"error\": {\"code\": \"timeout\", \"message\": \"no answer within 1 s\"}}");
    buf_reset(&b);
    assert_int_equal(msgline_reply_line(&b, S("x1"), S("N"), S("{}")), 0);
    assert_string_equal(buf_cstr(&b), "__SANDBOX_REPLY__x1__N__e30=\n");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_nonce_problem),
        cmocka_unit_test(test_parse_request),
        cmocka_unit_test(test_peek_id),
        cmocka_unit_test(test_parse_reply),
        cmocka_unit_test(test_error_and_reply_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
