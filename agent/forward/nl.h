/*
 * nl.h - netlink dumps, for the forwarder's two questions to the kernel:
 * the interfaces' addresses (rtnetlink, forward/outward.c) and the
 * listening TCP sockets (sock_diag, forward/scan.c).
 *
 * Owns the ABI's few structures (musl ships no kernel headers), sending a
 * dump request and reading its parts, and walking the messages of a part
 * with every length checked against what was read: a message or an
 * attribute that does not fit ends the walk, nothing is read past a part.
 */
#ifndef SA_FORWARD_NL_H
#define SA_FORWARD_NL_H

#include <stddef.h>
#include <stdint.h>

struct nl_hdr {       /* struct nlmsghdr */
    uint32_t len;
    uint16_t type, flags;
    uint32_t seq, pid;
};

struct nl_attr {      /* struct rtattr */
    uint16_t len, type;
};

#define NL_ALIGN(n) (((n) + 3u) & ~3u)
#define NL_ROUTE 0         /* NETLINK_ROUTE */
#define NL_SOCK_DIAG 4     /* NETLINK_SOCK_DIAG */
#define NL_PART_MAX 32768  /* the most one part of a dump takes */

/* One message: its type and its payload (after the header), n bytes. */
typedef void (*nl_msg_fn)(void *ctx, unsigned type, const char *p, size_t n);

/* Walk the messages of one part of a dump (p, n bytes), each to fn.
 * Returns 1 at the dump's end (NLMSG_DONE), -1 with errno for an error
 * message, else 0 (more parts to come). Pure. */
int nl_walk(const char *p, size_t n, nl_msg_fn fn, void *ctx);

/* The attribute of type in p[0..n) (a message's attributes) with at least
 * need bytes of payload; NULL when there is none. */
const void *nl_attr(const char *p, size_t n, unsigned type, size_t need);

/* Send req (len bytes: the header's type and length set; the dump flags
 * are set here) on a new socket of protocol proto and walk every part of
 * the answer. No read waits: the kernel makes each part as the one before
 * is read. Returns 0, or -1 with a message in err. */
int nl_dump(int proto, void *req, size_t len, nl_msg_fn fn, void *ctx, char *err);

#endif
