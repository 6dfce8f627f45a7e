/*
 * runner/run/webhook.c - the outcome webhook (see webhook.h).
 *
 * The body holds the nonce, so it never leaves the agent's memory: the
 * helper is a fork of this (non-dumpable) process that never execs, speaks
 * HTTP/1.1 on the socket itself (through runner/run/tls.c for https://),
 * waits on each step with a poll bounded by the deadline, and wipes the
 * request it built before it exits.
 */
#include "runner/run/webhook.h"
#include "agent/core/b64.h"
#include "agent/core/buf.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"
#include "agent/core/stop.h"
#include "runner/run/tls.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int webhook_status_code(const char *resp)
{
    const char *p = resp;
    if (strncmp(p, "HTTP/", 5) != 0) return -1;
    for (p += 5; *p >= '0' && *p <= '9'; p++) {}
    if (*p++ != '.') return -1;
    while (*p >= '0' && *p <= '9') p++;
    if (*p != ' ') return -1;
    while (*p == ' ') p++;
    int code = 0, digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 3; p++, digits++) code = code * 10 + (*p - '0');
    return digits == 3 && !(*p >= '0' && *p <= '9') ? code : -1;
}

int webhook_parse_url(const char *url, struct http_url *u, char *err)
{
    memset(u, 0, sizeof *u);
    const char *a;
    if (!strncmp(url, "http://", 7)) {
        a = url + 7;
    } else if (!strncmp(url, "https://", 8)) {
        a = url + 8;
        u->tls = 1;
    } else {
        err_set(err, "not an http:// or https:// URL");
        return -1;
    }
    size_t alen = strcspn(a, "/?#");
    const char *rest = a + alen;
    const char *at = memchr(a, '@', alen);
    if (at) {
        size_t ul = (size_t)(at - a);
        if (ul >= sizeof u->auth) {
            err_set(err, "credentials in the URL are too long");
            return -1;
        }
        memcpy(u->auth, a, ul);
        alen -= ul + 1;
        a = at + 1;
    }
    const char *hp = a, *he, *port = NULL;
    if (alen && *a == '[') { /* [IPv6]:port */
        const char *close = memchr(a, ']', alen);
        if (!close) {
            err_set(err, "unterminated [IPv6] host");
            return -1;
        }
        hp = a + 1;
        he = close;
        if (close + 1 < a + alen) {
            if (close[1] != ':') {
                err_set(err, "junk after the [IPv6] host");
                return -1;
            }
            port = close + 2;
        }
    } else {
        const char *colon = memchr(a, ':', alen);
        he = colon ? colon : a + alen;
        if (colon) port = colon + 1;
    }
    size_t hl = (size_t)(he - hp);
    if (hl == 0 || hl >= sizeof u->host) {
        err_set(err, hl ? "host name too long" : "no host");
        return -1;
    }
    memcpy(u->host, hp, hl);
    if (port) {
        size_t pl = (size_t)(a + alen - port);
        if (pl == 0 || pl > 5 || strspn(port, "0123456789") < pl || atoi(port) < 1 || atoi(port) > 65535) {
            err_set(err, "bad port");
            return -1;
        }
        memcpy(u->port, port, pl);
    } else {
        strcpy(u->port, u->tls ? "443" : "80");
    }
    size_t pathlen = strcspn(rest, "#");
    if (pathlen + 2 >= sizeof u->path) {
        err_set(err, "path too long");
        return -1;
    }
    /* "?q" with no path still needs the leading slash. */
    if (*rest != '/') u->path[0] = '/';
    strncat(u->path, rest, pathlen);
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
            err_set(err, "URL contains a space or control character");
            return -1;
        }
    return 0;
}

static int connect_any(const struct http_url *u, double deadline)
{
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        log_warn("webhook: cannot resolve %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last = 0;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
            last = errno;
        } else if (io_wait(fd, POLLOUT, deadline) < 0) {
            last = errno;
        } else {
            int soerr = 0, one = 1;
            socklen_t sl = sizeof soerr;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            /* Each flight of the TLS handshake goes out at once, not held
             * back by Nagle until the server's delayed ACK (40 ms). */
            if (!soerr) {
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                break;
            }
            last = soerr;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) log_warn("webhook: cannot connect to %s:%s: %s", u->host, u->port, strerror(last));
    return fd;
}

/* The connection the request goes over: the socket, or TLS on it. */
struct link {
    int fd;
    struct tls_conn *tls;
    double deadline;
};

static int link_send(struct link *l, const char *p, size_t n, char *err)
{
    if (l->tls) return tls_write_all(l->tls, p, n, err);
    for (size_t off = 0; off < n;) {
        ssize_t w = send(l->fd, p + off, n - off, MSG_NOSIGNAL);
        if (w >= 0) {
            off += (size_t)w;
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN || io_wait(l->fd, POLLOUT, l->deadline) < 0) {
            err_set(err, "%s", errno == ETIMEDOUT ? "the server took nothing within the time left" : strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Some of the answer: bytes, 0 at its end, or -1 with err. */
static ssize_t link_recv(struct link *l, char *p, size_t n, char *err)
{
    if (l->tls) return tls_read(l->tls, p, n, err);
    for (;;) {
        ssize_t r = recv(l->fd, p, n, 0);
        if (r >= 0) return r;
        if (errno == EINTR) continue;
        if (errno != EAGAIN || io_wait(l->fd, POLLIN, l->deadline) < 0) {
            err_set(err, "%s", errno == ETIMEDOUT ? "no answer within the time left" : strerror(errno));
            return -1;
        }
    }
}

/* The request: head, then the body. Returns 0, or -1 when out of memory. */
static int request(struct buf *req, const struct http_url *u, const char *body, size_t n)
{
    int bad = 0;
    int v6 = strchr(u->host, ':') != NULL;
    bad |= buf_printf(req, "POST %s HTTP/1.1\r\nHost: %s%s%s", u->path, v6 ? "[" : "", u->host, v6 ? "]" : "");
    if (strcmp(u->port, u->tls ? "443" : "80") != 0) bad |= buf_printf(req, ":%s", u->port);
    bad |= buf_puts(req, "\r\n");
    if (u->auth[0]) {
        bad |= buf_puts(req, "Authorization: Basic ");
        bad |= b64_encode(req, u->auth, strlen(u->auth));
        bad |= buf_puts(req, "\r\n");
    }
    bad |= buf_printf(req,
                      "User-Agent: " SA_NAME "/" SA_VERSION "\r\n"
                      "Content-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      n);
    bad |= buf_append(req, body, n);
    return bad ? -1 : 0;
}

/* Send the request, then read until the status line is whole: its code, or
 * -1 (logged). */
static int exchange(struct link *l, const struct http_url *u, const char *body, size_t n)
{
    char err[ERR_LEN];
    struct buf req;
    buf_init(&req, n + 8192);
    int rc = request(&req, u, body, n);
    if (rc < 0)
        log_error("webhook: out of memory");
    else if ((rc = link_send(l, req.data, req.len, err)) < 0)
        log_warn("webhook: sending to %s: %s", u->host, err);
    nonce_overwrite(req.data, req.cap);
    buf_free(&req);
    if (rc < 0) return -1;
    char resp[512];
    size_t got = 0;
    while (got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        ssize_t r = link_recv(l, resp + got, sizeof resp - 1 - got, err);
        if (r < 0) {
            log_warn("webhook: no answer from %s: %s", u->host, err);
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    resp[got] = '\0';
    int code = webhook_status_code(resp);
    if (code < 0) log_warn("webhook: %s answered without an HTTP status line", u->host);
    return code;
}

/* In the helper: one POST, exit status 0 when the server said 2xx. */
static int helper_post(const char *url, const char *ca_file, const char *body, size_t n, double budget)
{
    struct http_url u;
    struct tls_trust trust = {0};
    char err[ERR_LEN];
    struct link l = {-1, NULL, io_now() + budget};
    if (webhook_parse_url(url, &u, err) < 0) {
        log_error("webhook: bad URL: %s", err);
        return 1;
    }
    if (u.tls && !tls_host_checkable(u.host)) {
        log_error("webhook: not sent: %s is an IP address, and only a DNS name can be checked against the "
                  "server's certificate",
                  u.host);
        return 1;
    }
    if (u.tls && tls_trust_load(&trust, ca_file && *ca_file ? ca_file : DEFAULT_CA_FILE, err) < 0) {
        log_error("webhook: not sent: no CA bundle to check %s against: %s", u.host, err);
        return 1;
    }
    l.fd = connect_any(&u, l.deadline);
    if (l.fd >= 0 && u.tls && !(l.tls = tls_open(l.fd, u.host, &trust, l.deadline, err)))
        log_warn("webhook: not sent: TLS handshake with %s failed: %s", u.host, err);
    int code = l.fd >= 0 && (l.tls || !u.tls) ? exchange(&l, &u, body, n) : -1;
    tls_close(l.tls);
    tls_trust_free(&trust);
    if (l.fd >= 0) close(l.fd);
    if (code < 0) return 1;
    if (code < 200 || code > 299) {
        log_warn("webhook: %s answered HTTP %d", u.host, code);
        return 1;
    }
    log_info("webhook delivered (HTTP %d)", code);
    return 0;
}

struct post_wait {
    ev_timer timer;
    struct reaper_watch rw;
    pid_t pid;
    double budget;
    int done;
};

static void on_post_exit(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    (void)status;
    struct post_wait *pw = ctx;
    pw->done = 1;
    ev_timer_stop(loop, &pw->timer);
    ev_break(loop, EVBREAK_ONE);
}

static void on_post_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct post_wait *pw = w->data;
    log_warn("webhook: no outcome within %.3g s; giving up", pw->budget);
    stop_kill(pw->pid);
}

/* The helper's own deadline comes this much before the agent's kill, so
 * that a server that stalls is logged with the step it stalled at. */
#define HELPER_MARGIN 0.2

/* The helper process. Returns its pid, or -1 with errno set (EAGAIN: no
 * process slot free) and a reason in err. */
static pid_t start_native(const char *url, const char *ca_file, const char *body, size_t n, double budget,
                          char *err)
{
    double own = budget > 2 * HELPER_MARGIN ? budget - HELPER_MARGIN : budget;
    pid_t pid = spawn_fork(1);
    if (pid == 0) _exit(helper_post(url, ca_file, body, n, own));
    if (pid < 0) {
        int e = errno;
        err_set(err, "fork: %s", strerror(e));
        errno = e;
    }
    return pid;
}

static void on_backoff(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    *(int *)w->data = 1;
}

/* Wait `seconds` in the loop: reaping (which frees process slots) and
 * signals go on meanwhile. */
static void backoff_wait(struct ev_loop *loop, double seconds)
{
    int fired = 0;
    ev_timer t;
    ev_timer_init(&t, on_backoff, seconds, 0.);
    t.data = &fired;
    ev_timer_start(loop, &t);
    while (!fired) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &t);
}

#define BACKOFF_FIRST 0.005
#define BACKOFF_MAX 0.25

/* Start the helper, retrying a fork that fails for want of a process slot
 * (EAGAIN: a job that kept the process table full, whose leftovers are still
 * being reaped) with a growing backoff until the deadline. */
static pid_t start_helper(struct ev_loop *loop, const char *url, const char *ca_file, const char *body, size_t n,
                          double deadline)
{
    char err[ERR_LEN];
    double backoff = BACKOFF_FIRST;
    int tries = 0;
    for (;;) {
        double left = deadline - io_now();
        pid_t pid = start_native(url, ca_file, body, n, left, err);
        if (pid > 0) {
            if (tries) log_info("webhook: helper started after %d retries", tries);
            return pid;
        }
        if (errno != EAGAIN || left - backoff <= 0) break;
        if (!tries++) log_info("webhook: %s; retrying until the budget ends", err);
        backoff_wait(loop, backoff);
        backoff = backoff * 2 < BACKOFF_MAX ? backoff * 2 : BACKOFF_MAX;
    }
    log_error("webhook: cannot start the webhook helper: %s; not sent", err);
    return -1;
}

void webhook_post(struct ev_loop *loop, const char *url, const char *ca_file, const char *body, size_t n,
                  double budget)
{
    struct post_wait pw;
    memset(&pw, 0, sizeof pw);
    pw.budget = budget;
    double deadline = io_now() + budget;
    if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0) {
        log_error("webhook: " ENV_WEBHOOK " must start with http:// or https://; not sent");
        return;
    }
    pw.pid = start_helper(loop, url, ca_file, body, n, deadline);
    if (pw.pid <= 0) return;
    reaper_watch(loop, &pw.rw, pw.pid, on_post_exit, &pw);
    /* The loop's clock is only as fresh as its last iteration: whatever ran
     * since (a slow sentinel write) must not use up the budget. */
    ev_now_update(loop);
    double left = deadline - io_now();
    ev_timer_init(&pw.timer, on_post_timeout, left > 0 ? left : 0., 0);
    pw.timer.data = &pw;
    ev_timer_start(loop, &pw.timer);
    while (!pw.done) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &pw.timer);
}
