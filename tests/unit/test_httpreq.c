/*
 * test_httpreq.c - the request head and body through http-parser
 * (agent/serve/httpreq.c): what is kept, the bounds (head 431, body 413,
 * header count), malformed input (400), keep-alive rules, pipelined bytes,
 * Transfer-Encoding codings (400, 501), that no split of the input
 * changes the outcome, and a body's draws from the memory budget (429).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/httpreq.h"
#include "agent/core/budget.h"
#include "agent/core/protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a feed came to: the event that ended it and a digest of the request. */
struct outcome {
    enum httpreq_event ev;
    int status;
    size_t used; /* bytes of the input that belong to the request */
    char text[4096];
};

/* Feed p[0..n) in pieces of at most step bytes (0: cut once at `cut`). */
static void run(struct httpreq *r, const char *p, size_t n, size_t cut, size_t step,
                size_t body_max, struct outcome *o)
{
    size_t off = 0;
    memset(o, 0, sizeof *o);
    for (;;) {
        size_t piece = step ? step : (off < cut ? cut - off : n - off);
        if (piece > n - off) piece = n - off;
        size_t used;
        enum httpreq_event ev = httpreq_feed(r, p + off, piece, &used);
        off += used;
        if (ev == HTTPREQ_HEAD) {
            if (body_max && httpreq_body_buffer(r, body_max) < 0) {
                o->ev = HTTPREQ_ERROR;
                break;
            }
            continue;
        }
        if (ev == HTTPREQ_DONE || ev == HTTPREQ_ERROR) {
            o->ev = ev;
            break;
        }
        if (off == n) {
            o->ev = HTTPREQ_MORE;
            break;
        }
    }
    o->used = off;
    if (o->ev == HTTPREQ_ERROR) {
        o->status = httpreq_status(r);
        return;
    }
    if (o->ev != HTTPREQ_DONE) return;
    int k = snprintf(o->text, sizeof o->text, "%d %s ?%s ka=%d 11=%d |", httpreq_method(r),
                     httpreq_path(r), httpreq_query(r), httpreq_keep_alive(r), httpreq_http11(r));
    for (unsigned i = 0; i < r->nhdr && k < (int)sizeof o->text; i++) {
        const char *name, *value;
        httpreq_header_at(r, i, &name, &value);
        k += snprintf(o->text + k, sizeof o->text - (size_t)k, "%s=%s|", name, value);
    }
    const struct buf *b = httpreq_body(r);
    if (k < (int)sizeof o->text)
        snprintf(o->text + k, sizeof o->text - (size_t)k, "body=%.*s", (int)b->len,
                 b->len ? b->data : "");
}

static void one(const char *p, size_t body_max, struct outcome *o)
{
    struct httpreq r;
    httpreq_init(&r);
    run(&r, p, strlen(p), strlen(p), 0, body_max, o);
    httpreq_free(&r);
}

static void test_get(void **s)
{
    (void)s;
    struct httpreq r;
    struct outcome o;
    const char *req = "GET /files?path=/a%20b&x=1 HTTP/1.1\r\nHost: h\r\n"
                      "X-Access-Token:   s3cret  \r\nAccept: */*\r\naccept: again\r\n\r\n";
    httpreq_init(&r);
    run(&r, req, strlen(req), strlen(req), 0, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    assert_int_equal(o.used, strlen(req));
    assert_int_equal(httpreq_method(&r), HTTP_GET);
    assert_string_equal(httpreq_path(&r), "/files");
    assert_string_equal(httpreq_query(&r), "path=/a%20b&x=1");
    assert_string_equal(httpreq_header(&r, "x-access-token"), "s3cret");
    assert_string_equal(httpreq_header(&r, "HOST"), "h");
    assert_null(httpreq_header(&r, "Accept")); /* twice: ambiguous */
    assert_int_equal(httpreq_header_count(&r, "Accept"), 2);
    assert_null(httpreq_header(&r, "Missing"));
    assert_int_equal(httpreq_keep_alive(&r), 1);
    assert_int_equal(httpreq_http11(&r), 1);
    assert_int_equal(httpreq_body(&r)->len, 0);
    /* The same parser serves the next request after a reset. */
    httpreq_reset(&r);
    const char *req2 = "POST /x HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
    run(&r, req2, strlen(req2), strlen(req2), 0, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    assert_string_equal(httpreq_path(&r), "/x");
    assert_string_equal(httpreq_query(&r), "");
    assert_int_equal(httpreq_keep_alive(&r), 0);
    assert_memory_equal(httpreq_body(&r)->data, "abc", 3);
    httpreq_free(&r);
}

static void test_http10(void **s)
{
    (void)s;
    struct httpreq r;
    struct outcome o;
    httpreq_init(&r);
    const char *a = "GET /health HTTP/1.0\r\n\r\n";
    run(&r, a, strlen(a), strlen(a), 0, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    assert_int_equal(httpreq_keep_alive(&r), 0);
    assert_int_equal(httpreq_http11(&r), 0);
    httpreq_reset(&r);
    const char *b = "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    run(&r, b, strlen(b), strlen(b), 0, 0, &o);
    assert_int_equal(httpreq_keep_alive(&r), 1);
    httpreq_reset(&r);
    const char *c = "GET / HTTP/2.0\r\n\r\n";
    run(&r, c, strlen(c), strlen(c), 0, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_ERROR);
    assert_int_equal(o.status, 505);
    httpreq_free(&r);
}

static void test_chunked_every_split(void **s)
{
    (void)s;
    const char *req = "POST /process.Process/Start HTTP/1.1\r\nHost: a\r\n"
                      "Transfer-Encoding: chunked\r\nContent-Type: application/connect+json\r\n\r\n"
                      "5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\n";
    size_t n = strlen(req);
    struct outcome whole, part;
    one(req, 0, &whole);
    assert_int_equal(whole.ev, HTTPREQ_DONE);
    assert_non_null(strstr(whole.text, "body=hello world!"));
    assert_null(strstr(whole.text, "Trailer")); /* trailers are not headers */
    for (size_t cut = 0; cut <= n; cut++) {
        struct httpreq r;
        httpreq_init(&r);
        run(&r, req, n, cut, 0, 0, &part);
        assert_int_equal(part.ev, HTTPREQ_DONE);
        assert_int_equal(part.used, n);
        assert_string_equal(part.text, whole.text);
        httpreq_free(&r);
    }
    struct httpreq r;
    httpreq_init(&r);
    run(&r, req, n, 0, 1, 0, &part); /* a byte at a time */
    assert_string_equal(part.text, whole.text);
    httpreq_free(&r);
}

static void test_pipelined(void **s)
{
    (void)s;
    const char *two = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    struct outcome o;
    one(two, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    assert_int_equal(o.used, strlen("GET /a HTTP/1.1\r\n\r\n"));
    /* Fed after the end, nothing more is taken. */
    struct httpreq r;
    size_t used = 99;
    httpreq_init(&r);
    run(&r, two, strlen(two), strlen(two), 0, 0, &o);
    assert_int_equal(httpreq_feed(&r, two + o.used, strlen(two) - o.used, &used), HTTPREQ_DONE);
    assert_int_equal(used, 0);
    httpreq_free(&r);
}

static void test_body_bounds(void **s)
{
    (void)s;
    struct outcome o;
    one("POST /x HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world", 10, &o);
    assert_int_equal(o.ev, HTTPREQ_ERROR);
    assert_int_equal(o.status, 413);
    one("POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nhelloworld", 10, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    /* Chunked: found out while reading. */
    one("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n",
        10, &o);
    assert_int_equal(o.ev, HTTPREQ_ERROR);
    assert_int_equal(o.status, 413);
    /* A Content-Length past the default bound, refused at the head. */
    char req[128];
    snprintf(req, sizeof req, "POST /x HTTP/1.1\r\nContent-Length: %u\r\n\r\n", SERVE_BODY_MAX + 1);
    one(req, SERVE_BODY_MAX, &o);
    assert_int_equal(o.status, 413);
}

static void test_head_bounds(void **s)
{
    (void)s;
    struct outcome o;
    size_t n = SERVE_HEAD_MAX + 100;
    char *big = malloc(n + 64);
    int k = snprintf(big, 64, "GET /x HTTP/1.1\r\nX-Big: ");
    memset(big + k, 'a', n - (size_t)k);
    big[n] = '\0';
    one(big, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_ERROR);
    assert_int_equal(o.status, 431);
    /* A long target is part of the head too. */
    k = snprintf(big, 64, "GET /");
    memset(big + k, 'a', n - (size_t)k);
    big[n] = '\0';
    one(big, 0, &o);
    assert_int_equal(o.status, 431);
    /* Just under the bound is fine. */
    k = snprintf(big, 64, "GET /x HTTP/1.1\r\nX-Big: ");
    size_t fill = SERVE_HEAD_MAX - (size_t)k - 8;
    memset(big + k, 'a', fill);
    strcpy(big + k + fill, "\r\n\r\n");
    one(big, 0, &o);
    assert_int_equal(o.ev, HTTPREQ_DONE);
    /* Too many header lines. */
    k = snprintf(big, 64, "GET /x HTTP/1.1\r\n");
    for (int i = 0; i <= HTTPREQ_MAX_HEADERS; i++) k += sprintf(big + k, "H%d: v\r\n", i);
    strcpy(big + k, "\r\n");
    one(big, 0, &o);
    assert_int_equal(o.status, 431);
    free(big);
}

static void test_malformed(void **s)
{
    (void)s;
    const char *bad[] = {
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS hello */
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET /a b HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        NULL,
    };
    for (int i = 0; bad[i]; i++) {
        struct outcome o;
        one(bad[i], 0, &o);
        assert_int_equal(o.ev, HTTPREQ_ERROR);
        assert_int_equal(o.status, 400);
    }
}

static void test_expect_continue(void **s)
{
    (void)s;
    struct httpreq r;
    size_t used;
    const char *req = "POST /x HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nhi";
    httpreq_init(&r);
    assert_int_equal(httpreq_feed(&r, req, strlen(req), &used), HTTPREQ_HEAD);
    assert_int_equal(httpreq_expects_continue(&r), 1);
    assert_int_equal(httpreq_body_expected(&r), 1);
    httpreq_reset(&r);
    const char *get = "GET /x HTTP/1.1\r\n\r\n";
    assert_int_equal(httpreq_feed(&r, get, strlen(get), &used), HTTPREQ_HEAD);
    assert_int_equal(httpreq_body_expected(&r), 0);
    assert_int_equal(httpreq_expects_continue(&r), 0);
    httpreq_free(&r);
}

static int count_body(void *ctx, const char *p, size_t n)
{
    (void)p;
    *(size_t *)ctx += n;
    return 0;
}

/* Only a lone, final chunked frames a body; chunked after another coding
 * is 501; anything else that names a coding is 400. No byte of the body is
 * parsed as chunked unless the request is served. */
static void test_transfer_codings(void **s)
{
    (void)s;
    static const struct {
        const char *te; /* the Transfer-Encoding lines */
        int status;     /* 0: served */
    } cases[] = {
        {"Transfer-Encoding: chunked\r\n", 0},
        {"Transfer-Encoding: Chunked \r\n", 0},
        /* Empty list elements: http-parser does not frame these as chunked. */
        {"Transfer-Encoding: , chunked\r\n", 400},
        {"Transfer-Encoding: chunked,\r\n", 400},
        {"Transfer-Encoding: gzip\r\n", 400},
        {"Transfer-Encoding: identity\r\n", 400},
        {"Transfer-Encoding: chunked, gzip\r\n", 400},
        {"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", 400},
        {"Transfer-Encoding: chunked, chunked\r\n", 400},
        {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
        {"Transfer-Encoding: chunked;q=1\r\n", 400},
        {"Transfer-Encoding:\r\n", 400},
        {"Transfer-Encoding: gzip, chunked\r\n", 501},
        {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501},
        {"Transfer-Encoding: x-custom , CHUNKED\r\n", 501},
        {"Transfer-Encoding: gzip,\r\n chunked\r\n", 501}, /* folded */
        {NULL, 0},
    };
    for (int i = 0; cases[i].te; i++) {
        char req[256];
        snprintf(req, sizeof req, "POST /x HTTP/1.1\r\n%s\r\n5\r\nhello\r\n0\r\n\r\n", cases[i].te);
        struct httpreq r;
        size_t used, got = 0, n = strlen(req);
        httpreq_init(&r);
        enum httpreq_event ev = httpreq_feed(&r, req, n, &used);
        if (ev == HTTPREQ_HEAD) {
            httpreq_body_sink(&r, count_body, &got);
            size_t more;
            ev = httpreq_feed(&r, req + used, n - used, &more);
        }
        if (cases[i].status) {
            assert_int_equal(ev, HTTPREQ_ERROR);
            assert_int_equal(httpreq_status(&r), cases[i].status);
            assert_int_equal(got, 0);
        } else {
            assert_int_equal(ev, HTTPREQ_DONE);
            assert_int_equal(got, 5);
        }
        httpreq_free(&r);
    }
    /* HTTP/1.0 has no transfer codings: the framing is faulty. */
    struct outcome o;
    one("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, &o);
    assert_int_equal(o.ev, HTTPREQ_ERROR);
    assert_int_equal(o.status, 400);
}

struct sink {
    char got[64];
    size_t n;
    int refuse_at;
};

static int sink_fn(void *ctx, const char *p, size_t n)
{
    struct sink *k = ctx;
    if (k->refuse_at && k->n + n >= (size_t)k->refuse_at) return 507;
    memcpy(k->got + k->n, p, n);
    k->n += n;
    return 0;
}

static void test_sink(void **s)
{
    (void)s;
    const char *req = "POST /files HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
    for (int refuse = 0; refuse <= 1; refuse++) {
        struct httpreq r;
        struct sink k = {{0}, 0, refuse ? 5 : 0};
        size_t used, off = 0;
        httpreq_init(&r);
        assert_int_equal(httpreq_feed(&r, req, strlen(req), &used), HTTPREQ_HEAD);
        off = used;
        httpreq_body_sink(&r, sink_fn, &k);
        enum httpreq_event ev = httpreq_feed(&r, req + off, strlen(req) - off, &used);
        if (refuse) {
            assert_int_equal(ev, HTTPREQ_ERROR);
            assert_int_equal(httpreq_status(&r), 507);
        } else {
            assert_int_equal(ev, HTTPREQ_DONE);
            assert_int_equal(k.n, 6);
            assert_memory_equal(k.got, "abcdef", 6);
            assert_int_equal(httpreq_body(&r)->len, 0);
        }
        httpreq_free(&r);
    }
}

/* Feed a head and check its body as the connection does: the check's result. */
static int head_checked(struct httpreq *r, const char *head)
{
    size_t used, more, n = strlen(head);
    assert_int_equal(httpreq_feed(r, head, n, &used), HTTPREQ_HEAD);
    int rc = httpreq_body_check(r);
    if (rc == 0 && used < n) { /* the rest of the head, past the pause */
        assert_int_equal(httpreq_feed(r, head + used, n - used, &more), HTTPREQ_MORE);
        assert_int_equal(used + more, n);
    }
    return rc;
}

/* The memory budget (core/budget.h): a Content-Length body's memory is taken
 * whole at the head, exactly, and refused there (429); past the bound it is
 * 413 first; a small one is taken whatever the budget says; a chunked one
 * as it grows; every path gives it all back. */
static void test_budget(void **s)
{
    (void)s;
    struct httpreq r;
    char head[128], chunked[128];
    size_t used;
    budget_set(100000);
    httpreq_init(&r);
    assert_int_equal(head_checked(&r, "POST /x HTTP/1.1\r\nContent-Length: 90000\r\n\r\n"), 0);
    assert_int_equal(budget_used(), 90001); /* the body and a terminator, no more */
    httpreq_reset(&r);                      /* a large body's memory goes between requests */
    assert_int_equal(budget_used(), 0);
    budget_force(50000); /* drawn elsewhere */
    assert_int_equal(head_checked(&r, "POST /x HTTP/1.1\r\nContent-Length: 90000\r\n\r\n"), -1);
    assert_int_equal(httpreq_status(&r), 429);
    assert_non_null(strstr(httpreq_why(&r), ENV_MEMORY_BUDGET));
    assert_int_equal(budget_used(), 50000);
    httpreq_reset(&r);
    snprintf(head, sizeof head, "POST /x HTTP/1.1\r\nContent-Length: %u\r\n\r\n", SERVE_BODY_MAX + 1);
    assert_int_equal(head_checked(&r, head), -1);
    assert_int_equal(httpreq_status(&r), 413); /* the bound, not the budget */
    httpreq_reset(&r);
    budget_force(50000); /* spent */
    assert_true(budget_spent());
    assert_int_equal(head_checked(&r, "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), 0);
    assert_int_equal(httpreq_feed(&r, "hello", 5, &used), HTTPREQ_DONE);
    assert_memory_equal(httpreq_body(&r)->data, "hello", 5);
    httpreq_reset(&r); /* a small body's memory stays for the next request, drawn */
    assert_int_equal(budget_used(), 100000 + 6);
    budget_give(100000);
    /* Chunked: 429 once it would pass the budget, as it grows. */
    budget_set(70000);
    snprintf(chunked, sizeof chunked, "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_int_equal(head_checked(&r, chunked), 0);
    static char piece[40000 + 16];
    int k = snprintf(piece, sizeof piece, "9c40\r\n");
    memset(piece + k, 'c', 40000);
    memcpy(piece + k + 40000, "\r\n", 2);
    size_t n = (size_t)k + 40002;
    assert_int_equal(httpreq_feed(&r, piece, n, &used), HTTPREQ_MORE);
    assert_int_equal(httpreq_feed(&r, piece, n, &used), HTTPREQ_ERROR);
    assert_int_equal(httpreq_status(&r), 429);
    assert_true(budget_used() <= 70000);
    httpreq_free(&r);
    assert_int_equal(budget_used(), 0);
    budget_set(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),         cmocka_unit_test(test_http10),
        cmocka_unit_test(test_chunked_every_split), cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_body_bounds), cmocka_unit_test(test_head_bounds),
        cmocka_unit_test(test_malformed),   cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_sink),        cmocka_unit_test(test_transfer_codings),
        cmocka_unit_test(test_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
