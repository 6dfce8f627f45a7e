/*
 * webhook.c - the outcome webhook (see webhook.h).
 *
 * The body holds the nonce, so it is never written to a file or put on a
 * command line: the http helper is a fork of this (non-dumpable) process, and
 * curl reads the body from an anonymous memfd on its stdin.
 */
#include "runner/run/webhook.h"
#include "agent/core/b64.h"
#include "agent/core/buf.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"
#include "agent/core/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The status of "HTTP/d.d NNN ...", or -1 when resp has no such line. */
static int status_code(const char *resp)
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

int webhook_parse_http_url(const char *url, struct http_url *u, char *err)
{
    static const char scheme[] = "http://";
    memset(u, 0, sizeof *u);
    if (strncmp(url, scheme, sizeof scheme - 1) != 0) {
        err_set(err, "not an http:// URL");
        return -1;
    }
    const char *a = url + sizeof scheme - 1;
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
        strcpy(u->port, "80");
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        double left = deadline - now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r > 0) return 0;
    }
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
        } else if (wait_fd(fd, POLLOUT, deadline) < 0) {
            last = errno;
        } else {
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (!soerr) break;
            last = soerr;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) log_warn("webhook: cannot connect to %s:%s: %s", u->host, u->port, strerror(last));
    return fd;
}

/* In the forked helper: one POST, exit status 0 when the server said 2xx. */
static int http_post(const char *url, const char *body, size_t n, double budget)
{
    struct http_url u;
    char err[ERR_LEN];
    double deadline = now() + budget;
    if (webhook_parse_http_url(url, &u, err) < 0) {
        log_error("webhook: bad URL: %s", err);
        return 1;
    }
    int fd = connect_any(&u, deadline);
    if (fd < 0) return 1;

    struct buf req;
    buf_init(&req, n + 8192);
    int bad = 0;
    int v6 = strchr(u.host, ':') != NULL;
    bad |= buf_printf(&req, "POST %s HTTP/1.1\r\nHost: %s%s%s", u.path, v6 ? "[" : "", u.host, v6 ? "]" : "");
    if (strcmp(u.port, "80") != 0) bad |= buf_printf(&req, ":%s", u.port);
    bad |= buf_puts(&req, "\r\n");
    if (u.auth[0]) {
        bad |= buf_puts(&req, "Authorization: Basic ");
        bad |= b64_encode(&req, u.auth, strlen(u.auth));
        bad |= buf_puts(&req, "\r\n");
    }
    bad |= buf_printf(&req,
                      "User-Agent: " SA_NAME "/" SA_VERSION "\r\n"
                      "Content-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      n);
    bad |= buf_append(&req, body, n);
    if (bad) {
        log_error("webhook: out of memory");
        return 1;
    }
    for (size_t off = 0; off < req.len;) {
        ssize_t w = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) < 0) {
                log_warn("webhook: sending to %s: %s", u.host, strerror(errno));
                return 1;
            }
            continue;
        }
        if (w < 0) {
            log_warn("webhook: sending to %s: %s", u.host, strerror(errno));
            return 1;
        }
        off += (size_t)w;
    }
    /* Only the status line matters; read until it is complete. */
    char resp[512];
    size_t got = 0;
    while (got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        if (wait_fd(fd, POLLIN, deadline) < 0) {
            log_warn("webhook: no answer from %s: %s", u.host, strerror(errno));
            return 1;
        }
        ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    resp[got] = '\0';
    int code = status_code(resp);
    if (code < 0) {
        log_warn("webhook: %s answered without an HTTP status line", u.host);
        return 1;
    }
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
    int done, killed;
    int is_curl;
};

static void on_post_exit(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct post_wait *pw = ctx;
    pw->done = 1;
    ev_timer_stop(loop, &pw->timer);
    if (pw->is_curl && !pw->killed && spawn_exit_code(status) != 0)
        log_warn("webhook: curl failed with exit code %d", spawn_exit_code(status));
    ev_break(loop, EVBREAK_ONE);
}

static void on_post_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct post_wait *pw = w->data;
    log_warn("webhook: no outcome within %.3g s; giving up", pw->budget);
    pw->killed = 1;
    stop_kill(pw->pid);
}

/* curl with the body on its stdin (an anonymous memfd). Returns its pid, or
 * -1 with errno set (EAGAIN: no process slot free) and a reason in err. */
static pid_t start_curl(const char *url, const char *body, size_t n, double budget, char *err)
{
    char maxtime[32];
    int exec_errno;
    int fd = memfd_create("sandbox-agent-webhook", MFD_CLOEXEC);
    if (fd < 0 || io_write_all(fd, body, n) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        int e = errno;
        err_set(err, "cannot stage the body for curl: %s", strerror(e));
        if (fd >= 0) close(fd);
        errno = e;
        return -1;
    }
    snprintf(maxtime, sizeof maxtime, "%.0f", budget < 1 ? 1 : budget);
    char *argv[] = {"curl", "--silent", "--show-error", "--fail", "--max-time", maxtime,
                    "--output", "/dev/null", "--header", "Content-Type: application/json",
                    "--data-binary", "@-", "--", (char *)url, NULL};
    struct spawn_opts o = {.argv = argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = fd,
                           .stdout_fd = -1, .stderr_fd = -1, .cwd = NULL};
    pid_t pid = spawn_child(&o, &exec_errno, err);
    int e = errno;
    close(fd);
    errno = e;
    if (pid < 0) return -1;
    if (exec_errno == ENOENT)
        log_error("webhook: https:// needs curl, which this image does not have; not sent");
    else if (exec_errno)
        log_error("webhook: cannot run curl: %s", strerror(exec_errno));
    return pid;
}

/* The forked http:// helper. Returns as start_curl does. */
static pid_t start_native(const char *url, const char *body, size_t n, double budget, char *err)
{
    pid_t pid = spawn_fork(1);
    if (pid == 0) _exit(http_post(url, body, n, budget));
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
static pid_t start_helper(struct ev_loop *loop, const char *url, const char *body, size_t n, double deadline,
                          int is_curl)
{
    char err[ERR_LEN];
    double backoff = BACKOFF_FIRST;
    int tries = 0;
    for (;;) {
        double left = deadline - now();
        pid_t pid = is_curl ? start_curl(url, body, n, left, err) : start_native(url, body, n, left, err);
        if (pid > 0) {
            if (tries) log_info("webhook: helper started after %d retries", tries);
            return pid;
        }
        if (errno != EAGAIN || left - backoff <= 0) break;
        if (!tries++) log_info("webhook: %s; retrying until the budget ends", err);
        backoff_wait(loop, backoff);
        backoff = backoff * 2 < BACKOFF_MAX ? backoff * 2 : BACKOFF_MAX;
    }
    log_error("webhook: cannot start the %s: %s; not sent", is_curl ? "curl helper" : "http helper", err);
    return -1;
}

void webhook_post(struct ev_loop *loop, const char *url, const char *body, size_t n, double budget)
{
    struct post_wait pw;
    memset(&pw, 0, sizeof pw);
    pw.budget = budget;
    double deadline = now() + budget;
    if (!strncmp(url, "https://", 8)) {
        pw.is_curl = 1;
    } else if (strncmp(url, "http://", 7) != 0) {
        log_error("webhook: " ENV_WEBHOOK " must start with http:// or https://; not sent");
        return;
    }
    pw.pid = start_helper(loop, url, body, n, deadline, pw.is_curl);
    if (pw.pid <= 0) return;
    reaper_watch(loop, &pw.rw, pw.pid, on_post_exit, &pw);
    /* The loop's clock is only as fresh as its last iteration: whatever ran
     * since (a slow sentinel write) must not use up the budget. */
    ev_now_update(loop);
    double left = deadline - now();
    ev_timer_init(&pw.timer, on_post_timeout, left > 0 ? left : 0., 0);
    pw.timer.data = &pw;
    ev_timer_start(loop, &pw.timer);
    while (!pw.done) ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &pw.timer);
}
