/*
 * outward.h - the addresses the forwarder listens on (README "Port
 * forwarding"): the list SANDBOX_AGENT_FORWARD_ADDRS gives, or else every
 * address of the network namespace's interfaces but loopback ones.
 *
 * Owns the list's grammar (numeric IPv4 and IPv6 addresses), which
 * addresses may be outward (not loopback, not the unspecified address, not
 * multicast, not IPv6 link-local: a client would need the interface's name
 * to reach one), reading the
 * interfaces' addresses (an rtnetlink dump; an address still in its
 * duplicate check is not one yet) and comparing two lists, so a change can
 * be logged. A list is kept sorted and without duplicates.
 */
#ifndef SA_FORWARD_OUTWARD_H
#define SA_FORWARD_OUTWARD_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#define OUTWARD_MAX 32                               /* addresses at most; more are left out */
#define OUTWARD_TEXT INET6_ADDRSTRLEN

struct outward_addr {
    struct sockaddr_storage ss; /* port 0, zero past len */
    socklen_t len;
    char text[OUTWARD_TEXT];
};

struct outward {
    size_t n;
    size_t dropped;             /* addresses past OUTWARD_MAX */
    struct outward_addr a[OUTWARD_MAX];
};

/* Parse a comma-separated list ("10.0.0.2,fd00::2"). Returns
 * 0, or -1 with a message in err naming the entry. */
int outward_parse(const char *list, struct outward *o, char *err);

/* Every outward address of the interfaces now. Returns 0, or -1 with a
 * message in err. */
int outward_interfaces(struct outward *o, char *err);

/* Add the addresses of one part of an rtnetlink address dump (p, n
 * bytes) to o, kept sorted. What outward_interfaces reads, for the fuzzer. */
void outward_dump_part(struct outward *o, const char *p, size_t n);

/* 1 when a and b hold the same addresses. */
int outward_equal(const struct outward *a, const struct outward *b);

/* "10.0.0.2, fd00::2" (or "none") into buf of size n, cut to fit. */
void outward_text(const struct outward *o, char *buf, size_t n);

#endif
