/*
 * forward.h - the port forwarder (README "Port forwarding"): a server in the
 * sandbox that listens on 127.0.0.1 or ::1 only is reachable at the same
 * port on the sandbox's outward addresses, as envd's forwarder makes it, for
 * as long as it listens.
 *
 * A service on the API's loop (agent/api/api.c starts and frees it): no
 * thread, no helper process. Owns its configuration (SANDBOX_AGENT_FORWARD,
 * _FORWARD_ADDRS, _FORWARD_MAX_CONNECTIONS, _FORWARD_SECONDS), the poll
 * that finds the loopback listeners (forward/scan.h) and the outward
 * addresses (forward/outward.h), both asked of the kernel by netlink
 * (forward/nl.h), a listening socket per outward address and port
 * (forward/listener.c), and the connections (forward/tunnel.h).
 */
#ifndef SA_FORWARD_FORWARD_H
#define SA_FORWARD_FORWARD_H

#include "agent/forward/outward.h"

#include <ev.h>

struct forward_config {
    int on;                /* SANDBOX_AGENT_FORWARD, or its default */
    int fixed;             /* SANDBOX_AGENT_FORWARD_ADDRS given: addrs is the list */
    struct outward addrs;
    unsigned max_conns;    /* SANDBOX_AGENT_FORWARD_MAX_CONNECTIONS */
    double interval;       /* SANDBOX_AGENT_FORWARD_SECONDS: the poll's */
    unsigned skip_port;    /* the API's own loopback port, never forwarded (0: none) */
};

struct forward;

/* Read the configuration. served_outward: the API listens on an address
 * other than loopback (the default turns forwarding on then); api_port:
 * its TCP port (0 for a Unix socket). Returns 0, or -1 with a message in
 * err naming the variable. */
int forward_config_read(struct forward_config *cfg, int served_outward, unsigned api_port, char *err);

/* Start forwarding on loop (the first poll runs at once). Returns the
 * forwarder, or NULL with a message in err. */
struct forward *forward_start(struct ev_loop *loop, const struct forward_config *cfg, char *err);

/* Stop: every listening socket and every connection closed, now; f freed.
 * NULL is nothing. */
void forward_free(struct forward *f);

#endif
