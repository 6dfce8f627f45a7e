/*
 * test_conn_trust.c - whose slot a connection holds (agent/api/http/conn_trust.c
 * on http/conn.c and http/server.c), over real sockets: a client that shuts
 * its side makes its connection a stranger's while its response goes on; one
 * gone both ways is found at once (a Unix socket's hang-up; over TCP, the
 * reset its client answers the write asked for at its EOF); a revocation
 * makes every connection a stranger's, oldest first, and drops a request
 * whose body is being handed to a sink. The test is the client and runs the
 * loop itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/http/conn.h"
#include "agent/api/http/listen.h"
#include "agent/api/http/server.h"
#include "agent/core/err.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- the application: /ok (trusted, 204), /hold (trusted, a stream kept
 * open), /sink (trusted, its body handed to a sink) ---- */

static struct {
    struct conn *ok, *held;
    int eofs, gone, sunk;
} t;

static int sink(void *ctx, const char *p, size_t n)
{
    t.sunk += (int)n;
    return 0;
}

static void held_gone(struct conn *c, void *ctx)
{
    t.gone++;
    t.held = NULL;
}

static void held_eof(struct conn *c, void *ctx)
{
    t.eofs++;
    conn_write(c, "probe\n", 6);
}

static void app_head(struct conn *c, void *ctx)
{
    const char *path = httpreq_path(conn_req(c));
    conn_trust(c);
    if (!strcmp(path, "/sink")) httpreq_body_sink(conn_req(c), sink, NULL);
}

static void app_request(struct conn *c, void *ctx)
{
    const char *path = httpreq_path(conn_req(c));
    if (!strcmp(path, "/hold")) {
        struct conn_hooks h = {.gone = held_gone, .eof = held_eof};
        assert_int_equal(conn_stream_begin(c, 200, "text/plain", NULL), 0);
        conn_set_hooks(c, &h);
        assert_int_equal(conn_write(c, "start\n", 6), 1);
        t.held = c;
        return;
    }
    if (!strcmp(path, "/ok")) t.ok = c;
    conn_respond(c, 204, NULL, NULL, "", 0);
}

static void app_error(struct conn *c, int status, const char *why, void *ctx)
{
    conn_respond(c, status, NULL, NULL, "", 0);
}

/* ---- the world: a server on a Unix socket or on 127.0.0.1 ---- */

struct world {
    struct ev_loop *loop;
    struct server srv;
    int tcp;
    char path[108];
    struct sockaddr_in in;
    int drained;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the loop until done() or secs pass; returns done(). */
static int run_until(struct world *w, int (*done)(struct world *w), double secs)
{
    double end = now() + secs;
    while (!done(w) && now() < end) {
        ev_run(w->loop, EVRUN_NOWAIT);
        poll(NULL, 0, 1);
    }
    return done(w);
}

static int never(struct world *w) { return 0; }
static int has_ok(struct world *w) { return t.ok != NULL; }
static int has_held(struct world *w) { return t.held != NULL; }
static int held_gone_once(struct world *w) { return t.gone == 1; }
static int held_listed(struct world *w) { return w->srv.untrusted != NULL; }
static int sunk_three(struct world *w) { return t.sunk == 3; }
static int one_open(struct world *w) { return w->srv.n == 1; }
static int two_open(struct world *w) { return w->srv.n == 2; }
static int eof_once(struct world *w) { return t.eofs == 1; }
static int drained(struct world *w) { return w->drained; }

static void on_drained(struct server *s, void *ctx) { ((struct world *)ctx)->drained = 1; }

static const struct server_app app = {app_head, app_request, app_error, NULL};

static int setup_unix(void **state)
{
    static struct world w;
    char err[ERR_LEN], spec[128];
    struct listen_addr a;
    memset(&w, 0, sizeof w);
    memset(&t, 0, sizeof t);
    snprintf(w.path, sizeof w.path, "/tmp/sa-test-conn-trust-%d.sock", (int)getpid());
    snprintf(spec, sizeof spec, "unix:%s", w.path);
    assert_int_equal(listen_parse(spec, &a, err), 0);
    int fd = listen_open(&a, err);
    assert_true(fd >= 0);
    w.loop = ev_loop_new(EVFLAG_AUTO);
    server_start(&w.srv, w.loop, fd, 0, 16, 5.0, 5.0, &app);
    *state = &w;
    return 0;
}

static int setup_tcp(void **state)
{
    static struct world w;
    memset(&w, 0, sizeof w);
    memset(&t, 0, sizeof t);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    w.in.sin_family = AF_INET;
    w.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof w.in;
    assert_int_equal(bind(fd, (struct sockaddr *)&w.in, sizeof w.in), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&w.in, &len), 0);
    assert_int_equal(listen(fd, 16), 0);
    w.tcp = 1;
    w.loop = ev_loop_new(EVFLAG_AUTO);
    server_start(&w.srv, w.loop, fd, 1, 16, 5.0, 5.0, &app);
    *state = &w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    server_stop(&w->srv, on_drained, w);
    assert_true(run_until(w, drained, 5));
    assert_int_equal(w->srv.n, 0);
    assert_int_equal(w->srv.hupfd, -1); /* closed with the last connection */
    ev_loop_destroy(w->loop);
    if (!w->tcp) unlink(w->path);
    return 0;
}

static int client(struct world *w, const char *req)
{
    int fd;
    if (w->tcp) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&w->in, sizeof w->in), 0);
    } else {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        strcpy(un.sun_path, w->path);
        assert_int_equal(connect(fd, (struct sockaddr *)&un, sizeof un), 0);
    }
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    return fd;
}

/* What fd has now, NUL-ended in buf; -1 at EOF or reset, 0 when nothing. */
static ssize_t take(int fd, char *buf, size_t n)
{
    ssize_t k = recv(fd, buf, n - 1, MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN)) return -1;
    buf[k > 0 ? k : 0] = '\0';
    return k > 0 ? k : 0;
}

/* A stream is open on a new connection, and its first bytes are read. */
static int held_stream(struct world *w)
{
    char buf[1024];
    int fd = client(w, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(run_until(w, has_held, 5));
    ev_run(w->loop, EVRUN_NOWAIT); /* the head and start go before the loop waits */
    assert_true(take(fd, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "start\n"));
    return fd;
}

/* ---- the tests ---- */

static void test_half_close_is_a_strangers_slot(void **state)
{
    struct world *w = *state;
    char buf[1024];
    int ok = client(w, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(run_until(w, has_ok, 5));
    int fd = held_stream(w);
    assert_null(w->srv.untrusted); /* both trusted */
    shutdown(fd, SHUT_WR);
    assert_true(run_until(w, held_listed, 5));
    assert_ptr_equal(w->srv.untrusted, t.held); /* a stranger's, its stream going on */
    assert_ptr_equal(w->srv.untrusted_last, t.held);
    assert_int_equal(t.eofs, 0); /* a Unix socket says whether it is gone */
    assert_int_equal(conn_write(t.held, "more\n", 5), 1);
    ev_run(w->loop, EVRUN_NOWAIT);
    assert_true(take(fd, buf, sizeof buf) > 0);
    assert_string_equal(buf, "5\r\nmore\n\r\n");
    /* Then it closes both ways: the hang-up ends the connection now. */
    close(fd);
    assert_true(run_until(w, held_gone_once, 5));
    assert_true(run_until(w, one_open, 5));
    close(ok);
}

static void test_tcp_client_gone_both_ways_is_found_at_its_eof(void **state)
{
    struct world *w = *state;
    int fd = held_stream(w);
    close(fd); /* a FIN, nothing unread: it looks like a half-close */
    assert_true(run_until(w, held_gone_once, 5));
    assert_int_equal(t.eofs, 1); /* the write its reset answered */
}

static void test_tcp_half_close_gets_the_rest_of_its_stream(void **state)
{
    struct world *w = *state;
    char buf[1024];
    int fd = held_stream(w);
    shutdown(fd, SHUT_WR);
    assert_true(run_until(w, eof_once, 5));
    run_until(w, never, 0.1); /* a reset would have come by now */
    assert_int_equal(t.gone, 0);
    assert_ptr_equal(w->srv.untrusted, t.held);
    assert_int_equal(conn_stream_end(t.held), 0); /* hooks dropped: no gone */
    run_until(w, never, 0.05);
    assert_true(take(fd, buf, sizeof buf) > 0);
    assert_string_equal(buf, "6\r\nprobe\n\r\n0\r\n\r\n");
    run_until(w, never, 0.05);
    assert_int_equal(take(fd, buf, sizeof buf), -1); /* then the end */
    close(fd);
}

static void test_revoke(void **state)
{
    struct world *w = *state;
    char buf[1024];
    int ok = client(w, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(run_until(w, has_ok, 5));
    int fd = held_stream(w);
    int up = client(w, "POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
    assert_true(run_until(w, sunk_three, 5));
    assert_null(w->srv.untrusted);
    conn_trust_revoke(t.held);
    /* The body half-applied is dropped; the others are strangers', oldest first. */
    assert_true(run_until(w, two_open, 5));
    assert_ptr_equal(w->srv.untrusted, t.ok);
    assert_ptr_equal(w->srv.untrusted_last, t.held);
    assert_int_equal(take(up, buf, sizeof buf), -1);
    assert_int_equal(t.gone, 0); /* the stream goes on */
    /* A head that passes the check trusts its connection again. */
    assert_int_equal(send(ok, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n", 29, 0), 29);
    t.ok = NULL;
    assert_true(run_until(w, has_ok, 5));
    assert_ptr_equal(w->srv.untrusted, t.held);
    close(up);
    close(fd);
    close(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_half_close_is_a_strangers_slot, setup_unix, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_client_gone_both_ways_is_found_at_its_eof, setup_tcp,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tcp_half_close_gets_the_rest_of_its_stream, setup_tcp,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_revoke, setup_unix, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
