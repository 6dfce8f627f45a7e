/*
 * tests/bench/ipcfloor.c - the IPC floor of make bench's Start rows
 * (bench_serve_proc.py, rows 1, 1e and 8): a minimal server that does only
 * what any server answering process.Process/Start must do, so that the
 * agent's distance to it is the agent's own work. libc only; a bench tool,
 * not part of the agent.
 *
 *   ipcfloor ADDR          serve IPv4:PORT until SIGTERM; prints "ready\n"
 *                          on stdout once listening
 *
 * What it pays, and nothing more: one thread and one epoll set; keep-alive
 * HTTP/1.1 connections over loopback (the head read to its blank line and
 * the Content-Length body, the command taken from the envelope's JSON);
 * vfork + execvp of the command with stdout and stderr on pipes, stdin
 * /dev/null; a pidfd for the exit in the same epoll set; the response head
 * and the start event written right after the spawn; the output sent as
 * data events (base64) as it is read; and, once the process has exited and
 * both pipes are at EOF, the end event, the end-stream envelope and the
 * last chunk in one write. The messages are the agent's, byte for byte in
 * shape, so hclient reads both the same way.
 *
 * What it does not do (the agent's part): users, environments, working
 * directories, process groups, cgroups, retention, replay, back-pressure,
 * timeouts, and every check of a request.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define HEAD_MAX 16384
#define BODY_MAX 65536
#define ARGS_MAX 64
#define OUT_CHUNK 65536

enum kind { K_LISTEN, K_CONN, K_OUT, K_ERR, K_PID };

/* One epoll registration: what it is and whose. */
struct tag {
    enum kind k;
    struct client *c;
};

struct client {
    int fd;
    struct tag t_conn, t_out, t_err, t_pid;
    char in[HEAD_MAX + BODY_MAX];
    size_t inlen;
    /* the Start being served */
    int running, out_fd, err_fd, pid_fd, exited, status;
    pid_t pid;
    struct client *next_dead;
};

static int ep;
static struct client *dead;

static void die(const char *what)
{
    fprintf(stderr, "ipcfloor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) { /* a bench client always reads: wait for room */
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            poll(&pf, 1, -1);
            continue;
        }
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void watch(int fd, struct tag *t)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = t};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
}

static void unwatch_close(int *fd)
{
    if (*fd < 0) return;
    epoll_ctl(ep, EPOLL_CTL_DEL, *fd, NULL);
    close(*fd);
    *fd = -1;
}

/* A chunk holding one envelope (flags, JSON) appended at out; its length. */
static size_t chunk_env(char *out, int flags, const char *json, size_t n)
{
    size_t h = (size_t)sprintf(out, "%zx\r\n", n + 5);
    unsigned char *e = (unsigned char *)out + h;
    e[0] = (unsigned char)flags;
    e[1] = (unsigned char)(n >> 24), e[2] = (unsigned char)(n >> 16), e[3] = (unsigned char)(n >> 8);
    e[4] = (unsigned char)n;
    memcpy(e + 5, json, n);
    memcpy(e + 5 + n, "\r\n", 2);
    return h + 5 + n + 2;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64(char *o, const unsigned char *s, size_t n)
{
    char *p = o;
    for (; n >= 3; s += 3, n -= 3) {
        *p++ = B64[s[0] >> 2];
        *p++ = B64[(s[0] & 3) << 4 | s[1] >> 4];
        *p++ = B64[(s[1] & 15) << 2 | s[2] >> 6];
        *p++ = B64[s[2] & 63];
    }
    if (n) {
        *p++ = B64[s[0] >> 2];
        *p++ = B64[(s[0] & 3) << 4 | (n > 1 ? s[1] >> 4 : 0)];
        *p++ = n > 1 ? B64[(s[1] & 15) << 2] : '=';
        *p++ = '=';
    }
    return (size_t)(p - o);
}

/* The JSON string after "key": at s (no escapes: a bench's commands);
 * copied NUL-terminated into dst. Returns the byte after it, or NULL. */
static const char *jstr(const char *s, const char *end, char *dst, size_t cap)
{
    while (s < end && *s != '"') s++;
    if (s >= end) return NULL;
    s++;
    const char *q = memchr(s, '"', (size_t)(end - s));
    if (!q || (size_t)(q - s) >= cap) return NULL;
    memcpy(dst, s, (size_t)(q - s));
    dst[q - s] = '\0';
    return q + 1;
}

/* cmd and args of {"process": {"cmd": "...", "args": ["...", ...]}}. */
static int parse_start(const char *j, size_t n, char *store, char **argv)
{
    const char *end = j + n, *p = memmem(j, n, "\"cmd\"", 5);
    int argc = 0;
    if (!p || !(p = jstr(p + 5, end, store, 4096))) return -1;
    argv[argc++] = store;
    store += strlen(store) + 1;
    const char *a = memmem(j, n, "\"args\"", 6);
    if (a) {
        const char *close = memchr(a, ']', (size_t)(end - a));
        for (a += 6; close && argc < ARGS_MAX - 1;) {
            const char *q = memchr(a, '"', (size_t)(close - a));
            if (!q) break;
            if (!(a = jstr(q, close, store, 4096))) return -1;
            argv[argc++] = store;
            store += strlen(store) + 1;
        }
    }
    argv[argc] = NULL;
    return 0;
}

static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";

/* vfork + execvp; the head and the start event written at once. */
static void start(struct client *c, char **argv)
{
    int o[2], e[2];
    if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0) die("pipe2");
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = vfork();
    if (pid == 0) {
        dup2(null, 0);
        dup2(o[1], 1);
        dup2(e[1], 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0) die("vfork");
    close(null);
    close(o[1]);
    close(e[1]);
    c->pid = pid;
    c->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (c->pid_fd < 0) die("pidfd_open");
    fcntl(o[0], F_SETFL, O_NONBLOCK);
    fcntl(e[0], F_SETFL, O_NONBLOCK);
    c->out_fd = o[0];
    c->err_fd = e[0];
    c->running = 1;
    c->exited = 0;
    watch(c->out_fd, &c->t_out);
    watch(c->err_fd, &c->t_err);
    watch(c->pid_fd, &c->t_pid);
    char buf[512], json[64];
    size_t h = sizeof HEAD - 1;
    memcpy(buf, HEAD, h);
    int jn = snprintf(json, sizeof json, "{\"event\": {\"start\": {\"pid\": %d}}}", (int)pid);
    h += chunk_env(buf + h, 0, json, (size_t)jn);
    send_all(c->fd, buf, h);
}

/* Both pipes at EOF and the exit seen: end event, end of stream, last chunk. */
static void maybe_end(struct client *c)
{
    if (!c->running || c->out_fd >= 0 || c->err_fd >= 0 || !c->exited) return;
    char buf[512], json[256];
    int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 128 + WTERMSIG(c->status);
    int jn = snprintf(json, sizeof json,
                      "{\"event\": {\"end\": {\"exitCode\": %d, \"exited\": true, \"status\": \"exit status %d\"}}}",
                      code, code);
    size_t h = chunk_env(buf, 0, json, (size_t)jn);
    h += chunk_env(buf + h, 2, "{}", 2);
    memcpy(buf + h, "0\r\n\r\n", 5);
    send_all(c->fd, buf, h + 5);
    c->running = 0;
}

static void on_output(struct client *c, int *fd, const char *field)
{
    static unsigned char raw[OUT_CHUNK];
    static char json[OUT_CHUNK * 4 / 3 + 128], out[OUT_CHUNK * 4 / 3 + 160];
    ssize_t r = read(*fd, raw, sizeof raw);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r <= 0) {
        unwatch_close(fd);
        maybe_end(c);
        return;
    }
    size_t jn = (size_t)sprintf(json, "{\"event\": {\"data\": {\"%s\": \"", field);
    jn += b64(json + jn, raw, (size_t)r);
    memcpy(json + jn, "\"}}}", 4);
    send_all(c->fd, out, chunk_env(out, 0, json, jn + 4));
}

static void on_exit_fd(struct client *c)
{
    if (waitpid(c->pid, &c->status, WNOHANG) != c->pid) return;
    c->exited = 1;
    unwatch_close(&c->pid_fd);
    maybe_end(c);
}

static void drop(struct client *c)
{
    unwatch_close(&c->out_fd);
    unwatch_close(&c->err_fd);
    unwatch_close(&c->pid_fd);
    if (c->running) waitpid(c->pid, NULL, 0);
    c->running = 0;
    unwatch_close(&c->fd);
    c->next_dead = dead; /* freed after this turn's events: one may name it */
    dead = c;
}

/* A whole request in c->in: serve it, keep what follows. Returns 0 when
 * more bytes are needed, 1 when one was served, -1 to drop the client. */
static int on_request(struct client *c)
{
    char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
    if (!end) return c->inlen >= HEAD_MAX ? -1 : 0;
    size_t head = (size_t)(end - c->in) + 4, clen = 0;
    char *cl = memmem(c->in, head, "Content-Length:", 15);
    if (cl) clen = strtoul(cl + 15, NULL, 10);
    if (clen > BODY_MAX || clen < 5) return -1;
    if (c->inlen < head + clen) return 0;
    static char store[ARGS_MAX * 4096];
    char *argv[ARGS_MAX];
    if (parse_start(c->in + head + 5, clen - 5, store, argv) < 0) return -1;
    memmove(c->in, c->in + head + clen, c->inlen - head - clen);
    c->inlen -= head + clen;
    start(c, argv);
    return 1;
}

static void on_conn(struct client *c)
{
    ssize_t r = read(c->fd, c->in + c->inlen, sizeof c->in - c->inlen);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r <= 0) {
        drop(c);
        return;
    }
    c->inlen += (size_t)r;
    /* One request at a time, as the bench clients send them. */
    if (!c->running && on_request(c) < 0) drop(c);
}

static struct client *accept_one(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct client *c = calloc(1, sizeof *c);
    if (!c) die("calloc");
    c->fd = fd;
    c->out_fd = c->err_fd = c->pid_fd = -1;
    c->t_conn = (struct tag){K_CONN, c};
    c->t_out = (struct tag){K_OUT, c};
    c->t_err = (struct tag){K_ERR, c};
    c->t_pid = (struct tag){K_PID, c};
    watch(fd, &c->t_conn);
    return c;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ipcfloor IPV4:PORT\n");
        return 2;
    }
    char host[64];
    const char *colon = strrchr(argv[1], ':');
    if (!colon || (size_t)(colon - argv[1]) >= sizeof host) return 2;
    memcpy(host, argv[1], (size_t)(colon - argv[1]));
    host[colon - argv[1]] = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return 2;
    signal(SIGPIPE, SIG_IGN);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 512) < 0) die("listen");
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
    struct tag lt = {K_LISTEN, NULL};
    watch(lfd, &lt);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct tag *t = evs[i].data.ptr;
            struct client *c = t->c;
            if (c && c->fd < 0) continue; /* dropped earlier this turn */
            switch (t->k) {
            case K_LISTEN: while (accept_one(lfd)) {} break;
            case K_CONN: on_conn(c); break;
            case K_OUT: on_output(c, &c->out_fd, "stdout"); break;
            case K_ERR: on_output(c, &c->err_fd, "stderr"); break;
            case K_PID: on_exit_fd(c); break;
            }
        }
        while (dead) {
            struct client *c = dead;
            dead = c->next_dead;
            free(c);
        }
    }
}
