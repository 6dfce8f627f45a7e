/*
 * hwire.c - the wire half of hclient (see hwire.h): HTTP/1.1 responses fed
 * as they are read, Connect envelopes, Start's events and their base64.
 */
#define _GNU_SOURCE
#include "hwire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hclient: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void on_alarm(int sig)
{
    static const char m[] = "hclient: time limit reached\n";
    (void)sig;
    if (write(2, m, sizeof m - 1) < 0) _exit(124);
    _exit(124);
}

int dial(const char *addr)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host) die("bad address %s (IPv4:PORT)", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("bad address %s (IPv4:PORT)", addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect %s: %s", addr, strerror(errno));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Returns 0, or -1 when the peer is gone (EPIPE, ECONNRESET). */
int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) return -1;
        if (w < 0) die("write: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the response: a push parser, fed whatever was read ------------------ */




void resp_init(struct resp *r, body_fn *body, void *ctx)
{
    r->state = R_HEAD;
    r->status = 0;
    r->keep = 1;
    r->clen = -1;
    r->left = r->bytes = 0;
    r->hlen = r->llen = 0;
    r->enc[0] = '\0';
    r->body = body;
    r->ctx = ctx;
}

/* The value of header NAME in the line at p, or NULL. */
static const char *header(const char *p, const char *name)
{
    size_t n = strlen(name);
    if (strncasecmp(p, name, n) || p[n] != ':') return NULL;
    for (p += n + 1; *p == ' ' || *p == '\t'; p++) {
    }
    return p;
}

static void parse_head(struct resp *r)
{
    r->head[r->hlen] = '\0';
    if (sscanf(r->head, "HTTP/1.%*d %d", &r->status) != 1) die("bad status line");
    int chunked = 0;
    for (char *p = strstr(r->head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
        const char *v, *line = p + 2;
        if ((v = header(line, "content-length"))) r->clen = strtoll(v, NULL, 10);
        else if ((v = header(line, "transfer-encoding"))) chunked = !strncasecmp(v, "chunked", 7);
        else if ((v = header(line, "connection"))) r->keep = strncasecmp(v, "close", 5) != 0;
        else if ((v = header(line, "content-encoding")))
            snprintf(r->enc, sizeof r->enc, "%.*s", (int)strcspn(v, "\r"), v);
    }
    if (r->status == 204 || r->status == 304 || r->status / 100 == 1) r->state = R_DONE;
    else if (chunked) r->state = R_CSIZE;
    else if (r->clen >= 0) r->state = r->clen ? R_LEN : R_DONE, r->left = r->clen;
    else r->state = R_EOF, r->keep = 0;
}

/* Feeds n bytes; returns how many it used (fewer than n only once done). */
size_t resp_feed(struct resp *r, const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && r->state != R_DONE) {
        if (r->state == R_HEAD) {
            size_t room = sizeof r->head - 1 - r->hlen, k = n - i < room ? n - i : room;
            size_t from = r->hlen > 3 ? r->hlen - 3 : 0, before = r->hlen;
            if (!room) die("response head too long");
            memcpy(r->head + r->hlen, p + i, k);
            r->hlen += k;
            char *e = memmem(r->head + from, r->hlen - from, "\r\n\r\n", 4);
            if (!e) {
                i += k;
                continue;
            }
            r->hlen = (size_t)(e + 4 - r->head);
            i += r->hlen - before;
            parse_head(r);
        } else if (r->state == R_LEN || r->state == R_CDATA || r->state == R_EOF) {
            size_t k = n - i;
            if (r->state != R_EOF && (long long)k > r->left) k = (size_t)r->left;
            r->body(r->ctx, p + i, k);
            r->bytes += (long long)k;
            i += k;
            if (r->state != R_EOF && !(r->left -= (long long)k)) r->state = r->state == R_LEN ? R_DONE : R_CCRLF;
        } else { /* a chunk-size line, the CRLF after a chunk, a trailer line */
            char c = p[i++];
            if (r->llen >= sizeof r->line - 1) die("chunk line too long");
            r->line[r->llen++] = c;
            if (c != '\n') continue;
            r->line[r->llen] = '\0';
            if (r->state == R_CSIZE) {
                r->left = strtoll(r->line, NULL, 16);
                r->state = r->left ? R_CDATA : R_TRAILER;
            } else if (r->state == R_CCRLF) {
                r->state = R_CSIZE;
            } else if (r->llen <= 2) {
                r->state = R_DONE;
            }
            r->llen = 0;
        }
    }
    return i;
}


void conn_open(struct conn *c, const char *addr)
{
    c->fd = dial(addr);
    c->off = c->len = 0;
    if (!c->buf && !(c->buf = malloc(RBUF))) die("out of memory");
}

void read_resp(struct conn *c, struct resp *r)
{
    for (;;) {
        if (c->off < c->len) {
            c->off += resp_feed(r, c->buf + c->off, c->len - c->off);
            if (r->state == R_DONE) return;
            continue;
        }
        ssize_t k = read(c->fd, c->buf, RBUF);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) die("read: %s", strerror(errno));
        if (k == 0 && r->state == R_EOF) {
            r->state = R_DONE;
            return;
        }
        if (k == 0) die("the connection closed in the middle of a response (state %d)", r->state);
        c->off = 0;
        c->len = (size_t)k;
    }
}

/* ---- Connect envelopes and Start's messages ------------------------------ */

static unsigned char B64[256]; /* 0..63 a digit, 64 '=', 65 '"', 66 '\\', 255 other */
static uint16_t B64P[65536];   /* two digits: their 12 bits, or 0xffff */

void b64_init(void)
{
    const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(B64, 255, sizeof B64);
    for (int i = 0; i < 64; i++) B64[(unsigned char)a[i]] = (unsigned char)i;
    B64['='] = 64;
    B64['"'] = 65;
    B64['\\'] = 66;
    for (int x = 0; x < 256; x++)
        for (int y = 0; y < 256; y++)
            B64P[x << 8 | y] = B64[x] < 64 && B64[y] < 64 ? (uint16_t)(B64[x] << 6 | B64[y]) : 0xffff;
}

static unsigned char b64out[3 << 16];

/* 24 bits as 3 bytes at p (and one spare byte after them, overwritten later). */
static void put3(unsigned char *p, uint32_t v)
{
    v = __builtin_bswap32(v << 8);
    memcpy(p, &v, 4);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

static int avx2 = -1;

static int have_avx2(void)
{
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

/* 32 digits (no padding, no escape) into 24 bytes at o (32 written);
 * 0 when one of them is not a digit (the caller goes on a digit at a
 * time). The SDKs decode with their platform's decoder, which is native
 * code of this kind (Node's simdutf): a client decoding a byte at a time
 * costs more than the agent and hides it. */
__attribute__((target("avx2"))) static int dec32(const unsigned char *s, unsigned char *o)
{
    __m256i c = _mm256_loadu_si256((const __m256i *)s);
    __m256i up = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8('A' - 1)), _mm256_cmpgt_epi8(_mm256_set1_epi8('Z' + 1), c));
    __m256i lo = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8('a' - 1)), _mm256_cmpgt_epi8(_mm256_set1_epi8('z' + 1), c));
    __m256i dg = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8('0' - 1)), _mm256_cmpgt_epi8(_mm256_set1_epi8('9' + 1), c));
    __m256i pl = _mm256_cmpeq_epi8(c, _mm256_set1_epi8('+')), sl = _mm256_cmpeq_epi8(c, _mm256_set1_epi8('/'));
    __m256i ok = _mm256_or_si256(_mm256_or_si256(up, lo), _mm256_or_si256(dg, _mm256_or_si256(pl, sl)));
    if (_mm256_movemask_epi8(ok) != -1) return 0;
    __m256i sh = _mm256_or_si256(_mm256_and_si256(up, _mm256_set1_epi8(-65)), _mm256_and_si256(lo, _mm256_set1_epi8(-71)));
    sh = _mm256_or_si256(sh, _mm256_and_si256(dg, _mm256_set1_epi8(4)));
    sh = _mm256_or_si256(sh, _mm256_or_si256(_mm256_and_si256(pl, _mm256_set1_epi8(19)), _mm256_and_si256(sl, _mm256_set1_epi8(16))));
    __m256i v = _mm256_add_epi8(c, sh); /* 6 bits a byte */
    v = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
    v = _mm256_madd_epi16(v, _mm256_set1_epi32(0x00011000)); /* 24 bits a lane */
    v = _mm256_shuffle_epi8(v, _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5,
                                                4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)o, v);
    return 1;
}
#endif

/* Decodes the base64 at s up to its closing quote (or end); returns the
 * byte count. The bytes are written to fd when fd >= 0, else dropped. */
static long long b64_decode(const unsigned char *s, const unsigned char *end, int fd)
{
    long long total = 0;
    size_t o = 0;
    uint32_t acc = 0;
    int k = 0;
    for (;;) {
        if (o > sizeof b64out - 16) {
            if (fd >= 0 && write(fd, b64out, o) != (ssize_t)o) die("write: %s", strerror(errno));
            total += (long long)o;
            o = 0;
        }
#if defined(__x86_64__) && defined(__GNUC__)
        if (avx2 < 0) avx2 = have_avx2();
        while (avx2 && !k && end - s >= 32 && o <= sizeof b64out - 32 && dec32(s, b64out + o)) {
            o += 24;
            s += 32;
        }
#endif
        /* The fast path: 8 digits (6 bytes) a turn, two digits a lookup. */
        while (!k && end - s >= 8 && o <= sizeof b64out - 16) {
            uint32_t a = B64P[s[0] << 8 | s[1]], b = B64P[s[2] << 8 | s[3]];
            uint32_t c = B64P[s[4] << 8 | s[5]], d = B64P[s[6] << 8 | s[7]];
            if ((a | b | c | d) & 0xf000) break;
            put3(b64out + o, a << 12 | b);
            put3(b64out + o + 3, c << 12 | d);
            o += 6;
            s += 8;
        }
        if (o > sizeof b64out - 16) continue;
        if (s >= end) break;
        unsigned v = B64[*s++]; /* one digit at a time near the end */
        if (v == 66) continue;  /* an escaped "\/" */
        if (v >= 64) break;     /* '=', the closing quote */
        acc = acc << 6 | v;
        if (++k == 4) {
            put3(b64out + o, acc);
            o += 3;
            k = 0;
            acc = 0;
        }
    }
    if (k == 2) b64out[o++] = (unsigned char)(acc >> 4);
    if (k == 3) {
        b64out[o++] = (unsigned char)(acc >> 10);
        b64out[o++] = (unsigned char)(acc >> 2);
    }
    if (fd >= 0 && o && write(fd, b64out, o) != (ssize_t)o) die("write: %s", strerror(errno));
    return total + (long long)o;
}

/* After "KEY" and its colon (JSON may have blanks there), or NULL. */
static const char *jval(const char *m, size_t n, const char *key)
{
    const char *e = m + n, *p = memmem(m, n, key, strlen(key));
    if (!p) return NULL;
    for (p += strlen(key); p < e && (*p == ' ' || *p == ':'); p++) {
    }
    return p < e ? p : NULL;
}


void run_reset(struct run *r)
{
    r->hn = 0;
    r->got = 0;
    r->pid = r->started = r->ended = r->finished = r->exit_code = 0;
    r->out = r->err = r->msgs = 0;
    r->error[0] = '\0';
}

static void on_msg(struct run *r, int flags, const char *m, size_t n)
{
    const char *v;
    if (flags & 2) {
        r->finished = 1;
        if ((v = jval(m, n, "\"error\""))) snprintf(r->error, sizeof r->error, "%.*s", (int)(m + n - v), v);
        return;
    }
    r->msgs++;
    if (memmem(m, n, "\"data\"", 6)) {
        int err = 0;
        if (!(v = jval(m, n, "\"stdout\"")) && (err = 1) && !(v = jval(m, n, "\"stderr\"")))
            v = jval(m, n, "\"pty\"");
        if (v && *v == '"') {
            long long k = b64_decode((const unsigned char *)v + 1, (const unsigned char *)m + n, err ? -1 : r->out_fd);
            *(err ? &r->err : &r->out) += k;
        }
    } else if (memmem(m, n, "\"start\"", 7)) {
        r->started = 1;
        r->t_start = now();
        if ((v = jval(m, n, "\"pid\""))) r->pid = atoi(v);
        if (r->announce) {
            printf("{\"pid\": %d}\n", r->pid);
            fflush(stdout);
        }
    } else if (memmem(m, n, "\"end\"", 5)) {
        r->ended = 1;
        if ((v = jval(m, n, "\"exitCode\""))) r->exit_code = atoi(v);
    }
}

void env_feed(void *ctx, const char *p, size_t n)
{
    struct run *r = ctx;
    while (n) {
        if (r->hn < 5) {
            r->hdr[r->hn++] = (unsigned char)*p++;
            n--;
            if (r->hn < 5) continue;
            r->flags = r->hdr[0];
            r->len = (uint32_t)r->hdr[1] << 24 | (uint32_t)r->hdr[2] << 16 | (uint32_t)r->hdr[3] << 8 | r->hdr[4];
            if (r->len > MSG_MAX) die("envelope of %u bytes", r->len);
            r->got = 0;
            if (r->len) continue;
        } else if (!r->got && n >= r->len) { /* whole in this piece: no copy */
            on_msg(r, r->flags, p, r->len);
            p += r->len;
            n -= r->len;
        } else {
            if (r->cap < r->len && !(r->msg = realloc(r->msg, r->cap = r->len))) die("out of memory");
            size_t k = r->len - r->got < n ? r->len - r->got : n;
            memcpy(r->msg + r->got, p, k);
            r->got += k;
            p += k;
            n -= k;
            if (r->got < r->len) continue;
            on_msg(r, r->flags, r->msg, r->len);
        }
        r->hn = 0;
        r->got = 0;
    }
}

/* The head and envelope of a Start request for JSON. */
size_t start_request(char *out, size_t cap, const char *json)
{
    size_t jn = strlen(json);
    int h = snprintf(out, cap,
                     "POST /process.Process/Start HTTP/1.1\r\nHost: sandbox\r\nUser-Agent: sandbox-agent-bench\r\n"
                     "Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     jn + 5);
    if (h < 0 || (size_t)h + 5 + jn > cap) die("request too long");
    unsigned char *e = (unsigned char *)out + h;
    e[0] = 0;
    e[1] = (unsigned char)(jn >> 24), e[2] = (unsigned char)(jn >> 16), e[3] = (unsigned char)(jn >> 8);
    e[4] = (unsigned char)jn;
    memcpy(e + 5, json, jn);
    return (size_t)h + 5 + jn;
}

/* Prints the failure of a run that did not end well; returns 1 if it did not. */
int run_failed(const struct resp *rs, const struct run *r)
{
    if (rs->status == 200 && r->started && r->ended && r->finished && !r->error[0]) return 0;
    printf("{\"status\": %d, \"started\": %d, \"ended\": %d, \"finished\": %d, \"error\": \"%.200s\"}\n", rs->status,
           r->started, r->ended, r->finished, r->error[0] ? "see stderr" : "");
    if (r->error[0]) fprintf(stderr, "hclient: the stream ended with %s\n", r->error);
    return 1;
}
