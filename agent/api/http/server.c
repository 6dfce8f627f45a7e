/*
 * server.c - accepting connections and stopping (see http/server.h).
 *
 * At the connection bound, a client waiting to be accepted displaces the
 * oldest untrusted connection (a stranger's, or one whose client closed
 * its side): it is killed, accepting pauses until it is torn down (the
 * bound is never passed, not even for a moment), and the client is
 * accepted in its place. With no untrusted connection left the
 * accept watcher stops: new clients wait in the kernel's backlog (no busy
 * loop on a socket that stays readable) and the watcher starts again when
 * a connection closes, or becomes a stranger's. Running out of file
 * descriptors (EMFILE and the like) pauses accepting for ACCEPT_RETRY
 * seconds for the same reason.
 *
 * The hang-up set (server.h) is an epoll fd of its own because the loop's
 * watchers cannot say "only a hang-up": a socket at EOF is readable for
 * ever, and one with room writable. Registered with no events, a socket
 * reports EPOLLHUP and EPOLLERR only.
 */
#include "agent/api/http/server.h"
#include "agent/api/http/conn.h"
#include "agent/core/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define ACCEPT_BATCH 64     /* accepts per wake-up, so one client flood cannot starve the others */
#define ACCEPT_RETRY 0.25   /* seconds */
#define HANGUP_BATCH 64     /* hang-ups read per wake-up */

static void accept_pause(struct server *s, double retry)
{
    ev_io_stop(s->loop, &s->accept_w);
    if (retry > 0 && !ev_is_active(&s->retry_w)) {
        ev_timer_set(&s->retry_w, retry, 0);
        ev_timer_start(s->loop, &s->retry_w);
    }
}

/* At the bound, accepting waits for a slot: one being torn down, or an
 * untrusted connection to displace when a client comes. */
static int slot_coming(const struct server *s)
{
    return s->n < s->max || (s->untrusted && !s->dying);
}

static void accept_resume(struct server *s)
{
    if (s->stopping || s->fd < 0 || !slot_coming(s) || ev_is_active(&s->retry_w)) return;
    ev_io_start(s->loop, &s->accept_w);
}

/* A client waits and every slot is taken: close the oldest untrusted
 * connection; accepting goes on once it is torn down (server_conn_closed). */
static void displace(struct server *s)
{
    accept_pause(s, 0);
    if (s->dying || !s->untrusted) {
        log_debug("api: %u connections open, the bound: not accepting until one closes", s->n);
        return;
    }
    log_debug("api: %u connections open, the bound: closing connection %u, the oldest "
              "stranger's, for a new one", s->n, conn_id(s->untrusted));
    conn_kill(s->untrusted);
}

/* 1 to keep accepting, 0 when accept has nothing more for now. */
static int accept_one(struct server *s)
{
    int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) return 1;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        log_warn("api: accept: %s; pausing for %.2g s", strerror(errno), ACCEPT_RETRY);
        accept_pause(s, ACCEPT_RETRY);
        return 0;
    }
    /* Stream events go out as they are made, not after Nagle's delay. */
    int one = 1;
    if (s->tcp) (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!conn_open(s, fd)) {
        log_warn("api: out of memory for a connection");
        close(fd);
        accept_pause(s, ACCEPT_RETRY);
        return 0;
    }
    s->n++;
    return 1;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    struct server *s = w->data;
    if (s->n >= s->max) {
        displace(s);
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH && s->n < s->max; i++)
        if (!accept_one(s)) break;
    if (!slot_coming(s)) {
        log_debug("api: %u connections open, the bound: not accepting until one closes", s->n);
        accept_pause(s, 0);
    }
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    accept_resume(w->data);
}

static void on_drain_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *s = w->data;
    log_warn("api: %u connections still open %.3g s after the stop; dropping them", s->n,
             SERVER_DRAIN_SECONDS);
    for (struct conn *c = s->conns; c; c = conn_next(c)) conn_kill(c);
}

/* ---- the hang-up set ---- */

static void on_hangup(struct ev_loop *loop, ev_io *w, int revents)
{
    struct server *s = w->data;
    struct epoll_event ev[HANGUP_BATCH];
    int n = epoll_wait(s->hupfd, ev, HANGUP_BATCH, 0);
    for (int i = 0; i < n; i++) { /* conn_kill takes each off the set */
        struct conn *c = ev[i].data.ptr;
        log_debug("api: connection %u: the client is gone", conn_id(c));
        conn_kill(c);
    }
}

int server_hangup_watch(struct server *s, struct conn *c, int fd)
{
    struct epoll_event ev = {.events = 0, .data.ptr = c};
    return s->hupfd < 0 ? -1 : epoll_ctl(s->hupfd, EPOLL_CTL_ADD, fd, &ev);
}

void server_hangup_forget(struct server *s, int fd)
{
    struct epoll_event ev = {0};
    if (s->hupfd >= 0) (void)epoll_ctl(s->hupfd, EPOLL_CTL_DEL, fd, &ev);
}

/* Once the listener is closed and the last connection gone. */
static void hangup_close(struct server *s)
{
    if (s->hupfd < 0 || s->fd >= 0 || s->n) return;
    ev_io_stop(s->loop, &s->hup_w);
    close(s->hupfd);
    s->hupfd = -1;
}

void server_start(struct server *s, struct ev_loop *loop, int fd, int tcp, unsigned max,
                  double timeout, double first_head, const struct server_app *app)
{
    memset(s, 0, sizeof *s);
    s->loop = loop;
    s->fd = fd;
    s->tcp = tcp;
    s->max = max;
    s->timeout = timeout;
    s->first_head = first_head < timeout ? first_head : timeout;
    s->app = *app;
    ev_io_init(&s->accept_w, on_accept, fd, EV_READ);
    ev_init(&s->retry_w, on_retry);
    ev_init(&s->drain_w, on_drain_timeout);
    s->accept_w.data = s->retry_w.data = s->drain_w.data = s;
    ev_io_start(loop, &s->accept_w);
    s->hupfd = epoll_create1(EPOLL_CLOEXEC);
    if (s->hupfd < 0) {
        log_warn("api: epoll_create1: %s; a client gone after closing its side is found at "
                 "the next write", strerror(errno));
        return;
    }
    ev_io_init(&s->hup_w, on_hangup, s->hupfd, EV_READ);
    s->hup_w.data = s;
    ev_io_start(loop, &s->hup_w);
}

static void check_drained(struct server *s)
{
    if (!s->stopping || s->n || !s->drained) return;
    ev_timer_stop(s->loop, &s->drain_w);
    server_drained_fn fn = s->drained;
    s->drained = NULL;
    fn(s, s->drained_ctx);
}

void server_close_listener(struct server *s)
{
    ev_io_stop(s->loop, &s->accept_w);
    ev_timer_stop(s->loop, &s->retry_w);
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    hangup_close(s);
}

void server_stop(struct server *s, server_drained_fn drained, void *ctx)
{
    if (s->stopping) return;
    s->stopping = 1;
    s->drained = drained;
    s->drained_ctx = ctx;
    server_close_listener(s);
    /* conn_stop frees nothing: walking the list while it runs is safe. */
    for (struct conn *c = s->conns; c; c = conn_next(c)) conn_stop(c);
    ev_timer_set(&s->drain_w, SERVER_DRAIN_SECONDS, 0);
    ev_timer_start(s->loop, &s->drain_w);
    check_drained(s);
}

void server_conn_closed(struct server *s)
{
    s->n--;
    accept_resume(s);
    hangup_close(s);
    check_drained(s);
}

void server_conn_untrusted(struct server *s) { accept_resume(s); }
