/*
 * test_scan.c - the listening sockets (agent/forward/scan.c): the
 * /proc/net/tcp and tcp6 reader (both families, other states, refused
 * lines, the header, lines split across reads), sock_diag's messages, and
 * this machine's sockets both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/forward/scan.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TAIL " 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0"

/* An address as the kernel prints it: each 32-bit word as it lies in
 * memory, printed as a host-order number. */
static void hex_addr(char *out, const unsigned char *a, int words)
{
    for (int i = 0; i < words; i++) {
        unsigned w;
        memcpy(&w, a + 4 * i, 4);
        sprintf(out + 8 * i, "%08X", w);
    }
}

static int line_for(char *out, int family, const char *addr, unsigned port, unsigned state, struct scan_sock *got)
{
    unsigned char a[16] = {0};
    char hex[33], zero[33];
    int words = family == AF_INET6 ? 4 : 1;
    assert_int_equal(inet_pton(family, addr, a), 1);
    hex_addr(hex, a, words);
    memset(zero, '0', 8 * (size_t)words);
    zero[8 * words] = '\0';
    sprintf(out, "   3: %s:%04X %s:0000 %02X" TAIL, hex, port, zero, state);
    const char *why = NULL;
    int r = scan_line(out, strlen(out), family, got, &why);
    if (r >= 0) {
        assert_int_equal(got->family, family);
        assert_memory_equal(got->addr, a, words * 4);
        assert_int_equal(got->port, port);
    } else {
        assert_non_null(why);
    }
    return r;
}

static void test_scan_listening_and_other_states(void **st)
{
    (void)st;
    char line[512];
    struct scan_sock s;
    assert_int_equal(line_for(line, AF_INET, "127.0.0.1", 8000, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET, "10.1.2.3", 65535, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET, "0.0.0.0", 22, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET, "127.0.0.1", 8000, 0x01, &s), 0); /* ESTABLISHED */
    assert_int_equal(line_for(line, AF_INET, "127.0.0.1", 8000, 0x06, &s), 0); /* TIME_WAIT */
    assert_int_equal(line_for(line, AF_INET6, "::1", 443, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET6, "fd00::1:2", 1, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET6, "::ffff:127.0.0.1", 80, 0x0A, &s), 1);
    assert_int_equal(line_for(line, AF_INET6, "::", 80, 0x08, &s), 0);
    /* The kernel's own print of 127.0.0.1:8000 on a little-endian CPU. */
    const unsigned one = 1;
    if (*(const unsigned char *)&one == 1) {
        const char *k = "   0: 0100007F:1F40 00000000:0000 0A" TAIL;
        const char *why;
        assert_int_equal(scan_line(k, strlen(k), AF_INET, &s, &why), 1);
        assert_int_equal(s.port, 8000);
        assert_memory_equal(s.addr, "\x7f\0\0\1", 4);
    }
}

static void test_scan_refuses_what_is_not_a_socket(void **st)
{
    (void)st;
    struct scan_sock s;
    const char *why;
    const char *bad4[] = {
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
        "",
        "   0:",
        "   0: 0100007F:1F40",
        "   0: 0100007F:1F40 00000000:0000",
        "   0: 0100007F:1F40 00000000:0000 0",
        "   0: 0100007F:1F40 00000000:0000 0AB",
        "   0: 0100007G:1F40 00000000:0000 0A",
        "   0: 0100007F1F40 00000000:0000 0A",
        "   0: 0100007F:1F4 00000000:0000 0A",
        "   0 0100007F:1F40 00000000:0000 0A",
        "   x: 0100007F:1F40 00000000:0000 0A",
        "   0:0100007F:1F40 00000000:0000 0A",
        "   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A",
        "12345678901: 0100007F:1F40 00000000:0000 0A",
        NULL};
    for (int i = 0; bad4[i]; i++) {
        why = NULL;
        assert_int_equal(scan_line(bad4[i], strlen(bad4[i]), AF_INET, &s, &why), -1);
        assert_non_null(why);
    }
    const char *bad6 = "   0: 0100007F:1F40 00000000:0000 0A" TAIL;
    assert_int_equal(scan_line(bad6, strlen(bad6), AF_INET6, &s, &why), -1);
    /* A line ends at its length, not at a NUL. */
    const char *cut = "   0: 0100007F:1F40 00000000:0000 0A";
    assert_int_equal(scan_line(cut, strlen(cut) - 1, AF_INET, &s, &why), -1);
    assert_int_equal(scan_line(cut, strlen(cut), AF_INET, &s, &why), 1);
}

struct seen {
    int n;
    unsigned ports[8];
    unsigned want; /* a port looked for */
    int found;
};

static void collect(void *ctx, const struct scan_sock *s)
{
    struct seen *x = ctx;
    if (x->n < 8) x->ports[x->n] = s->port;
    x->n++;
    x->found |= s->port == x->want && s->family == AF_INET && !memcmp(s->addr, "\x7f\0\0\1", 4);
}

static void test_scan_feed_in_pieces(void **st)
{
    (void)st;
    char table[4096], l1[512], l2[512], l3[512];
    struct scan_sock s;
    line_for(l1, AF_INET, "127.0.0.1", 8000, 0x0A, &s);
    line_for(l2, AF_INET, "127.0.0.1", 9000, 0x01, &s);
    line_for(l3, AF_INET, "10.0.0.1", 7000, 0x0A, &s);
    /* The header is skipped, whatever it says; a bad line is counted. */
    snprintf(table, sizeof table, "header: 0100007F:1F40 00000000:0000 0A\n%s\n%s\ngarbage\n%s\n", l1, l2, l3);
    for (size_t step = 1; step < strlen(table); step += 7) {
        struct seen x = {0};
        struct scan sc;
        scan_init(&sc, AF_INET, collect, &x);
        for (size_t at = 0; at < strlen(table); at += step) {
            size_t n = strlen(table) - at < step ? strlen(table) - at : step;
            scan_feed(&sc, table + at, n);
        }
        assert_int_equal(x.n, 2);
        assert_int_equal(x.ports[0], 8000);
        assert_int_equal(x.ports[1], 7000);
        assert_int_equal(sc.lines, 5);
        assert_int_equal(sc.bad, 1);
        assert_string_equal(sc.bad_why, "no slot number");
        scan_free(&sc);
    }
    /* A line past SCAN_LINE_MAX is refused, not held. */
    struct seen x = {0};
    struct scan sc;
    char big[2 * SCAN_LINE_MAX];
    memset(big, ' ', sizeof big);
    scan_init(&sc, AF_INET, collect, &x);
    scan_feed(&sc, "h\n", 2);
    scan_feed(&sc, big, sizeof big);
    scan_feed(&sc, "\n", 1);
    scan_feed(&sc, l1, strlen(l1));
    scan_feed(&sc, "\n", 1);
    assert_int_equal(x.n, 1);
    assert_int_equal(sc.bad, 1);
    assert_string_equal(sc.bad_why, "line too long");
    scan_free(&sc);
}

static void test_scan_this_machine(void **st)
{
    (void)st;
    /* A socket of our own, listening on loopback: the table lists it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    struct seen x = {.want = ntohs(a.sin_port)};
    char err[256];
    assert_int_equal(scan_table(AF_INET, collect, &x, err), 0);
    assert_true(x.found);
    assert_true(scan_table(AF_INET6, collect, &x, err) >= 0);
    /* sock_diag says the same, and lists listening sockets only. */
    struct seen d = {.want = ntohs(a.sin_port)};
    assert_int_equal(scan_diag(AF_INET, collect, &d, err), 0);
    assert_true(d.found);
    assert_true(d.n <= x.n);
    close(fd);
}

/* A sock_diag answer as the kernel sends it: a header, struct
 * inet_diag_msg (72 bytes), then NLMSG_DONE. */
static size_t diag_message(char *out, int family, const char *addr, unsigned port, int state)
{
    memset(out, 0, 128);
    uint32_t len = 16 + 72;
    uint16_t type = 20, sport = htons((uint16_t)port);
    memcpy(out, &len, 4);
    memcpy(out + 4, &type, 2);
    out[16] = (char)family;
    out[17] = (char)state;
    memcpy(out + 20, &sport, 2);
    inet_pton(family, addr, out + 24);
    uint32_t done_len = 16 + 4;
    uint16_t done = 3;
    memcpy(out + len, &done_len, 4);
    memcpy(out + len + 4, &done, 2);
    return len + done_len;
}

static void test_scan_diag_messages(void **st)
{
    (void)st;
    char m[128];
    struct seen x = {.want = 8000};
    size_t n = diag_message(m, AF_INET, "127.0.0.1", 8000, 10);
    scan_diag_part(m, n, AF_INET, collect, &x);
    assert_int_equal(x.n, 1);
    assert_true(x.found);
    /* Another family's, another state's, and cut ones are not sockets. */
    x = (struct seen){0};
    scan_diag_part(m, n, AF_INET6, collect, &x);
    n = diag_message(m, AF_INET, "127.0.0.1", 8000, 1);
    scan_diag_part(m, n, AF_INET, collect, &x);
    n = diag_message(m, AF_INET, "127.0.0.1", 8000, 10);
    for (size_t cut = 0; cut < 16 + 72; cut++) scan_diag_part(m, cut, AF_INET, collect, &x);
    assert_int_equal(x.n, 0);
    n = diag_message(m, AF_INET6, "::1", 443, 10);
    x = (struct seen){0};
    scan_diag_part(m, n, AF_INET6, collect, &x);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.ports[0], 443);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_listening_and_other_states),
        cmocka_unit_test(test_scan_refuses_what_is_not_a_socket),
        cmocka_unit_test(test_scan_feed_in_pieces),
        cmocka_unit_test(test_scan_this_machine),
        cmocka_unit_test(test_scan_diag_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
