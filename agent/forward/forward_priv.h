/*
 * forward_priv.h - the forwarder's record, shared by forward/forward.c (the
 * configuration, the poll, start and stop) and forward/listener.c (the
 * listening sockets on the outward addresses, accepting, the connections).
 * Not for use outside agent/forward.
 */
#ifndef SA_FORWARD_FORWARD_PRIV_H
#define SA_FORWARD_FORWARD_PRIV_H

#include "agent/core/hash.h"
#include "agent/forward/forward.h"
#include "agent/forward/outward.h"
#include "agent/forward/tunnel.h"

#include <ev.h>
#include <stdint.h>

#define FORWARD_PORTS 65536
#define FORWARD_LISTENERS_MAX 4096 /* outward address x port pairs at most */
#define FORWARD_ACCEPT_RETRY 0.25  /* seconds accepting pauses after EMFILE and the like */

/* One outward address and port: its listening socket, when it could be had. */
struct listener {
    struct hnode node;             /* by the outward address and port */
    struct forward *f;
    struct sockaddr_storage at;    /* the outward address and port */
    socklen_t at_len;
    struct sockaddr_storage to;    /* the loopback listener: 127.0.0.1 or ::1, same port */
    socklen_t to_len;
    char text[OUTWARD_TEXT + 8];   /* "10.0.0.2:8000", "[fd00::2]:8000" */
    int fd;                        /* -1: held by another socket, or not there (yet) */
    int bind_errno;                /* the last bind's failure, logged once */
    unsigned gen;                  /* the last poll that wanted it */
    ev_io w;
    struct listener *prev, *next;
};

struct forward {
    struct ev_loop *loop;
    struct forward_config cfg;
    unsigned max_conns;            /* the configured bound, or lower: see forward_start */
    ev_timer poll_w;
    ev_timer retry_w;              /* accepting resumes after a pause */
    unsigned gen;                  /* polls so far */
    struct outward now;            /* the outward addresses in use */
    uint64_t lo[2][FORWARD_PORTS / 64]; /* ports listened on at [0] 127.0.0.1, [1] ::1 */
    struct htab by_addr;           /* the listeners */
    struct listener *listeners;
    size_t n_listeners;
    struct tunnel *tunnels;
    unsigned n_tunnels;
    int paused;                    /* accepting waits for retry_w */
    int tables;                    /* sock_diag refused: /proc/net/tcp and tcp6 */
    int full_said, cap_said, scan_said;
};

/* Make sure the outward address a listens on port for this poll (f->gen),
 * forwarding to the loopback listener of a's family when there is one
 * (fams: bit 0 127.0.0.1, bit 1 ::1), else to the other. A socket that
 * holds the address already is left alone, and tried again next poll. */
void listener_want(struct forward *f, const struct outward_addr *a, unsigned port, int fams);

/* Close the listening sockets this poll did not want; their connections
 * go on. */
void listener_sweep(struct forward *f);

/* Close every listening socket and every connection (the stop). */
void listener_close_all(struct forward *f);

#endif
