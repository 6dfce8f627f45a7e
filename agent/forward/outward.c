/*
 * outward.c - the forwarder's outward addresses (see forward/outward.h).
 */
#include "agent/forward/outward.h"
#include "agent/core/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* May the forwarder listen on this address? Not loopback, not the
 * unspecified address (it would take the loopback port too), not
 * multicast or broadcast, not an IPv4 address dressed as IPv6, not an IPv6
 * link-local one (a client would need the interface's name to reach it). */
static int usable(int family, const void *bytes)
{
    if (family == AF_INET) {
        uint32_t a;
        memcpy(&a, bytes, 4);
        a = ntohl(a);
        return a != INADDR_ANY && a != INADDR_BROADCAST && (a >> 24) != 127 && !IN_MULTICAST(a);
    }
    const struct in6_addr *a = bytes;
    return !IN6_IS_ADDR_UNSPECIFIED(a) && !IN6_IS_ADDR_LOOPBACK(a) && !IN6_IS_ADDR_MULTICAST(a) &&
           !IN6_IS_ADDR_V4MAPPED(a) && !IN6_IS_ADDR_V4COMPAT(a) && !IN6_IS_ADDR_LINKLOCAL(a);
}

/* The address's own bytes (in ss at its family's place). */
static const void *bytes_of(const struct outward_addr *x)
{
    if (x->ss.ss_family == AF_INET) return &((const struct sockaddr_in *)(const void *)&x->ss)->sin_addr;
    return &((const struct sockaddr_in6 *)(const void *)&x->ss)->sin6_addr;
}

/* By family (IPv4 first), then by address. */
static int cmp_addr(const void *pa, const void *pb)
{
    const struct outward_addr *a = pa, *b = pb;
    if (a->ss.ss_family != b->ss.ss_family) return a->ss.ss_family == AF_INET ? -1 : 1;
    return memcmp(bytes_of(a), bytes_of(b), a->ss.ss_family == AF_INET ? 4 : 16);
}

/* Sorted, duplicates gone. */
static void settle(struct outward *o)
{
    size_t j = 0;
    qsort(o->a, o->n, sizeof o->a[0], cmp_addr);
    for (size_t i = 0; i < o->n; i++)
        if (j == 0 || cmp_addr(&o->a[j - 1], &o->a[i])) o->a[j++] = o->a[i];
    o->n = j;
}

/* Append the address family/bytes when it is usable (1), or count it
 * dropped past the bound; 0 when it is not usable. */
static int add(struct outward *o, int family, const void *bytes)
{
    if (!usable(family, bytes)) return 0;
    if (o->n == OUTWARD_MAX) {
        o->dropped++;
        return 1;
    }
    struct outward_addr *x = &o->a[o->n++];
    memset(x, 0, sizeof *x);
    x->ss.ss_family = (sa_family_t)family;
    x->len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    memcpy((void *)bytes_of(x), bytes, family == AF_INET ? 4 : 16);
    inet_ntop(family, bytes, x->text, sizeof x->text);
    return 1;
}

/* One entry of the list: a numeric IPv4 or IPv6 address. */
static int parse_one(const char *s, size_t n, struct outward *o, char *err)
{
    char e[OUTWARD_TEXT];
    unsigned char a[16];
    size_t l = n < sizeof e ? n : sizeof e - 1;
    memcpy(e, s, l);
    e[l] = '\0';
    int family = l < n                          ? 0 /* longer than any address */
                 : inet_pton(AF_INET, e, a) == 1  ? AF_INET
                 : inet_pton(AF_INET6, e, a) == 1 ? AF_INET6
                                                  : 0;
    if (!family) {
        err_set(err, "'%s' is not a numeric IPv4 or IPv6 address", e);
        return -1;
    }
    if (!add(o, family, a)) {
        err_set(err, "'%s': loopback, unspecified, multicast and IPv6 link-local addresses are not outward", e);
        return -1;
    }
    if (o->dropped) {
        err_set(err, "more than %d addresses", OUTWARD_MAX);
        return -1;
    }
    return 0;
}

int outward_parse(const char *list, struct outward *o, char *err)
{
    memset(o, 0, sizeof *o);
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (parse_one(p, n, o, err) < 0) return -1;
        if (!comma) break;
        p = comma + 1;
    }
    settle(o);
    return 0;
}

/* rtnetlink's ABI (linux/netlink.h, rtnetlink.h, if_addr.h): musl ships no
 * kernel headers. */
struct nl_hdr {
    uint32_t len;
    uint16_t type, flags;
    uint32_t seq, pid;
};
struct nl_ifaddr {
    uint8_t family, prefixlen, flags, scope;
    uint32_t index;
};
struct nl_attr {
    uint16_t len, type;
};
#define NL_ALIGN(n) (((n) + 3u) & ~3u)
#define NL_ERROR 2
#define NL_DONE 3
#define NL_NEWADDR 20
#define NL_GETADDR 22
#define NL_REQUEST_DUMP 0x301   /* NLM_F_REQUEST | NLM_F_DUMP */
#define NL_IFA_ADDRESS 1
#define NL_IFA_LOCAL 2
#define NL_TENTATIVE 0x40       /* IFA_F_TENTATIVE: its duplicate check runs */
#define NL_DADFAILED 0x08
#define NL_SCOPE_HOST 254       /* RT_SCOPE_HOST: loopback's own */

/* One RTM_NEWADDR message (n bytes, its header's length checked): its
 * address, when it is usable and settled (not still in its duplicate
 * check, which cannot be bound, nor failed it). */
static void from_message(struct outward *o, const char *p, uint32_t n)
{
    struct nl_ifaddr m;
    const char *local = NULL, *address = NULL;
    uint32_t at = NL_ALIGN(sizeof(struct nl_hdr)) + NL_ALIGN(sizeof m);
    if (n < at) return;
    memcpy(&m, p + sizeof(struct nl_hdr), sizeof m);
    if (m.scope == NL_SCOPE_HOST || (m.flags & (NL_TENTATIVE | NL_DADFAILED))) return;
    size_t need = m.family == AF_INET ? 4 : m.family == AF_INET6 ? 16 : 0;
    while (need && n - at >= sizeof(struct nl_attr)) {
        struct nl_attr a;
        memcpy(&a, p + at, sizeof a);
        if (a.len < sizeof a || a.len > n - at) return;
        if (a.len - sizeof a >= need && a.type == NL_IFA_LOCAL) local = p + at + sizeof a;
        if (a.len - sizeof a >= need && a.type == NL_IFA_ADDRESS) address = p + at + sizeof a;
        at += NL_ALIGN(a.len);
        if (at > n) break;
    }
    if (local) address = local; /* IPv4: ADDRESS is a point-to-point link's peer */
    if (address) add(o, m.family, address);
}

/* The messages of one read; 1 at the dump's end, -1 (errno) on an error. */
static int from_part(struct outward *o, const char *p, size_t n)
{
    struct nl_hdr h;
    for (size_t at = 0; n - at >= sizeof h; at += NL_ALIGN(h.len)) {
        memcpy(&h, p + at, sizeof h);
        if (h.len < sizeof h || h.len > n - at) break;
        if (h.type == NL_DONE) return 1;
        if (h.type == NL_ERROR) {
            int32_t e = 0;
            if (h.len >= sizeof h + sizeof e) memcpy(&e, p + at + sizeof h, sizeof e);
            errno = e < 0 ? -e : EPROTO;
            return -1;
        }
        if (h.type == NL_NEWADDR) from_message(o, p + at, h.len);
        if (NL_ALIGN(h.len) >= n - at) break;
    }
    return 0;
}

/* A dump of every address of the namespace (RTM_GETADDR), read as it
 * comes: the kernel makes each part of a dump when it is read, so no read
 * waits (MSG_DONTWAIT keeps it so). */
int outward_interfaces(struct outward *o, char *err)
{
    static char part[32768]; /* the most one part of a dump takes */
    struct {
        struct nl_hdr h;
        struct nl_ifaddr m;
    } req;
    memset(&req, 0, sizeof req);
    req.h.len = sizeof req;
    req.h.type = NL_GETADDR;
    req.h.flags = NL_REQUEST_DUMP;
    req.h.seq = 1;
    req.m.family = AF_UNSPEC;
    memset(o, 0, sizeof *o);
    int r = -1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0 /* NETLINK_ROUTE */);
    if (fd >= 0 && send(fd, &req, sizeof req, 0) == (ssize_t)sizeof req) {
        for (r = 0; r == 0;) {
            ssize_t n = recv(fd, part, sizeof part, MSG_DONTWAIT | MSG_TRUNC);
            if (n < 0 && errno == EINTR) continue;
            if (n > (ssize_t)sizeof part) errno = EMSGSIZE;
            r = n < 0 || n > (ssize_t)sizeof part ? -1 : from_part(o, part, (size_t)n);
        }
    }
    if (r < 0) err_set(err, "the interfaces' addresses (netlink): %s", strerror(errno));
    if (fd >= 0) close(fd);
    settle(o);
    return r < 0 ? -1 : 0;
}

int outward_equal(const struct outward *a, const struct outward *b)
{
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (cmp_addr(&a->a[i], &b->a[i])) return 0;
    return 1;
}

void outward_text(const struct outward *o, char *buf, size_t n)
{
    size_t at = 0;
    if (!n) return;
    buf[0] = '\0';
    if (!o->n) snprintf(buf, n, "none");
    for (size_t i = 0; i < o->n && at + 1 < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", o->a[i].text);
        if (w < 0) break;
        at += (size_t)w;
    }
}
