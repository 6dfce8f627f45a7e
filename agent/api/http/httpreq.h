/*
 * httpreq.h - one HTTP/1.x request as it arrives on a connection, parsed by
 * http-parser: the head (method, target, headers) held within SERVE_HEAD_MAX
 * bytes, then the body as it is decoded (Content-Length or chunked), either
 * buffered up to a bound or handed to a sink. A Transfer-Encoding other than
 * chunked alone is refused at the head: 501 for a coding before chunked,
 * else 400.
 *
 * Pure: bytes in, events out, no sockets and no clock, so the unit tests and
 * the fuzzer drive it with any split of any input. The connection (http/conn.c)
 * owns one and feeds it what it reads.
 */
#ifndef SA_API_HTTP_HTTPREQ_H
#define SA_API_HTTP_HTTPREQ_H

#include "agent/core/buf.h"

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

/* A request with more header lines than this is answered 431. */
#define HTTPREQ_MAX_HEADERS 128

enum httpreq_event {
    HTTPREQ_MORE,  /* every byte consumed: feed more */
    HTTPREQ_HEAD,  /* the head is complete: choose the body's fate, then feed on */
    HTTPREQ_DONE,  /* the request is complete; later bytes belong to another */
    HTTPREQ_ERROR, /* malformed or past a bound: answer httpreq_status() and close */
};

/* Takes body bytes; returns 0, or an HTTP status (>= 400) to refuse them. */
typedef int (*httpreq_body_fn)(void *ctx, const char *p, size_t n);

struct httpreq_hdr {
    uint32_t name, name_len, value, value_len; /* offsets into text */
};

struct httpreq {
    http_parser p;
    int phase;                 /* head, body, done, error (http/httpreq.c) */
    struct buf text;           /* target, then each name and value, each NUL-ended */
    struct httpreq_hdr hdr[HTTPREQ_MAX_HEADERS];
    unsigned nhdr;
    int piece;                 /* what the last text was: target, name or value */
    uint32_t query;            /* offset of the part after '?', 0 if none */
    int keep_alive, http11;    /* read from the head */
    int status;                /* of the error */
    const char *why;           /* of the error, static text */
    struct buf body;           /* the buffered body */
    httpreq_body_fn sink;      /* or its sink */
    void *sink_ctx;
    uint64_t body_len;         /* body bytes seen */
};

void httpreq_init(struct httpreq *r);
void httpreq_free(struct httpreq *r);
/* Forget the request; ready for the next one on the same connection. */
void httpreq_reset(struct httpreq *r);

/* Parse p[0..n): *used is how many bytes belong to this request so far. */
enum httpreq_event httpreq_feed(struct httpreq *r, const char *p, size_t n, size_t *used);

/* After HTTPREQ_HEAD: keep the body, up to max bytes. Returns 0, or -1 as
 * httpreq_body_check. The default is a buffer of SERVE_BODY_MAX. */
int httpreq_body_buffer(struct httpreq *r, size_t max);
/* After HTTPREQ_HEAD and the choice: with no sink, refuse a Content-Length
 * past the buffer's bound now (-1, status 413) rather than after reading,
 * and take its memory from the budget now (-1, status 429, when refused:
 * httpreq.c says which bodies may be). A body read past the head may be
 * refused 429 too, as it grows (a chunked one). */
int httpreq_body_check(struct httpreq *r);
/* After HTTPREQ_HEAD: hand each piece of the body to fn instead. */
void httpreq_body_sink(struct httpreq *r, httpreq_body_fn fn, void *ctx);
/* 1 when the request has a body still to come after its head. */
int httpreq_body_expected(const struct httpreq *r);

int httpreq_status(const struct httpreq *r);
const char *httpreq_why(const struct httpreq *r);

enum http_method httpreq_method(const struct httpreq *r);
/* The target's path (before '?') and its query (after '?', "" if none). */
const char *httpreq_path(const struct httpreq *r);
const char *httpreq_query(const struct httpreq *r);
/* The value of the header `name` (case-insensitive, surrounding blanks
 * trimmed) when it appears exactly once, else NULL. */
const char *httpreq_header(const struct httpreq *r, const char *name);
unsigned httpreq_header_count(const struct httpreq *r, const char *name);
/* Header i (0 .. nhdr-1) in arrival order. */
void httpreq_header_at(const struct httpreq *r, unsigned i, const char **name, const char **value);
int httpreq_keep_alive(const struct httpreq *r);
/* 1 for HTTP/1.1 and later (chunked responses, keep-alive by default). */
int httpreq_http11(const struct httpreq *r);
/* 1 when the client waits for "100 Continue" before sending the body. */
int httpreq_expects_continue(const struct httpreq *r);
const struct buf *httpreq_body(const struct httpreq *r);

#endif
