/*
 * scan.h - the listening TCP sockets of the agent's network namespace
 * (README "Port forwarding"): asked of sock_diag, or read from
 * /proc/net/tcp and /proc/net/tcp6 where the kernel has no inet_diag.
 *
 * sock_diag walks the listening sockets only (a poll costs what they are,
 * 35 us here, whatever the connections); the tables list every socket and
 * cost about 9 us each to print (35 ms a poll with 4,000 connections open).
 *
 * Owns both answers' grammar: a sock_diag message, and a table's line (a
 * socket, of which only the local address, port and state are read, the
 * rest being the kernel's). The parsers are pure and fuzzed
 * (tests/fuzz/fuzz_forward_scan.c); a line that is not of the kernel's
 * shape is refused, never guessed at, and read in bounded memory.
 */
#ifndef SA_FORWARD_SCAN_H
#define SA_FORWARD_SCAN_H

#include "agent/core/lsplit.h"

#include <stddef.h>
#include <stdint.h>

/* A table line is about 150 bytes (tcp6: 178); longer ones are refused. */
#define SCAN_LINE_MAX 512

struct scan_sock {
    int family;              /* AF_INET or AF_INET6 */
    unsigned char addr[16];  /* network byte order; the first 4 for AF_INET */
    uint16_t port;
};

/* One line of the table of family (AF_INET: /proc/net/tcp, AF_INET6:
 * tcp6), without its newline. Returns 1 with *out for a socket in LISTEN,
 * 0 for a socket in any other state, -1 for anything else (the header
 * line, a malformed one) with *why a fixed text. */
int scan_line(const char *p, size_t n, int family, struct scan_sock *out, const char **why);

typedef void (*scan_fn)(void *ctx, const struct scan_sock *s);

/* A table read in pieces: the first line (the header) is skipped, every
 * other one parsed; fn gets each listening socket. */
struct scan {
    struct lsplit split;
    int family;
    unsigned long lines, bad;  /* lines after the header, and of them refused */
    const char *bad_why;       /* the first refusal's reason */
    scan_fn fn;
    void *ctx;
};

void scan_init(struct scan *s, int family, scan_fn fn, void *ctx);
void scan_feed(struct scan *s, const char *p, size_t n);
void scan_free(struct scan *s);

/* The listening sockets of family by sock_diag, each to fn. Returns 0, or
 * -1 with a message in err (no inet_diag here: read the tables). */
int scan_diag(int family, scan_fn fn, void *ctx, char *err);

/* One part of a sock_diag answer (p, n bytes), each listening socket of
 * family to fn. What scan_diag reads, for the fuzzer. Pure. */
void scan_diag_part(const char *p, size_t n, int family, scan_fn fn, void *ctx);

/* Read the table of family whole (at most SCAN_MAX_BYTES of it) through a
 * struct scan. A table that does not exist (no IPv6) is empty. Returns the
 * number of lines refused, or -1 with a message in err. */
#define SCAN_MAX_BYTES (64ul << 20)
long scan_table(int family, scan_fn fn, void *ctx, char *err);

#endif
