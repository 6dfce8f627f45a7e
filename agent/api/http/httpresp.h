/*
 * httpresp.h - the head of an HTTP/1.1 response: status line, the framing
 * headers (Content-Length, chunked or neither), Connection, and the reason
 * phrases. Pure text into an output queue.
 */
#ifndef SA_API_HTTP_HTTPRESP_H
#define SA_API_HTTP_HTTPRESP_H

#include "agent/api/http/outq.h"

#include <stdint.h>

/* How the body of a response is delimited. */
enum httpresp_framing {
    HTTPRESP_LENGTH,  /* Content-Length */
    HTTPRESP_CHUNKED, /* Transfer-Encoding: chunked (HTTP/1.1 streams) */
    HTTPRESP_EOF,     /* neither: the body ends when the connection closes (HTTP/1.0 streams) */
};

struct httpresp {
    int status;
    const char *ctype;  /* Content-Type, or NULL */
    const char *extra;  /* more header lines, each ending "\r\n", or NULL */
    enum httpresp_framing framing;
    uint64_t length;    /* with HTTPRESP_LENGTH */
    int close;          /* Connection: close */
    int keep_alive_10;  /* an HTTP/1.0 client asked to keep the connection */
};

const char *httpresp_reason(int status);
/* Queue the head. Returns 0, or -1 when the queue is full. */
int httpresp_head(struct outq *q, const struct httpresp *h);

#endif
