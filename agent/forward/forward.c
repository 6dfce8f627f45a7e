/*
 * forward.c - the port forwarder's configuration, its poll, start and stop
 * (see forward/forward.h).
 *
 * Each poll (every SANDBOX_AGENT_FORWARD_SECONDS, the first at the start):
 * the outward addresses (the configured list, or the interfaces' now, logged
 * when they change), the listening sockets (sock_diag, or /proc/net/tcp and
 * tcp6 where the kernel has no inet_diag: forward/scan.h), and
 * then, for every port with a listener on 127.0.0.1 or ::1 (not the API's
 * own), a listening socket on each outward address (forward/listener.c);
 * those the poll no longer wants are closed. A table that cannot be read
 * leaves everything as it was until a poll can.
 */
#include "agent/forward/forward_priv.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/forward/scan.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* ---- the configuration ---- */

static int read_switch(struct forward_config *cfg, int served_outward, char *err)
{
    const char *v = getenv(ENV_FORWARD);
    cfg->on = served_outward;
    if (!v || !*v) return 0;
    if (strcmp(v, "0") && strcmp(v, "1")) {
        err_set(err, ENV_FORWARD " must be 1 or 0, not '%.40s'", v);
        return -1;
    }
    cfg->on = v[0] == '1';
    return 0;
}

static int read_addrs(struct forward_config *cfg, char *err)
{
    const char *v = getenv(ENV_FORWARD_ADDRS);
    char why[ERR_LEN];
    cfg->fixed = v && *v;
    if (cfg->fixed && outward_parse(v, &cfg->addrs, why) < 0) {
        err_set(err, ENV_FORWARD_ADDRS ": %s", why);
        return -1;
    }
    return 0;
}

static int read_numbers(struct forward_config *cfg, char *err)
{
    const char *v = getenv(ENV_FORWARD_MAX_CONNECTIONS);
    uint64_t n = DEFAULT_FORWARD_MAX_CONNECTIONS;
    if (v && *v && (num_count(v, 1000000, &n) < 0 || n == 0)) {
        err_set(err, ENV_FORWARD_MAX_CONNECTIONS " must be a count from 1 to 1000000, not '%.40s'", v);
        return -1;
    }
    cfg->max_conns = (unsigned)n;
    v = getenv(ENV_FORWARD_SECONDS);
    cfg->interval = DEFAULT_FORWARD_SECONDS;
    if (v && *v && (num_seconds(v, 3600, &cfg->interval) < 0 || cfg->interval < 0.01)) {
        err_set(err, ENV_FORWARD_SECONDS " must be a number of seconds from 0.01 to 3600, not '%.40s'", v);
        return -1;
    }
    return 0;
}

int forward_config_read(struct forward_config *cfg, int served_outward, unsigned api_port, char *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->skip_port = api_port;
    if (read_switch(cfg, served_outward, err) < 0 || read_addrs(cfg, err) < 0 || read_numbers(cfg, err) < 0)
        return -1;
    return 0;
}

/* ---- the poll ---- */

static void on_sock(void *ctx, const struct scan_sock *s)
{
    static const unsigned char v4_lo[4] = {127, 0, 0, 1};
    static const unsigned char v4mapped_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    struct forward *f = ctx;
    int which;
    if (s->family == AF_INET && !memcmp(s->addr, v4_lo, 4)) which = 0;
    else if (s->family == AF_INET6 && !memcmp(s->addr, &in6addr_loopback, 16)) which = 1;
    else if (s->family == AF_INET6 && !memcmp(s->addr, v4mapped_lo, 16)) which = 0;
    else return; /* another address: reachable as it is, or meant to be where it is */
    if (s->port == 0 || s->port == f->cfg.skip_port) return;
    f->lo[which][s->port / 64] |= 1ull << (s->port % 64);
}

/* The listening sockets now, by sock_diag, or from the tables once the
 * kernel refused it; -1 when neither could be read. */
static int scan_listeners(struct forward *f)
{
    static const int fams[2] = {AF_INET, AF_INET6};
    char err[ERR_LEN];
    memset(f->lo, 0, sizeof f->lo);
    for (int i = 0; i < 2 && !f->tables; i++) {
        if (scan_diag(fams[i], on_sock, f, err) == 0) continue;
        log_info("forward: %s; reading /proc/net/tcp and tcp6 instead", err);
        f->tables = 1;
        memset(f->lo, 0, sizeof f->lo);
    }
    for (int i = 0; i < 2 && f->tables; i++) {
        long r = scan_table(fams[i], on_sock, f, err);
        if (r != 0 && !f->scan_said) {
            log_warn("forward: %s", err);
            f->scan_said = 1;
        }
        if (r < 0) return -1;
    }
    return 0;
}

static void refresh_addrs(struct forward *f)
{
    struct outward now;
    char err[ERR_LEN], text[512];
    if (f->cfg.fixed) return;
    if (outward_interfaces(&now, err) < 0) {
        log_warn("forward: %s; the outward addresses stay as they were", err);
        return;
    }
    if (f->gen > 1 && outward_equal(&now, &f->now)) return;
    f->now = now;
    outward_text(&f->now, text, sizeof text);
    log_info("forward: outward addresses%s: %s%s", f->gen > 1 ? " now" : "", text,
             now.dropped ? " (and more, past the most kept)" : "");
}

static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct forward *f = w->data;
    f->gen++;
    refresh_addrs(f);
    if (scan_listeners(f) < 0) return;
    for (unsigned word = 0; word < FORWARD_PORTS / 64; word++) {
        uint64_t any = f->lo[0][word] | f->lo[1][word];
        while (any) {
            unsigned bit = (unsigned)__builtin_ctzll(any), port = word * 64 + bit;
            int fams = (int)(f->lo[0][word] >> bit & 1) | (int)(f->lo[1][word] >> bit & 1) << 1;
            any &= any - 1;
            for (size_t i = 0; i < f->now.n; i++) listener_want(f, &f->now.a[i], port, fams);
        }
    }
    listener_sweep(f);
}

/* ---- start and stop ---- */

/* The connections take at most half the fds the agent may open: the API
 * and the processes it starts keep the rest. */
static unsigned conn_bound(unsigned want)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) < 0 || r.rlim_cur == RLIM_INFINITY) return want;
    rlim_t most = r.rlim_cur / 2 / TUNNEL_FDS;
    if (most < 1) most = 1;
    if (most >= want) return want;
    log_info("forward: at most %llu connections, not %u: RLIMIT_NOFILE is %llu and each takes %d fds",
             (unsigned long long)most, want, (unsigned long long)r.rlim_cur, TUNNEL_FDS);
    return (unsigned)most;
}

struct forward *forward_start(struct ev_loop *loop, const struct forward_config *cfg, char *err)
{
    char text[512];
    struct forward *f = calloc(1, sizeof *f);
    if (!f || hash_init(&f->by_addr, 64, 1) < 0) {
        free(f);
        err_set(err, "forward: out of memory");
        return NULL;
    }
    f->loop = loop;
    f->cfg = *cfg;
    f->max_conns = conn_bound(cfg->max_conns);
    if (cfg->fixed) {
        f->now = cfg->addrs;
        outward_text(&f->now, text, sizeof text);
        log_info("forward: outward addresses (" ENV_FORWARD_ADDRS "): %s", text);
    }
    log_info("forward: forwarding loopback listeners, polling every %.3g s, at most %u connections",
             cfg->interval, f->max_conns);
    ev_timer_init(&f->poll_w, on_poll, 0., cfg->interval);
    f->poll_w.data = f;
    ev_timer_start(loop, &f->poll_w);
    return f;
}

void forward_free(struct forward *f)
{
    if (!f) return;
    ev_timer_stop(f->loop, &f->poll_w);
    listener_close_all(f);
    hash_free(&f->by_addr);
    log_info("forward: stopped");
    free(f);
}
