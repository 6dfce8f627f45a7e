/*
 * test_rpc.c - Connect calls end to end over a real socket (agent/serve/rpc.c
 * on http/conn.c and http/server.c): unary replies and errors, a stream that a client
 * does not read (the producer is paused, memory stays bounded, nothing is
 * lost), a client that leaves, the deadline, keepalives, the stop, and bad
 * requests. The test is the client: it runs the loop a turn at a time and
 * reads with http-parser in response mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/listen.h"
#include "agent/api/connect/rpc.h"
#include "agent/api/http/server.h"
#include "agent/core/err.h"

#include <http_parser.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- the handlers under test ---- */

#define PIECE 16384

static struct {
    size_t sent, target;  /* Flood: bytes of messages queued, and how many to send */
    int paused;           /* rpc_send returned 0 */
    int cancelled, keepalives, stopped;
    int msgs, sum, released; /* Sum, the client stream */
    struct rpc_call *open; /* a call left open by Hold */
} h;

static void echo_start(struct rpc_call *call, const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    rpc_reply(call, text, strlen(text));
    free(text);
}

static void missing_start(struct rpc_call *call, const cJSON *msg)
{
    rpc_fail(call, RPC_NOT_FOUND, "no such thing");
}

static void flood_more(struct rpc_call *call, void *ctx)
{
    static char piece[PIECE];
    if (!piece[0]) {
        memset(piece, 'x', sizeof piece);
        memcpy(piece, "{\"d\":\"", 6);
        memcpy(piece + PIECE - 2, "\"}", 2);
    }
    while (h.sent < h.target) {
        int r = rpc_send(call, piece, sizeof piece);
        assert_true(r >= 0);
        h.sent += PIECE;
        if (r == 0) {
            h.paused = 1;
            return; /* until more */
        }
    }
    rpc_end(call);
}

static void flood_start(struct rpc_call *call, const cJSON *msg)
{
    struct rpc_hooks hk = {.more = flood_more};
    rpc_set_hooks(call, &hk);
    flood_more(call, NULL);
}

static void hold_cancel(struct rpc_call *call, void *ctx)
{
    h.cancelled++;
    h.open = NULL;
}

static void hold_keepalive(struct rpc_call *call, void *ctx)
{
    h.keepalives++;
    rpc_send(call, "{\"keepalive\":{}}", 16);
}

static void hold_start(struct rpc_call *call, const cJSON *msg)
{
    struct rpc_hooks hk = {.cancel = hold_cancel};
    if (cJSON_GetObjectItem(msg, "keepalive")) hk.keepalive = hold_keepalive;
    rpc_set_hooks(call, &hk);
    h.open = call;
    rpc_send(call, "{\"start\":{}}", 12);
}

/* Sum: a client stream adding each message's "n"; "fail" refuses at once. */
static void sum_message(struct rpc_call *call, const cJSON *msg, void *ctx)
{
    h.msgs++;
    if (cJSON_GetObjectItem(msg, "fail")) {
        rpc_fail(call, RPC_FAILED_PRECONDITION, "refused");
        return;
    }
    const cJSON *n = cJSON_GetObjectItem(msg, "n");
    if (cJSON_IsNumber(n)) h.sum += n->valueint;
}

static void sum_end(struct rpc_call *call, void *ctx)
{
    char out[64];
    int k = snprintf(out, sizeof out, "{\"sum\":%d}", h.sum);
    rpc_reply(call, out, (size_t)k);
}

static void sum_release(void *ctx) { h.released++; }

static void sum_start(struct rpc_call *call, const cJSON *msg)
{
    assert_null(msg);
    struct rpc_hooks hk = {.message = sum_message, .input_end = sum_end, .release = sum_release};
    rpc_set_hooks(call, &hk);
}

static const struct rpc_method methods[] = {
    {"/test.T/Sum", RPC_KIND_CLIENT_STREAM, sum_start},
    {"/test.T/Echo", RPC_KIND_UNARY, echo_start},
    {"/test.T/Missing", RPC_KIND_UNARY, missing_start},
    {"/test.T/Flood", RPC_KIND_STREAM, flood_start},
    {"/test.T/Hold", RPC_KIND_STREAM, hold_start},
};

static const struct rpc_method *find(const char *path)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (!strcmp(methods[i].path, path)) return &methods[i];
    return NULL;
}

static void app_head(struct conn *c, void *ctx)
{
    const struct rpc_method *m = find(httpreq_path(conn_req(c)));
    if (!m) rpc_error_response(c, RPC_UNIMPLEMENTED, "no such method", NULL);
    else rpc_check_head(c, m);
}

static void app_request(struct conn *c, void *ctx)
{
    rpc_start(c, find(httpreq_path(conn_req(c))));
}

static void app_error(struct conn *c, int status, const char *why, void *ctx)
{
    rpc_http_error(c, status, RPC_INVALID_ARGUMENT, why, NULL);
}

/* ---- the client ---- */

struct world {
    struct ev_loop *loop;
    struct server srv;
    char path[108];
    int drained;
};

struct resp {
    http_parser p;
    int status, complete;
    char ctype[64];
    int in_ctype;
    struct buf body;
};

static int on_status_done(http_parser *p) { return 0; }

static int on_field(http_parser *p, const char *at, size_t n)
{
    struct resp *r = p->data;
    r->in_ctype = n == 12 && !strncasecmp(at, "Content-Type", 12);
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    struct resp *r = p->data;
    if (r->in_ctype) snprintf(r->ctype, sizeof r->ctype, "%.*s", (int)n, at);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    return buf_append(&((struct resp *)p->data)->body, at, n);
}

static int on_complete(http_parser *p)
{
    struct resp *r = p->data;
    r->complete = 1;
    r->status = (int)p->status_code;
    return 0;
}

static const http_parser_settings rsettings = {
    .on_headers_complete = on_status_done, .on_header_field = on_field,
    .on_header_value = on_value, .on_body = on_body, .on_message_complete = on_complete,
};

static void resp_init(struct resp *r)
{
    memset(r, 0, sizeof *r);
    http_parser_init(&r->p, HTTP_RESPONSE);
    r->p.data = r;
    buf_init(&r->body, 64 << 20);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Run the loop and read what fd has (when read), until r is complete, fd is
 * closed, or `secs` pass. Returns bytes read. */
static size_t pump(struct world *w, int fd, struct resp *r, int read_it, double secs)
{
    static char chunk[65536];
    size_t got = 0;
    double end = now() + secs;
    while (now() < end && !(r && r->complete)) {
        ev_run(w->loop, EVRUN_NOWAIT);
        struct pollfd pf = {fd, POLLIN, 0};
        if (!read_it || poll(&pf, 1, 5) <= 0) {
            if (!read_it) poll(NULL, 0, 1);
            continue;
        }
        ssize_t n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n <= 0) break;
        got += (size_t)n;
        if (r) {
            size_t k = http_parser_execute(&r->p, &rsettings, chunk, (size_t)n);
            assert_int_equal(k, (size_t)n);
        }
    }
    return got;
}

static int client(struct world *w, const char *req, size_t n)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    strcpy(un.sun_path, w->path);
    assert_int_equal(connect(fd, (struct sockaddr *)&un, sizeof un), 0);
    assert_int_equal(send(fd, req, n, 0), (ssize_t)n);
    return fd;
}

static int rpc_request(struct world *w, const char *method, const char *ctype, const char *extra,
                       const char *body, size_t n)
{
    char req[4096];
    int k = snprintf(req, sizeof req,
                     "POST %s HTTP/1.1\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                     method, ctype, n, extra ? extra : "");
    memcpy(req + k, body, n);
    return client(w, req, (size_t)k + n);
}

static int stream_request(struct world *w, const char *method, const char *extra, const char *json)
{
    struct buf env;
    buf_init(&env, 4096);
    connect_envelope_put(&env, 0, json, strlen(json));
    int fd = rpc_request(w, method, CONNECT_CT_STREAM, extra, env.data, env.len);
    buf_free(&env);
    return fd;
}

/* The envelopes of a stream body: counts data messages, returns the
 * end-stream JSON (static), or NULL when there is none. */
static const char *envelopes(const struct buf *b, size_t *data, size_t *data_bytes)
{
    static char end[512];
    size_t off = 0;
    *data = *data_bytes = 0;
    while (off < b->len) {
        struct connect_envelope e;
        const char *why;
        long k = connect_envelope_get(b->data + off, b->len - off, 1 << 24, &e, &why);
        assert_true(k > 0);
        off += (size_t)k;
        if (e.flags & CONNECT_FLAG_END) {
            assert_int_equal(off, b->len); /* the last one */
            snprintf(end, sizeof end, "%.*s", (int)e.len, e.msg);
            return end;
        }
        (*data)++;
        *data_bytes += e.len;
    }
    return NULL;
}

static void on_drained(struct server *s, void *ctx) { ((struct world *)ctx)->drained = 1; }

static int setup(void **state)
{
    static struct world w;
    char err[ERR_LEN];
    struct listen_addr a;
    struct server_app app = {app_head, app_request, app_error, NULL};
    memset(&w, 0, sizeof w);
    memset(&h, 0, sizeof h);
    snprintf(w.path, sizeof w.path, "/tmp/sa-test-rpc-%d.sock", (int)getpid());
    char spec[128];
    snprintf(spec, sizeof spec, "unix:%s", w.path);
    assert_int_equal(listen_parse(spec, &a, err), 0);
    int fd = listen_open(&a, err);
    assert_true(fd >= 0);
    w.loop = ev_loop_new(EVFLAG_AUTO);
    server_start(&w.srv, w.loop, fd, 0, 16, 5.0, 5.0, &app);
    *state = &w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    if (!w->srv.stopping) server_stop(&w->srv, on_drained, w);
    pump(w, -1, NULL, 0, 0.2);
    assert_int_equal(w->srv.n, 0);
    assert_int_equal(rpc_open_calls(), 0);
    ev_loop_destroy(w->loop);
    unlink(w->path);
    return 0;
}

/* ---- the tests ---- */

static void test_unary(void **state)
{
    struct world *w = *state;
    struct resp r;
    resp_init(&r);
    int fd = rpc_request(w, "/test.T/Echo", "application/json; charset=utf-8", NULL,
                         "{\"a\": [1, 2]}", 13);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, CONNECT_CT_UNARY);
    assert_string_equal(buf_cstr(&r.body), "{\"a\":[1,2]}");
    /* An empty body is the empty message; an error has its status. */
    buf_free(&r.body);
    resp_init(&r);
    close(fd);
    fd = rpc_request(w, "/test.T/Missing", CONNECT_CT_UNARY, NULL, "", 0);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 404);
    assert_string_equal(buf_cstr(&r.body), "{\"code\": \"not_found\", \"message\": \"no such thing\"}");
    close(fd);
    buf_free(&r.body);
}

static void test_unary_refusals(void **state)
{
    struct world *w = *state;
    static const struct {
        const char *method, *ctype, *extra, *body;
        int status;
        const char *code;
    } cases[] = {
        {"/test.T/Echo", "application/proto", NULL, "{}", 415, "invalid_argument"},
        {"/test.T/Echo", CONNECT_CT_UNARY, NULL, "[1]", 400, "invalid_argument"},
        {"/test.T/Echo", CONNECT_CT_UNARY, NULL, "{\"a\":", 400, "invalid_argument"},
        {"/test.T/Echo", CONNECT_CT_UNARY, "Connect-Timeout-Ms: soon\r\n", "{}", 400, "invalid_argument"},
        {"/test.T/Echo", CONNECT_CT_UNARY, "Connect-Protocol-Version: 2\r\n", "{}", 400, "invalid_argument"},
        {"/test.T/Echo", CONNECT_CT_UNARY, "Content-Encoding: gzip\r\n", "{}", 501, "unimplemented"},
        {"/test.T/Echo", CONNECT_CT_UNARY, "Authorization: Bearer x\r\n", "{}", 401, "unauthenticated"},
        {"/test.T/Nope", CONNECT_CT_UNARY, NULL, "{}", 501, "unimplemented"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct resp r;
        resp_init(&r);
        int fd = rpc_request(w, cases[i].method, cases[i].ctype, cases[i].extra, cases[i].body,
                             strlen(cases[i].body));
        pump(w, fd, &r, 1, 5);
        assert_int_equal(r.status, cases[i].status);
        char want[64];
        snprintf(want, sizeof want, "{\"code\": \"%s\"", cases[i].code);
        assert_non_null(strstr(buf_cstr(&r.body), want));
        close(fd);
        buf_free(&r.body);
    }
}

static void test_stream_back_pressure(void **state)
{
    struct world *w = *state;
    struct resp r;
    resp_init(&r);
    h.target = 8u << 20; /* 8 MiB of messages */
    int fd = stream_request(w, "/test.T/Flood", NULL, "{}");
    /* The client reads nothing for a while: the producer must be paused. */
    pump(w, fd, NULL, 0, 0.3);
    assert_int_equal(h.paused, 1);
    assert_true(h.sent < h.target);
    size_t stalled = h.sent;
    pump(w, fd, NULL, 0, 0.2);
    assert_int_equal(h.sent, stalled); /* no progress while nobody reads */
    /* Now read it all: every message, in order, then the end. */
    pump(w, fd, &r, 1, 30);
    assert_int_equal(r.complete, 1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, CONNECT_CT_STREAM);
    size_t n, bytes;
    const char *end = envelopes(&r.body, &n, &bytes);
    assert_non_null(end);
    assert_string_equal(end, "{}");
    assert_int_equal(bytes, h.target);
    assert_int_equal(n, h.target / PIECE);
    close(fd);
    buf_free(&r.body);
}

static void test_stream_cancel(void **state)
{
    struct world *w = *state;
    int fd = stream_request(w, "/test.T/Hold", NULL, "{}");
    pump(w, fd, NULL, 1, 0.2);
    assert_non_null(h.open);
    assert_int_equal(rpc_open_calls(), 1);
    close(fd);
    pump(w, -1, NULL, 0, 0.2);
    assert_int_equal(h.cancelled, 1);
    assert_int_equal(rpc_open_calls(), 0);
    assert_int_equal(w->srv.n, 0);
}

static void test_stream_deadline_and_errors(void **state)
{
    struct world *w = *state;
    struct resp r;
    size_t n, bytes;
    resp_init(&r);
    int fd = stream_request(w, "/test.T/Hold", "Connect-Timeout-Ms: 50\r\n", "{}");
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 200);
    const char *end = envelopes(&r.body, &n, &bytes);
    assert_int_equal(n, 1); /* the start message */
    assert_non_null(strstr(end, "\"deadline_exceeded\""));
    close(fd);
    /* A body that is not one envelope: 200, the error in the end-stream. */
    buf_free(&r.body);
    resp_init(&r);
    fd = rpc_request(w, "/test.T/Hold", CONNECT_CT_STREAM, NULL, "{}", 2);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 200);
    end = envelopes(&r.body, &n, &bytes);
    assert_int_equal(n, 0);
    assert_non_null(strstr(end, "\"invalid_argument\""));
    close(fd);
    /* A unary Content-Type on a stream method. */
    buf_free(&r.body);
    resp_init(&r);
    fd = rpc_request(w, "/test.T/Hold", CONNECT_CT_UNARY, NULL, "{}", 2);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 415);
    close(fd);
    buf_free(&r.body);
}

static void test_keepalive(void **state)
{
    struct world *w = *state;
    int fd = stream_request(w, "/test.T/Hold", "Keepalive-Ping-Interval: 1\r\n",
                            "{\"keepalive\":true}");
    pump(w, fd, NULL, 1, 1.5);
    assert_true(h.keepalives >= 1);
    close(fd);
    pump(w, -1, NULL, 0, 0.2);
    assert_int_equal(h.cancelled, 1);
}

static int chunked_head(struct world *w, const char *method)
{
    char req[256];
    int k = snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nContent-Type: " CONNECT_CT_STREAM
                     "\r\nTransfer-Encoding: chunked\r\n\r\n", method);
    return client(w, req, (size_t)k);
}

/* One chunk holding the envelope of json, or its first `cut` bytes (0: all). */
static void send_envelope(int fd, const char *json, size_t cut)
{
    struct buf env, ch;
    buf_init(&env, 4096);
    buf_init(&ch, 8192);
    connect_envelope_put(&env, 0, json, strlen(json));
    size_t n = cut ? cut : env.len;
    buf_printf(&ch, "%zx\r\n", n);
    buf_append(&ch, env.data, n);
    buf_puts(&ch, "\r\n");
    assert_int_equal(send(fd, ch.data, ch.len, 0), (ssize_t)ch.len);
    buf_free(&env);
    buf_free(&ch);
}

static void test_client_stream(void **state)
{
    struct world *w = *state;
    struct resp r;
    size_t data, bytes;
    resp_init(&r);
    int fd = chunked_head(w, "/test.T/Sum");
    send_envelope(fd, "{\"n\":2}", 0);
    pump(w, fd, &r, 1, 0.2);
    assert_int_equal(h.msgs, 1); /* acted on before the body ends */
    assert_int_equal(r.status, 0);
    send_envelope(fd, "{\"n\":40}", 0);
    assert_int_equal(send(fd, "0\r\n\r\n", 5, 0), 5);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, CONNECT_CT_STREAM);
    assert_string_equal(envelopes(&r.body, &data, &bytes), "{}");
    assert_int_equal(data, 1);
    assert_memory_equal(r.body.data + CONNECT_ENVELOPE_HEAD, "{\"sum\":42}", 10);
    assert_int_equal(h.released, 1);
    buf_free(&r.body);
    close(fd);

    /* Refused mid-body: the error at once, the rest read and dropped. */
    resp_init(&r);
    h.msgs = 0;
    fd = chunked_head(w, "/test.T/Sum");
    send_envelope(fd, "{\"fail\":1}", 0);
    send_envelope(fd, "{\"n\":1}", 0);
    assert_int_equal(send(fd, "0\r\n\r\n", 5, 0), 5);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(envelopes(&r.body, &data, &bytes), "failed_precondition"));
    assert_int_equal(data, 0);
    assert_int_equal(h.msgs, 1);
    assert_int_equal(h.released, 2);
    buf_free(&r.body);
    close(fd);

    /* A body that ends inside an envelope; a client that leaves mid-body. */
    resp_init(&r);
    fd = chunked_head(w, "/test.T/Sum");
    send_envelope(fd, "{\"n\":1}", 3);
    assert_int_equal(send(fd, "0\r\n\r\n", 5, 0), 5);
    pump(w, fd, &r, 1, 5);
    assert_non_null(strstr(envelopes(&r.body, &data, &bytes), "invalid_argument"));
    buf_free(&r.body);
    close(fd);
    fd = chunked_head(w, "/test.T/Sum");
    send_envelope(fd, "{\"n\":1}", 0);
    pump(w, fd, NULL, 0, 0.1);
    close(fd);
    pump(w, -1, NULL, 0, 0.2);
    assert_int_equal(h.released, 4);
    assert_int_equal(rpc_open_calls(), 0);
}

static void test_stop_ends_streams(void **state)
{
    struct world *w = *state;
    struct resp r;
    size_t n, bytes;
    resp_init(&r);
    int fd = stream_request(w, "/test.T/Hold", NULL, "{}");
    int idle = client(w, "", 0); /* a connection that never sends a request */
    pump(w, fd, NULL, 0, 0.2);
    assert_non_null(h.open);
    server_stop(&w->srv, on_drained, w);
    pump(w, fd, &r, 1, 5);
    assert_int_equal(r.complete, 1);
    const char *end = envelopes(&r.body, &n, &bytes);
    assert_non_null(end);
    assert_non_null(strstr(end, "\"unavailable\""));
    assert_int_equal(h.cancelled, 0); /* ended, not cancelled */
    /* The server shut its side: the client reads the end of the stream. */
    char byte;
    pump(w, -1, NULL, 0, 0.05);
    assert_int_equal(recv(fd, &byte, 1, MSG_DONTWAIT), 0);
    /* It lingers until the client closes its side. */
    close(fd);
    close(idle);
    pump(w, -1, NULL, 0, 0.3);
    assert_int_equal(w->drained, 1);
    buf_free(&r.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unary_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_back_pressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_deadline_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_ends_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_stream, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
