/*
 * scan.c - the listening sockets by sock_diag, or from /proc/net/tcp and
 * /proc/net/tcp6 (see forward/scan.h).
 *
 * A line of a table, as the kernel prints it (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c):
 *
 *   "%4d: %08X:%04X %08X:%04X %02X ..."           tcp
 *   "%4d: %08X%08X%08X%08X:%04X %08X...:%04X %02X ..."  tcp6
 *
 * slot, local address:port, remote address:port, state, then fields this
 * file does not read. Each %08X is one 32-bit word of the address as it
 * lies in memory, printed as a host-order number: stored back in host
 * order, the words are the address's bytes in network order again, on any
 * CPU. The port is printed as a number.
 */
#include "agent/forward/scan.h"
#include "agent/core/err.h"
#include "agent/core/num.h"
#include "agent/forward/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_LISTEN 0x0A   /* include/net/tcp_states.h */
#define READ_CHUNK 16384

/* n hex digits at *p into *v; advances *p. */
static int hex_word(const char **p, const char *end, int n, uint32_t *v)
{
    uint32_t x = 0;
    if (end - *p < n) return -1;
    for (int i = 0; i < n; i++) {
        int d = num_hexval((unsigned char)(*p)[i]);
        if (d < 0) return -1;
        x = x << 4 | (uint32_t)d;
    }
    *p += n;
    *v = x;
    return 0;
}

/* ADDR:PORT, ADDR being words 32-bit words; into addr (may be NULL). */
static int endpoint(const char **p, const char *end, int words, unsigned char *addr, uint16_t *port)
{
    uint32_t w, pt;
    for (int i = 0; i < words; i++) {
        if (hex_word(p, end, 8, &w) < 0) return -1;
        if (addr) memcpy(addr + 4 * i, &w, 4); /* host order: the bytes as they were */
    }
    if (*p >= end || **p != ':') return -1;
    (*p)++;
    if (hex_word(p, end, 4, &pt) < 0) return -1;
    if (port) *port = (uint16_t)pt;
    return 0;
}

static int spaces(const char **p, const char *end)
{
    const char *s = *p;
    while (*p < end && **p == ' ') (*p)++;
    return *p > s ? 0 : -1;
}

int scan_line(const char *p, size_t n, int family, struct scan_sock *out, const char **why)
{
    const char *end = p + n;
    int words = family == AF_INET6 ? 4 : 1;
    uint32_t st;
    memset(out, 0, sizeof *out);
    out->family = family;
    while (p < end && *p == ' ') p++;
    const char *slot = p;
    while (p < end && *p >= '0' && *p <= '9' && p - slot < 10) p++;
    if (p == slot || p >= end || *p != ':') {
        *why = "no slot number";
        return -1;
    }
    p++;
    if (spaces(&p, end) < 0 || endpoint(&p, end, words, out->addr, &out->port) < 0) {
        *why = "no local address";
        return -1;
    }
    if (spaces(&p, end) < 0 || endpoint(&p, end, words, NULL, NULL) < 0) {
        *why = "no remote address";
        return -1;
    }
    if (spaces(&p, end) < 0 || hex_word(&p, end, 2, &st) < 0 || (p < end && *p != ' ')) {
        *why = "no state";
        return -1;
    }
    return st == TCP_LISTEN;
}

static int on_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct scan *s = ctx;
    struct scan_sock sk;
    const char *why = "line too long";
    if (s->lines++ == 0) return 0; /* the header */
    int r = kind == LSPLIT_LINE ? scan_line(p, n, s->family, &sk, &why) : -1;
    if (r < 0) {
        if (!s->bad++) s->bad_why = why;
        return 0;
    }
    if (r == 1) s->fn(s->ctx, &sk);
    return 0;
}

void scan_init(struct scan *s, int family, scan_fn fn, void *ctx)
{
    memset(s, 0, sizeof *s);
    lsplit_init(&s->split, SCAN_LINE_MAX);
    s->family = family;
    s->fn = fn;
    s->ctx = ctx;
}

void scan_feed(struct scan *s, const char *p, size_t n) { lsplit_feed(&s->split, p, n, on_line, s); }

void scan_free(struct scan *s) { lsplit_free(&s->split); }

/* ---- sock_diag (linux/inet_diag.h, sock_diag.h) ---- */

struct diag_id {          /* struct inet_diag_sockid */
    uint16_t sport, dport; /* network byte order */
    uint32_t src[4], dst[4];
    uint32_t ifindex, cookie[2];
};
struct diag_req {         /* struct inet_diag_req_v2 */
    uint8_t family, protocol, ext, pad;
    uint32_t states;
    struct diag_id id;
};
struct diag_msg {         /* struct inet_diag_msg */
    uint8_t family, state, timer, retrans;
    struct diag_id id;
    uint32_t expires, rqueue, wqueue, uid, inode;
};
#define SOCK_DIAG_BY_FAMILY 20
#define TCP_IPPROTO 6

struct diag_walk {
    int family;
    scan_fn fn;
    void *ctx;
};

static void on_diag(void *ctx, unsigned type, const char *p, size_t n)
{
    struct diag_walk *w = ctx;
    struct diag_msg m;
    struct scan_sock s;
    if (type != SOCK_DIAG_BY_FAMILY || n < sizeof m) return;
    memcpy(&m, p, sizeof m);
    if (m.family != w->family || m.state != TCP_LISTEN) return;
    memset(&s, 0, sizeof s);
    s.family = m.family;
    s.port = ntohs(m.id.sport);
    memcpy(s.addr, m.id.src, m.family == AF_INET6 ? 16 : 4);
    w->fn(w->ctx, &s);
}

void scan_diag_part(const char *p, size_t n, int family, scan_fn fn, void *ctx)
{
    struct diag_walk w = {family, fn, ctx};
    (void)nl_walk(p, n, on_diag, &w);
}

int scan_diag(int family, scan_fn fn, void *ctx, char *err)
{
    struct {
        struct nl_hdr h;
        struct diag_req r;
    } req;
    struct diag_walk w = {family, fn, ctx};
    char why[ERR_LEN];
    memset(&req, 0, sizeof req);
    req.h.len = sizeof req;
    req.h.type = SOCK_DIAG_BY_FAMILY;
    req.r.family = (uint8_t)family;
    req.r.protocol = TCP_IPPROTO;
    req.r.states = 1u << TCP_LISTEN;
    if (nl_dump(NL_SOCK_DIAG, &req, sizeof req, on_diag, &w, why) == 0) return 0;
    err_set(err, "sock_diag: %s", why);
    return -1;
}

/* ---- the tables ---- */

long scan_table(int family, scan_fn fn, void *ctx, char *err)
{
    const char *path = family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp";
    char chunk[READ_CHUNK];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        err_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct scan s;
    scan_init(&s, family, fn, ctx);
    size_t total = 0;
    long r = 0;
    for (;;) {
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            err_set(err, "%s: %s", path, strerror(errno));
            r = -1;
            break;
        }
        if (got == 0 || (total += (size_t)got) > SCAN_MAX_BYTES) break;
        scan_feed(&s, chunk, (size_t)got);
    }
    if (r == 0) r = (long)s.bad;
    if (s.bad && err) err_set(err, "%s: %lu of %lu lines not understood (%s)", path, s.bad, s.lines - 1, s.bad_why);
    scan_free(&s);
    close(fd);
    return r;
}
