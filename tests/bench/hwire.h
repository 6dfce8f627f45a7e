/*
 * hwire.h - the wire half of hclient (tests/bench/hclient.c): a push parser
 * of HTTP/1.1 responses (Content-Length, chunked, to the close), Connect's
 * 5-byte envelopes, the base64 of Start's output, blocking connections.
 * libc only; a bench tool, not part of the agent.
 */
#ifndef HWIRE_H
#define HWIRE_H

#include <stddef.h>
#include <stdint.h>

#define RBUF (256 << 10) /* one read */
#define MSG_MAX (64 << 20)

/* A response's states: R_DONE once it is whole. */
enum { R_HEAD, R_LEN, R_CSIZE, R_CDATA, R_CCRLF, R_TRAILER, R_EOF, R_DONE };

typedef void body_fn(void *ctx, const char *p, size_t n);

struct resp {
    int state, status, keep;
    long long clen, left, bytes;
    char head[16384], line[128], enc[32];
    size_t hlen, llen;
    body_fn *body;
    void *ctx;
};

/* One connection read by blocking reads; bytes past a response are kept. */
struct conn {
    int fd;
    char *buf;
    size_t off, len;
};

/* One Start (or Connect) stream: envelopes in, events counted. */
struct run {
    unsigned char hdr[5];
    int hn, flags;
    uint32_t len;
    size_t got, cap;
    char *msg;
    int pid, started, ended, finished, exit_code, announce, out_fd;
    long long out, err, msgs;
    double t_start;
    char error[256];
};

double now(void);
void die(const char *fmt, ...);
void on_alarm(int sig);
int dial(const char *addr);               /* IPv4:PORT, TCP_NODELAY */
int send_all(int fd, const char *p, size_t n); /* -1: the peer is gone */

void resp_init(struct resp *r, body_fn *body, void *ctx);
/* Feeds n bytes; returns how many it used (fewer than n only once done). */
size_t resp_feed(struct resp *r, const char *p, size_t n);

void conn_open(struct conn *c, const char *addr);
void read_resp(struct conn *c, struct resp *r); /* blocks until R_DONE */

void b64_init(void);
void run_reset(struct run *r);
/* A body_fn: Connect envelopes into Start's events (struct run). */
void env_feed(void *ctx, const char *p, size_t n);
/* The head and envelope of a Start request for json; returns its length. */
size_t start_request(char *out, size_t cap, const char *json);
/* Prints why a Start did not end well; returns 1 then, else 0. */
int run_failed(const struct resp *rs, const struct run *r);

#endif
