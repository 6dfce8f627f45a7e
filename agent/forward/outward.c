/*
 * outward.c - the forwarder's outward addresses (see forward/outward.h).
 */
#include "agent/forward/outward.h"
#include "agent/core/err.h"
#include "agent/forward/nl.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* rtnetlink's address messages (linux/if_addr.h, rtnetlink.h). */
struct nl_ifaddr {
    uint8_t family, prefixlen, flags, scope;
    uint32_t index;
};
#define NL_NEWADDR 20
#define NL_GETADDR 22
#define NL_IFA_ADDRESS 1
#define NL_IFA_LOCAL 2
#define NL_TENTATIVE 0x40  /* IFA_F_TENTATIVE: its duplicate check runs */
#define NL_DADFAILED 0x08
#define NL_SCOPE_HOST 254  /* RT_SCOPE_HOST: loopback's own */

/* One message of an address dump: its address, when it is usable and
 * settled (not still in its duplicate check, which cannot be bound, nor
 * failed it). */
static void on_addr(void *ctx, unsigned type, const char *p, size_t n)
{
    struct outward *o = ctx;
    struct nl_ifaddr m;
    size_t at = NL_ALIGN(sizeof m);
    if (type != NL_NEWADDR || n < at) return;
    memcpy(&m, p, sizeof m);
    if (m.scope == NL_SCOPE_HOST || (m.flags & (NL_TENTATIVE | NL_DADFAILED))) return;
    size_t need = m.family == AF_INET ? 4 : 16;
    if (m.family != AF_INET && m.family != AF_INET6) return;
    /* IPv4: ADDRESS is a point-to-point link's peer, LOCAL the address. */
    const void *a = nl_attr(p + at, n - at, NL_IFA_LOCAL, need);
    if (!a) a = nl_attr(p + at, n - at, NL_IFA_ADDRESS, need);
    if (a) add(o, m.family, a);
}

void outward_dump_part(struct outward *o, const char *p, size_t n)
{
    (void)nl_walk(p, n, on_addr, o);
    settle(o);
}

int outward_interfaces(struct outward *o, char *err)
{
    struct {
        struct nl_hdr h;
        struct nl_ifaddr m;
    } req;
    char why[ERR_LEN];
    memset(&req, 0, sizeof req);
    req.h.len = sizeof req;
    req.h.type = NL_GETADDR;
    req.m.family = AF_UNSPEC;
    memset(o, 0, sizeof *o);
    int r = nl_dump(NL_ROUTE, &req, sizeof req, on_addr, o, why);
    settle(o);
    if (r < 0) err_set(err, "the interfaces' addresses (rtnetlink): %s", why);
    return r;
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
