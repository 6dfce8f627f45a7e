/*
 * listener.c - the forwarder's listening sockets on the outward addresses,
 * accepting, and the connections' bound (see forward/forward_priv.h).
 *
 * A listening socket is bound to one outward address and port (never the
 * unspecified address, which would take the loopback port as well), with
 * SO_REUSEADDR only (a listener's TIME_WAIT leftovers do not keep it from
 * coming back; another socket's listening port can never be shared that
 * way) and, for IPv6, IPV6_V6ONLY. EADDRINUSE means another socket holds
 * the address and port: left alone, said once at debug, tried again at
 * each poll.
 *
 * At the connection bound a client is accepted and reset at once: the
 * bound is never passed and the backlog does not fill with clients that
 * would wait for nothing. Out of fds (EMFILE and the like) every listener
 * stops accepting for FORWARD_ACCEPT_RETRY seconds, as the API's server does.
 */
#include "agent/forward/forward_priv.h"
#include "agent/core/list.h"
#include "agent/core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACCEPT_BATCH 64 /* accepts per wake-up */

static void watch_all(struct forward *f, int on)
{
    for (struct listener *l = f->listeners; l; l = l->next) {
        if (on && l->fd >= 0) ev_io_start(f->loop, &l->w);
        else ev_io_stop(f->loop, &l->w);
    }
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct forward *f = w->data;
    f->paused = 0;
    watch_all(f, 1);
}

static void pause_accepting(struct forward *f, int e)
{
    log_warn("forward: accept: %s; pausing for %.2g s", strerror(e), FORWARD_ACCEPT_RETRY);
    f->paused = 1;
    watch_all(f, 0);
    ev_timer_init(&f->retry_w, on_retry, FORWARD_ACCEPT_RETRY, 0.); /* inactive here: paused was 0 */
    f->retry_w.data = f;
    ev_timer_start(f->loop, &f->retry_w);
}

static void on_gone(struct tunnel *t, void *ctx)
{
    struct forward *f = ctx;
    LIST_UNLINK(f->tunnels, t);
    f->n_tunnels--;
    if (f->full_said && f->n_tunnels < f->max_conns) {
        f->full_said = 0;
        log_info("forward: below the bound of %u connections again", f->max_conns);
    }
}

static void admit(struct forward *f, struct listener *l, int fd)
{
    if (f->n_tunnels >= f->max_conns) {
        if (!f->full_said) log_info("forward: %u connections open, the bound: refusing new ones", f->n_tunnels);
        f->full_said = 1;
        tunnel_reset_fd(fd);
        return;
    }
    struct tunnel *t = tunnel_open(f->loop, fd, (struct sockaddr *)&l->to, l->to_len, on_gone, f);
    if (!t) {
        int e = errno;
        tunnel_reset_fd(fd);
        if (!f->paused) pause_accepting(f, e);
        return;
    }
    LIST_PUSH(f->tunnels, t);
    f->n_tunnels++;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    struct listener *l = w->data;
    struct forward *f = l->f;
    for (int i = 0; i < ACCEPT_BATCH && !f->paused; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            admit(f, l, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) pause_accepting(f, errno);
        return;
    }
}

/* "10.0.0.2:8000" or "[fd00::2]:8000" (outward text, port). */
static void addr_text(char *out, size_t n, const struct outward_addr *a, unsigned port)
{
    int v6 = a->ss.ss_family == AF_INET6;
    snprintf(out, n, "%s%s%s:%u", v6 ? "[" : "", a->text, v6 ? "]" : "", port);
}

static void set_port(struct sockaddr_storage *ss, unsigned port)
{
    ((struct sockaddr_in *)(void *)ss)->sin_port = htons((uint16_t)port); /* the same place in sin6 */
}

/* The loopback listener a connection to l goes to: fams as listener_want. */
static void set_target(struct listener *l, unsigned port, int fams)
{
    int fam = l->at.ss_family;
    if (!(fams & (fam == AF_INET ? 1 : 2))) fam = fam == AF_INET ? AF_INET6 : AF_INET;
    struct sockaddr_storage to;
    memset(&to, 0, sizeof to);
    if (fam == AF_INET) {
        struct sockaddr_in *s = (void *)&to;
        s->sin_family = AF_INET;
        s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        l->to_len = sizeof *s;
    } else {
        struct sockaddr_in6 *s = (void *)&to;
        s->sin6_family = AF_INET6;
        s->sin6_addr = in6addr_loopback;
        l->to_len = sizeof *s;
    }
    set_port(&to, port);
    if (l->fd >= 0 && l->to.ss_family != fam)
        log_info("forward: %s now goes to %s", l->text, fam == AF_INET ? "127.0.0.1" : "::1");
    l->to = to;
}

static void try_bind(struct listener *l)
{
    struct forward *f = l->f;
    int one = 1, fd = socket(l->at.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int e = 0;
    if (fd < 0) e = errno;
    else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
             (l->at.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
             bind(fd, (struct sockaddr *)&l->at, l->at_len) < 0 || listen(fd, SOMAXCONN) < 0)
        e = errno;
    if (e) {
        if (fd >= 0) close(fd);
        if (e != l->bind_errno) {
            if (e == EADDRINUSE) log_debug("forward: %s is held by another socket; left alone", l->text);
            else if (e == EADDRNOTAVAIL) log_debug("forward: %s: the address is not there (yet)", l->text);
            else log_warn("forward: %s: %s", l->text, strerror(e));
        }
        l->bind_errno = e;
        return;
    }
    l->fd = fd;
    l->bind_errno = 0;
    ev_io_init(&l->w, on_accept, fd, EV_READ);
    l->w.data = l;
    if (!f->paused) ev_io_start(f->loop, &l->w);
    log_info("forward: %s -> %s", l->text, l->to.ss_family == AF_INET ? "127.0.0.1" : "::1");
}

static struct listener *find(struct forward *f, const struct sockaddr_storage *at, socklen_t len, uint64_t h)
{
    struct hnode *it;
    HASH_FOR_EACH(&f->by_addr, h, it) {
        struct listener *l = HASH_ENTRY(it, struct listener, node);
        if (l->at_len == len && !memcmp(&l->at, at, len)) return l;
    }
    return NULL;
}

void listener_want(struct forward *f, const struct outward_addr *a, unsigned port, int fams)
{
    struct sockaddr_storage at = a->ss; /* zero past len: outward.c made it so */
    set_port(&at, port);
    uint64_t h = hash_bytes(HASH_SEED, &at, a->len);
    struct listener *l = find(f, &at, a->len, h);
    if (!l) {
        if (f->n_listeners >= FORWARD_LISTENERS_MAX || !(l = calloc(1, sizeof *l))) {
            if (!f->cap_said) log_warn("forward: %zu listening sockets, the most: %s:%u and others not forwarded",
                                       f->n_listeners, a->text, port);
            f->cap_said = 1;
            return;
        }
        l->f = f;
        l->at = at;
        l->at_len = a->len;
        l->fd = -1;
        addr_text(l->text, sizeof l->text, a, port);
        hash_add(&f->by_addr, &l->node, h);
        LIST_PUSH(f->listeners, l);
        f->n_listeners++;
    }
    l->gen = f->gen;
    set_target(l, port, fams);
    if (l->fd < 0) try_bind(l);
}

static unsigned port_of(const struct listener *l)
{
    return ntohs(((const struct sockaddr_in *)(const void *)&l->at)->sin_port);
}

/* why: NULL for the stop (said once, by the caller). */
static void drop(struct forward *f, struct listener *l, const char *why)
{
    if (l->fd >= 0) {
        if (why) log_info("forward: %s closed: %s", l->text, why);
        ev_io_stop(f->loop, &l->w);
        close(l->fd);
    }
    hash_del(&f->by_addr, &l->node);
    LIST_UNLINK(f->listeners, l);
    f->n_listeners--;
    free(l);
}

void listener_sweep(struct forward *f)
{
    struct listener *next;
    for (struct listener *l = f->listeners; l; l = next) {
        next = l->next;
        if (l->gen == f->gen) continue;
        unsigned p = port_of(l);
        int listened = (f->lo[0][p / 64] | f->lo[1][p / 64]) >> (p % 64) & 1;
        drop(f, l, listened ? "the address is gone" : "nothing listens on its loopback port any more");
    }
    if (f->cap_said && f->n_listeners < FORWARD_LISTENERS_MAX) f->cap_said = 0;
}

void listener_close_all(struct forward *f)
{
    while (f->listeners) drop(f, f->listeners, NULL);
    while (f->tunnels) {
        struct tunnel *t = f->tunnels;
        LIST_UNLINK(f->tunnels, t);
        tunnel_close(t);
    }
    f->n_tunnels = 0;
    ev_timer_stop(f->loop, &f->retry_w);
}
