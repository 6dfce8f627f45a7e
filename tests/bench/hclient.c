/*
 * hclient.c - the client of make bench's serve rows (bench_serve_*.py): a
 * small HTTP/1.1 client speaking Connect's JSON codec as E2B's SDKs do, so
 * that the agent's numbers are the agent's (node's or Python's own cost hides
 * it). One request at a time per kept-alive connection (TCP_NODELAY, as
 * undici); server streams are 5-byte envelopes in a chunked body, and the
 * output's base64 is decoded, as the SDKs do. libc only. Not part of the agent.
 *
 *   hclient [-t SECS] start [-w W] ADDR N JSON
 *       N Starts (after W warm-up ones, default 10) of the request JSON on one
 *       connection: median and p90 ms to the start event and to the stream's
 *       end, stdout bytes decoded.
 *   hclient [-t SECS] stream [-o FILE] ADDR JSON
 *       one Start; prints {"pid"} at its start event, then stdout bytes
 *       decoded, seconds, the exit code. -o writes the stdout to FILE.
 *   hclient [-t SECS] req [-X METHOD] [-H HEADER]... [-d BODY | -B BYTES]
 *                         [-o FILE] [-c STRING] [-n N] [-w W] ADDR TARGET
 *       any request N times on one connection (body: -d's text, or -B BYTES
 *       from a 1 MiB buffer); status, body bytes (de-chunked, not inflated),
 *       Content-Encoding, min/median/p90 ms; -o writes the last body to FILE,
 *       -c counts STRING in it.
 *   hclient [-t SECS] swarm ADDR CONNS SECS JSON
 *       CONNS connections (one epoll loop), each doing Start JSON -> end
 *       again and again for SECS seconds: streams completed per second.
 *
 * ADDR is IPv4:PORT. Each command prints one JSON line (stream: two) and
 * exits 0; 2 when the answer was not 200 (its status and body are printed).
 * -t bounds the whole run (default 600 s): past it, exit 124. The wire
 * (HTTP, envelopes, base64) is hwire.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "hwire.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

static int cmd_start(const char *addr, int n, int warm, const char *json)
{
    static char req[65536];
    size_t rn = start_request(req, sizeof req, json);
    double *ts = calloc((size_t)n + 1, sizeof *ts), *te = calloc((size_t)n + 1, sizeof *te);
    struct conn c = {0};
    struct run r = {.out_fd = -1};
    struct resp rs;
    long long out = 0, err = 0;
    conn_open(&c, addr);
    for (int i = 0; i < warm + n; i++) {
        run_reset(&r);
        resp_init(&rs, env_feed, &r);
        double t0 = now();
        if (send_all(c.fd, req, rn) < 0) die("the agent closed the connection");
        read_resp(&c, &rs);
        double t1 = now();
        if (run_failed(&rs, &r)) return 2;
        if (i >= warm) {
            ts[i - warm] = (r.t_start - t0) * 1000;
            te[i - warm] = (t1 - t0) * 1000;
            out += r.out;
            err += r.err;
        }
        if (!rs.keep) {
            close(c.fd);
            conn_open(&c, addr);
        }
    }
    printf("{\"n\": %d, \"start_med_ms\": %.4f, \"start_p90_ms\": %.4f, \"end_med_ms\": %.4f, \"end_p90_ms\": %.4f, "
           "\"stdout_bytes\": %lld, \"stderr_bytes\": %lld}\n",
           n, pct(ts, n, 0.5), pct(ts, n, 0.9), pct(te, n, 0.5), pct(te, n, 0.9), out, err);
    return 0;
}

static int cmd_stream(const char *addr, const char *json, const char *out)
{
    static char req[65536];
    size_t rn = start_request(req, sizeof req, json);
    struct conn c = {0};
    struct run r = {.out_fd = -1, .announce = 1};
    if (out && (r.out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        die("%s: %s", out, strerror(errno));
    struct resp rs;
    conn_open(&c, addr);
    run_reset(&r);
    resp_init(&rs, env_feed, &r);
    double t0 = now();
    if (send_all(c.fd, req, rn) < 0) die("the agent closed the connection");
    read_resp(&c, &rs);
    double dt = now() - t0;
    if (rs.status != 200 || !r.finished || r.error[0]) return run_failed(&rs, &r) ? 2 : 0;
    printf("{\"bytes\": %lld, \"stderr_bytes\": %lld, \"seconds\": %.6f, \"messages\": %lld, \"ended\": %d, "
           "\"exit_code\": %d, \"wire_bytes\": %lld}\n",
           r.out, r.err, dt, r.msgs, r.ended, r.exit_code, rs.bytes);
    return 0;
}

/* ---- any request ---------------------------------------------------------- */

struct sink {
    int fd;
    char *keep; /* the body, for -c */
    size_t len, cap, flen;
    char first[512]; /* the body's start, for an error */
};

static void sink_body(void *ctx, const char *p, size_t n)
{
    struct sink *s = ctx;
    size_t f = n < sizeof s->first - 1 - s->flen ? n : sizeof s->first - 1 - s->flen;
    memcpy(s->first + s->flen, p, f);
    s->first[s->flen += f] = '\0';
    if (s->fd >= 0 && write(s->fd, p, n) != (ssize_t)n) die("write: %s", strerror(errno));
    if (!s->keep) return;
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        if (!(s->keep = realloc(s->keep, s->cap))) die("out of memory");
    }
    memcpy(s->keep + s->len, p, n);
    s->len += n;
    s->keep[s->len] = '\0';
}

static int cmd_req(int argc, char **argv)
{
    const char *method = NULL, *data = NULL, *out = NULL, *count = NULL;
    char hdrs[8192] = "";
    size_t hl = 0;
    long long bytes = -1;
    int n = 1, warm = 0, o;
    while ((o = getopt(argc, argv, "+X:H:d:B:o:c:n:w:")) != -1) {
        if (o == 'X') method = optarg;
        else if (o == 'H') hl += (size_t)snprintf(hdrs + hl, sizeof hdrs - hl, "%s\r\n", optarg);
        else if (o == 'd') data = optarg;
        else if (o == 'B') bytes = atoll(optarg);
        else if (o == 'o') out = optarg;
        else if (o == 'c') count = optarg;
        else if (o == 'n') n = atoi(optarg);
        else if (o == 'w') warm = atoi(optarg);
        else return -1;
        if (hl >= sizeof hdrs) die("too many headers");
    }
    if (argc - optind != 2 || n < 1) return -1;
    const char *addr = argv[optind], *target = argv[optind + 1];
    if (data) bytes = (long long)strlen(data);
    if (!method) method = bytes >= 0 ? "POST" : "GET";
    char head[16384];
    int hn = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: sandbox\r\nUser-Agent: sandbox-agent-bench\r\n%s", method,
                      target, hdrs);
    if (bytes >= 0) hn += snprintf(head + hn, sizeof head - (size_t)hn, "Content-Length: %lld\r\n", bytes);
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "\r\n");
    if (hn >= (int)sizeof head) die("request head too long");
    static char piece[1 << 20];
    memset(piece, 'x', sizeof piece);
    double *t = calloc((size_t)n, sizeof *t);
    struct conn c = {0};
    struct sink s = {.fd = -1};
    struct resp rs;
    conn_open(&c, addr);
    for (int i = 0; i < warm + n; i++) {
        int last = i == warm + n - 1;
        if (last && out && (s.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
            die("%s: %s", out, strerror(errno));
        s.len = s.flen = 0;
        if (count && !s.keep && !(s.keep = malloc(s.cap = 1 << 20))) die("out of memory");
        resp_init(&rs, sink_body, &s);
        double t0 = now();
        int gone = send_all(c.fd, head, (size_t)hn);
        if (!gone && data) gone = send_all(c.fd, data, (size_t)bytes);
        for (long long left = data ? 0 : bytes; !gone && left > 0; left -= (long long)sizeof piece)
            gone = send_all(c.fd, piece, left < (long long)sizeof piece ? (size_t)left : sizeof piece);
        read_resp(&c, &rs);
        if (i >= warm) t[i - warm] = (now() - t0) * 1000;
        if (s.fd >= 0) close(s.fd);
        s.fd = -1;
        if (rs.status / 100 != 2) {
            printf("{\"status\": %d, \"bytes\": %lld}\n", rs.status, rs.bytes);
            fprintf(stderr, "hclient: %s %s: %d %s\n", method, target, rs.status, s.first);
            return 2;
        }
        if (!rs.keep || gone) {
            close(c.fd);
            conn_open(&c, addr);
        }
    }
    long long hits = 0;
    for (const char *p = s.keep; count && p && (p = memmem(p, s.len - (size_t)(p - s.keep), count, strlen(count)));
         p++)
        hits++;
    double med = pct(t, n, 0.5), p90 = pct(t, n, 0.9), least = t[0];
    printf("{\"status\": %d, \"bytes\": %lld, \"encoding\": \"%s\", \"n\": %d, \"min_ms\": %.4f, \"med_ms\": %.4f, "
           "\"p90_ms\": %.4f, \"count\": %lld}\n",
           rs.status, rs.bytes, rs.enc, n, least, med, p90, hits);
    return 0;
}

/* ---- many connections at once --------------------------------------------- */

struct peer {
    struct conn c;
    struct resp rs;
    struct run r;
    int idle;
};

static int cmd_swarm(const char *addr, int conns, double secs, const char *json)
{
    static char req[65536];
    size_t rn = start_request(req, sizeof req, json);
    struct peer *ps = calloc((size_t)conns, sizeof *ps);
    int ep = epoll_create1(EPOLL_CLOEXEC), busy = 0;
    long long done = 0, errors = 0;
    if (!ps || ep < 0) die("set-up: %s", strerror(errno));
    double t0 = now(), end = t0 + secs;
    for (int i = 0; i < conns; i++) {
        struct peer *p = &ps[i];
        p->r.out_fd = -1;
        conn_open(&p->c, addr);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, p->c.fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
        run_reset(&p->r);
        resp_init(&p->rs, env_feed, &p->r);
        if (send_all(p->c.fd, req, rn) < 0) die("the agent closed the connection");
        busy++;
    }
    struct epoll_event evs[64];
    while (busy) {
        double t = now();
        if (t > end + 30) die("%d streams did not end within 30 s of the deadline", busy);
        int k = epoll_wait(ep, evs, 64, t < end ? (int)((end - t) * 1000) + 1 : 1000);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) die("epoll_wait: %s", strerror(errno));
        for (int j = 0; j < k; j++) {
            struct peer *p = evs[j].data.ptr;
            struct conn *c = &p->c;
            ssize_t got = read(c->fd, c->buf, RBUF);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) die("read: %s", got ? strerror(errno) : "the agent closed a connection");
            c->off = 0;
            c->len = (size_t)got;
            while (c->off < c->len) {
                c->off += resp_feed(&p->rs, c->buf + c->off, c->len - c->off);
                if (p->rs.state != R_DONE) continue;
                double tn = now();
                if (p->rs.status != 200 || !p->r.ended || !p->r.finished || p->r.error[0]) errors++;
                else if (tn <= end) done++;
                if (!p->rs.keep) die("the agent closed a kept-alive connection");
                run_reset(&p->r);
                resp_init(&p->rs, env_feed, &p->r);
                if (tn > end) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    busy--;
                    break;
                }
                if (send_all(c->fd, req, rn) < 0) die("the agent closed the connection");
            }
        }
    }
    printf("{\"completed\": %lld, \"seconds\": %.3f, \"per_s\": %.2f, \"errors\": %lld, \"conns\": %d}\n", done, secs,
           (double)done / secs, errors, conns);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: hclient [-t SECS] start [-w W] ADDR N JSON\n"
                    "       hclient [-t SECS] stream [-o FILE] ADDR JSON\n"
                    "       hclient [-t SECS] req [-X METHOD] [-H HEADER]... [-d BODY | -B BYTES] [-o FILE]\n"
                    "                             [-c STRING] [-n N] [-w W] ADDR TARGET\n"
                    "       hclient [-t SECS] swarm ADDR CONNS SECS JSON\n");
    return 64;
}

int main(int argc, char **argv)
{
    int limit = 600, i = 1;
    if (argc > 2 && !strcmp(argv[1], "-t")) limit = atoi(argv[2]), i = 3;
    if (i >= argc) return usage();
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)limit);
    b64_init();
    const char *cmd = argv[i++];
    argc -= i - 1;
    argv += i - 1;
    optind = 1;
    if (!strcmp(cmd, "start")) {
        int warm = 10;
        if (argc > 2 && !strcmp(argv[1], "-w")) warm = atoi(argv[2]), argc -= 2, argv += 2;
        if (argc != 4 || atoi(argv[2]) < 1) return usage();
        return cmd_start(argv[1], atoi(argv[2]), warm, argv[3]);
    }
    if (!strcmp(cmd, "stream") && argc == 5 && !strcmp(argv[1], "-o")) return cmd_stream(argv[3], argv[4], argv[2]);
    if (!strcmp(cmd, "stream") && argc == 3) return cmd_stream(argv[1], argv[2], NULL);
    if (!strcmp(cmd, "swarm") && argc == 5 && atoi(argv[2]) > 0) return cmd_swarm(argv[1], atoi(argv[2]), atof(argv[3]), argv[4]);
    if (!strcmp(cmd, "req")) {
        int r = cmd_req(argc, argv);
        return r < 0 ? usage() : r;
    }
    return usage();
}
