/*
 * test_relay.c - the core relay (agent/core/relay.c) and its outlet
 * (agent/core/outlet.c) on real pipes, sockets and files in one process: the
 * splice path keeps every byte and knows whether the output ended a line;
 * the copy path (a socket) does too; line mode cuts long lines and ends an
 * unterminated one; a full outlet holds the drain (nothing blocks) and
 * relay_halt counts what is left; a broken outlet drains the pipe into the
 * void; outlet_same_file tells `2>&1` apart. Every wait is bounded by a loop
 * timer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/outlet.h"
#include "agent/core/relay.h"

#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct rig {
    struct ev_loop *loop;
    int in[2];     /* the child's side: in[1] is what it writes to */
    int out[2];    /* the agent's "stdout": out[1] is the outlet */
    struct outlet o;
    struct relay r;
    ev_timer bound;
    int timed_out;
};

static void on_bound(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    ((struct rig *)w->data)->timed_out = 1;
    ev_break(loop, EVBREAK_ALL);
}

static void rig_open(struct rig *g, int socket_out, int lines)
{
    memset(g, 0, sizeof *g);
    signal(SIGPIPE, SIG_IGN);
    g->loop = ev_default_loop(0);
    assert_int_equal(pipe2(g->in, O_CLOEXEC), 0);
    if (socket_out) assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g->out), 0);
    else assert_int_equal(pipe2(g->out, O_CLOEXEC), 0);
    /* The reader side of the "stdout" pipe: reading it must never block the test. */
    fcntl(g->out[0], F_SETFL, O_NONBLOCK);
    outlet_init(&g->o, g->out[1]);
    assert_int_equal(relay_start(&g->r, g->loop, g->in[0], &g->o, lines), 0);
    ev_timer_init(&g->bound, on_bound, 10., 0.);
    g->bound.data = g;
}

/* Drain what the pipe holds (the writer end closed first when eof). */
static void rig_drain(struct rig *g, int eof)
{
    if (eof) {
        close(g->in[1]);
        g->in[1] = -1;
    }
    ev_timer_start(g->loop, &g->bound);
    relay_drain(&g->r, 64 << 20);
    while (relay_draining(&g->r) && !g->timed_out) ev_run(g->loop, EVRUN_ONCE);
    ev_timer_stop(g->loop, &g->bound);
    assert_false(g->timed_out);
}

static size_t rig_read(struct rig *g, char *buf, size_t cap)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = read(g->out[0], buf + got, cap - got);
        if (n <= 0) return got;
        got += (size_t)n;
    }
}

static void rig_close(struct rig *g)
{
    relay_close(&g->r);
    if (g->in[1] >= 0) close(g->in[1]);
    close(g->out[0]);
    close(g->out[1]);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        assert_true(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

static void test_splice_keeps_bytes_and_line_state(void **state)
{
    (void)state;
    struct rig g;
    char buf[4096];
    rig_open(&g, 0, 0);
    assert_int_equal(g.r.mode, RELAY_SPLICE);
    assert_true(outlet_at_line_start(&g.o)); /* nothing written yet */
    write_all(g.in[1], "one\ntwo\npartial", 15);
    rig_drain(&g, 0);
    assert_int_equal(rig_read(&g, buf, sizeof buf), 15);
    assert_memory_equal(buf, "one\ntwo\npartial", 15);
    assert_false(outlet_at_line_start(&g.o));
    write_all(g.in[1], "!\n", 2);
    rig_drain(&g, 1);
    assert_int_equal(rig_read(&g, buf, sizeof buf), 2);
    assert_true(outlet_at_line_start(&g.o));
    assert_false(relay_live(&g.r)); /* EOF: no writer, nothing left */
    rig_close(&g);
}

static void test_splice_many_chunks(void **state)
{
    (void)state;
    struct rig g;
    static char in[3 << 20], out[3 << 20];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (char)(i * 7 + i / 4099);
    in[sizeof in - 1] = 'x';
    rig_open(&g, 0, 0);
    fcntl(g.in[1], F_SETFL, O_NONBLOCK);
    size_t sent = 0, got = 0;
    ev_timer_start(g.loop, &g.bound);
    while ((sent < sizeof in || got < sizeof in) && !g.timed_out) {
        ssize_t w = sent < sizeof in ? write(g.in[1], in + sent, sizeof in - sent) : 0;
        if (w > 0) sent += (size_t)w;
        ev_run(g.loop, EVRUN_NOWAIT);
        got += rig_read(&g, out + got, sizeof out - got);
    }
    ev_timer_stop(g.loop, &g.bound);
    assert_false(g.timed_out);
    assert_memory_equal(in, out, sizeof in);
    assert_false(outlet_at_line_start(&g.o));
    assert_int_equal(g.r.moved, sizeof in);
    rig_close(&g);
}

static void test_socket_copies_and_tracks_lines(void **state)
{
    (void)state;
    struct rig g;
    char buf[4096];
    rig_open(&g, 1, 0);
    assert_int_equal(g.o.kind, OUTLET_SOCKET);
    assert_int_equal(g.r.mode, RELAY_COPY);
    write_all(g.in[1], "sock\n", 5);
    rig_drain(&g, 1);
    assert_int_equal(rig_read(&g, buf, sizeof buf), 5);
    assert_memory_equal(buf, "sock\n", 5);
    assert_true(outlet_at_line_start(&g.o));
    rig_close(&g);
}

static void test_lines_cut_long_and_end_partial(void **state)
{
    (void)state;
    struct rig g;
    static char big[5000], buf[16384];
    memset(big, 'E', sizeof big);
    rig_open(&g, 0, 1);
    assert_int_equal(g.r.mode, RELAY_LINES);
    write_all(g.in[1], big, sizeof big);
    write_all(g.in[1], "\nshort\ntail", 11);
    rig_drain(&g, 1);
    size_t n = rig_read(&g, buf, sizeof buf);
    assert_int_equal(n, 4095 + 1 + 905 + 1 + 6 + 5);
    for (size_t i = 0; i < 4095; i++) assert_int_equal(buf[i], 'E');
    assert_int_equal(buf[4095], '\n');
    assert_int_equal(buf[4096 + 905], '\n');
    assert_memory_equal(buf + 4096 + 906, "short\ntail\n", 11);
    assert_true(outlet_at_line_start(&g.o));
    rig_close(&g);
}

static void test_full_outlet_holds_drain_and_halt_counts(void **state)
{
    (void)state;
    struct rig g;
    static char fill[1 << 16];
    rig_open(&g, 0, 0);
    fcntl(g.out[1], F_SETFL, O_NONBLOCK);
    while (write(g.out[1], fill, sizeof fill) > 0) {
    }
    fcntl(g.out[1], F_SETFL, 0); /* the outlet's fd stays blocking, as the agent's stdout is */
    write_all(g.in[1], "stuck", 5);
    ev_timer_set(&g.bound, 0.2, 0.);
    ev_timer_start(g.loop, &g.bound);
    relay_drain(&g.r, 1 << 20);
    while (relay_draining(&g.r) && !g.timed_out) ev_run(g.loop, EVRUN_ONCE);
    assert_true(g.timed_out); /* the drain waited, the loop kept running */
    assert_int_equal(relay_halt(&g.r), 5);
    assert_true(relay_writers(&g.r));
    rig_close(&g);
}

static void test_broken_outlet_discards(void **state)
{
    (void)state;
    struct rig g;
    static char data[1 << 16];
    int left = -1;
    rig_open(&g, 0, 0);
    close(g.out[0]);
    g.out[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    write_all(g.in[1], data, sizeof data);
    rig_drain(&g, 0);
    assert_true(g.o.broken);
    assert_int_equal(ioctl(g.r.in_fd, FIONREAD, &left), 0);
    assert_int_equal(left, 0); /* the child can keep writing */
    rig_close(&g);
}

static void test_same_file(void **state)
{
    (void)state;
    int p[2], q[2];
    char path[] = "/tmp/sa-test-relay-XXXXXX";
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(q), 0);
    int d = dup(p[1]);
    assert_true(outlet_same_file(p[1], d));
    assert_false(outlet_same_file(p[1], q[1]));
    int f = mkstemp(path);
    int f2 = open(path, O_WRONLY);
    assert_true(outlet_same_file(f, f2));
    assert_false(outlet_same_file(f, p[1]));
    unlink(path);
    close(f);
    close(f2);
    close(d);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splice_keeps_bytes_and_line_state),
        cmocka_unit_test(test_splice_many_chunks),
        cmocka_unit_test(test_socket_copies_and_tracks_lines),
        cmocka_unit_test(test_lines_cut_long_and_end_partial),
        cmocka_unit_test(test_full_outlet_holds_drain_and_halt_counts),
        cmocka_unit_test(test_broken_outlet_discards),
        cmocka_unit_test(test_same_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
