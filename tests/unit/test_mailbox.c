/*
 * test_mailbox.c - the session's pure parts: id validation, request and reply
 * recognition, the id peek of too-long lines, the error and reply lines, the
 * bounded line splitter and the duplicate window.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/lsplit.h"
#include "agent/session/msgline.h"
#include "agent/session/seen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1

static void test_id_valid(void **st)
{
    (void)st;
    assert_true(msg_id_valid(S("a")));
    assert_true(msg_id_valid(S("A-z.0:9_x")));
    assert_false(msg_id_valid(S("")));
    assert_false(msg_id_valid(S("a__b")));
    assert_false(msg_id_valid(S("__")));
    assert_true(msg_id_valid(S("_a_")));
    assert_false(msg_id_valid(S("a b")));
    assert_false(msg_id_valid(S("a/b")));
    assert_false(msg_id_valid(S("caf\xc3\xa9")));
    char id[130];
    memset(id, 'x', sizeof id);
    assert_true(msg_id_valid(id, 128));
    assert_false(msg_id_valid(id, 129));
}

static void test_parse_request(void **st)
{
    (void)st;
    struct msg_request m;
    assert_int_equal(msg_parse_request(S("{\"id\": \"r1\", \"method\": \"m\", \"params\": {\"id\": \"no\"}}"), &m), MSG_OK);
    assert_string_equal(m.id, "r1");
    assert_true(m.timeout == 0);
    /* The last "id" counts (json.loads), escapes decode, nested ids do not count. */
    assert_int_equal(msg_parse_request(S("{\"params\": [{\"id\": \"x\"}], \"id\": \"a\", \"\\u0069d\": \"\\u0062c\"}"), &m), MSG_OK);
    assert_string_equal(m.id, "bc");
    assert_int_equal(msg_parse_request(S("{\"id\": \"t\", \"timeout\": 2.5}"), &m), MSG_OK);
    assert_true(m.timeout == 2.5);
    assert_int_equal(msg_parse_request(S("{\"id\": \"t\", \"timeout\": null}"), &m), MSG_OK);
    assert_true(m.timeout == 0);
    assert_int_equal(msg_parse_request(S("  \t\r"), &m), MSG_BLANK);
    /* Bad, with the id readable: answerable. */
    assert_int_equal(msg_parse_request(S("{\"id\": \"t\", \"timeout\": -1}"), &m), MSG_BAD);
    assert_string_equal(m.id, "t");
    assert_int_equal(msg_parse_request(S("{\"id\": \"t\", \"timeout\": \"5\"}"), &m), MSG_BAD);
    assert_string_equal(m.id, "t");
    assert_int_equal(msg_parse_request(S("{\"id\": \"p\", \"params\": [1,"), &m), MSG_BAD);
    assert_string_equal(m.id, "p");
    assert_int_equal(msg_parse_request(S("{\"id\": \"u\", \"x\": \"\xff\"}"), &m), MSG_BAD);
    assert_string_equal(m.id, "u");
    /* Bad, no id to answer. */
    assert_int_equal(msg_parse_request(S("garbage"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msg_parse_request(S("[\"id\", \"x\"]"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msg_parse_request(S("{\"id\": \"a__b\"}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msg_parse_request(S("{\"id\": 5}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msg_parse_request(S("{\"id\": \"a\\u0000\"}"), &m), MSG_BAD);
    assert_int_equal(m.idlen, 0);
    assert_int_equal(msg_parse_request(S("{\"method\": \"x\"}"), &m), MSG_BAD);
    assert_string_equal(m.why, "no \"id\"");
}

static void test_peek_id(void **st)
{
    (void)st;
    char id[MSG_ID_MAX + 1];
    size_t n;
    assert_int_equal(msg_peek_id(S("{\"id\": \"big\", \"params\": \"zzzz"), id, &n), 1);
    assert_string_equal(id, "big");
    assert_int_equal(msg_peek_id(S("{\"method\": \"m\", \"id\": \"late\", \"params\": [[[["), id, &n), 1);
    assert_string_equal(id, "late");
    /* A quoted "id" inside a string value is not the id. */
    assert_int_equal(msg_peek_id(S("{\"method\": \"\\\"id\\\": \\\"evil\\\"\", \"params\": \"zz"), id, &n), 0);
    /* Cut inside the id value: not readable. */
    assert_int_equal(msg_peek_id(S("{\"id\": \"abc"), id, &n), 0);
    assert_int_equal(msg_peek_id(S("{\"params\": \"zzzz"), id, &n), 0);
    assert_int_equal(msg_peek_id(S(""), id, &n), 0);
}

static void test_parse_reply(void **st)
{
    (void)st;
    char id[MSG_ID_MAX + 1];
    size_t n;
    assert_int_equal(msg_parse_reply(S("{\"id\": \"r\", \"result\": null}"), id, &n), 1);
    assert_string_equal(id, "r");
    assert_int_equal(msg_parse_reply(S("{\"error\": {}, \"id\": \"e\"}"), id, &n), 1);
    assert_int_equal(msg_parse_reply(S("{\"id\": \"r\", \"neither\": 1}"), id, &n), 0);
    assert_int_equal(msg_parse_reply(S("{\"id\": \"r\", \"result\": 1"), id, &n), 0);
    assert_int_equal(msg_parse_reply(S("hello"), id, &n), 0);
    assert_int_equal(msg_parse_reply(S("{\"id\": \"a__b\", \"result\": 1}"), id, &n), 0);
}

static void test_error_and_reply_line(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(msg_error_json(&b, S("x1"), "timeout", "no answer within 1 s"), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"id\": \"x1\", \"error\": {\"code\": \"timeout\", \"message\": \"no answer within 1 s\"}}");
    buf_reset(&b);
    assert_int_equal(msg_reply_line(&b, S("x1"), S("N"), S("{}")), 0);
    assert_string_equal(buf_cstr(&b), "__SANDBOX_REPLY__x1__N__e30=\n");
    buf_free(&b);
}

/* ---- lsplit ---- */

struct got {
    int lines, large, stop_after;
    char last[64];
    size_t last_len;
};

static int collect(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct got *g = ctx;
    if (kind == LSPLIT_LINE) g->lines++;
    else g->large++;
    g->last_len = n;
    memcpy(g->last, p, n < sizeof g->last ? n : sizeof g->last);
    return g->stop_after && g->lines + g->large >= g->stop_after;
}

static void test_lsplit_partial_and_stop(void **st)
{
    (void)st;
    struct lsplit s;
    struct got g;
    memset(&g, 0, sizeof g);
    lsplit_init(&s, 100);
    assert_int_equal(lsplit_feed(&s, S("ab"), collect, &g), 2);
    assert_int_equal(g.lines, 0);
    assert_int_equal(lsplit_pending(&s), 2);
    assert_int_equal(lsplit_feed(&s, S("c\nde\n"), collect, &g), 5);
    assert_int_equal(g.lines, 2);
    assert_memory_equal(g.last, "de", 2);
    g.stop_after = 3;
    assert_int_equal(lsplit_feed(&s, S("f\ng\n"), collect, &g), 2);
    assert_int_equal(g.lines, 3);
    lsplit_feed(&s, S("partial"), collect, &g);
    lsplit_reset(&s);
    g.stop_after = 0;
    lsplit_feed(&s, S("new\n"), collect, &g);
    assert_memory_equal(g.last, "new", 3);
    lsplit_free(&s);
}

static void test_lsplit_too_large_bounded(void **st)
{
    (void)st;
    struct lsplit s;
    struct got g;
    memset(&g, 0, sizeof g);
    lsplit_init(&s, 10);
    /* Exactly the bound is a line. */
    lsplit_feed(&s, S("0123456789\n"), collect, &g);
    assert_int_equal(g.lines, 1);
    /* Known too long before its newline: reported once, head kept, rest skipped. */
    lsplit_feed(&s, S("{\"id\": \"k\""), collect, &g);
    lsplit_feed(&s, S("zzzzzzzzzzzzzzzzzzzz"), collect, &g);
    assert_int_equal(g.large, 1);
    assert_memory_equal(g.last, "{\"id\": \"k\"", 10);
    assert_int_equal(lsplit_pending(&s), 0); /* nothing of it is held */
    assert_true(s.part.cap <= 256);
    lsplit_feed(&s, S("zzzz\nok\n"), collect, &g);
    assert_int_equal(g.large, 1);
    assert_int_equal(g.lines, 2);
    assert_memory_equal(g.last, "ok", 2);
    /* A complete too-long line in one chunk. */
    lsplit_feed(&s, S("0123456789A\nok2\n"), collect, &g);
    assert_int_equal(g.large, 2);
    assert_int_equal(g.lines, 3);
    lsplit_free(&s);
}

/* ---- seen ---- */

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
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_parse_request),
        cmocka_unit_test(test_peek_id),
        cmocka_unit_test(test_parse_reply),
        cmocka_unit_test(test_error_and_reply_line),
        cmocka_unit_test(test_lsplit_partial_and_stop),
        cmocka_unit_test(test_lsplit_too_large_bounded),
        cmocka_unit_test(test_seen_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
