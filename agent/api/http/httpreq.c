/*
 * httpreq.c - one request through http-parser (see http/httpreq.h).
 *
 * http-parser calls back with pieces of the target, of each header name and
 * value, and of the body, split wherever the reads were split. The pieces are
 * appended to one bounded text buffer, so the result does not depend on the
 * split. The parser is paused when the head is complete and when the request
 * is, so httpreq_feed returns at those two points with the bytes consumed so
 * far: the connection decides in between, and never parses a second request
 * before the first is answered.
 *
 * Transfer-Encoding (RFC 9112 section 6): http-parser frames a body as
 * chunked when any Transfer-Encoding line ends with "chunked", whatever the
 * other codings and lines say. The codings are therefore checked here,
 * every line in order, before any body byte is parsed: a request whose
 * last coding is not chunked (or that applies chunked twice, or is
 * HTTP/1.0) cannot be framed (400); chunked after another coding is a
 * coding this server does not implement (501).
 *
 * A buffered body draws its memory from the process's budget (core/budget.h):
 * the whole of a Content-Length at the head, so that of many large bodies
 * arriving at once some are taken whole and the rest refused at once (429),
 * rather than all growing together until each is refused; a chunked one as
 * it grows. Up to BODY_KEEP, what a connection keeps between requests, it
 * draws whatever the budget says: a small request (a signal to a runaway
 * process) is never refused for memory.
 */
#include "agent/api/http/httpreq.h"
#include "agent/core/budget.h"
#include "agent/core/protocol.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

enum { PH_HEAD, PH_BODY, PH_DONE, PH_ERROR };
enum { PIECE_TARGET, PIECE_NAME, PIECE_VALUE };

/* Room for the NUL after the target and after each name and value. */
#define TEXT_MAX (SERVE_HEAD_MAX + 2 * HTTPREQ_MAX_HEADERS + 2)
/* A body buffer larger than this is given back between requests. */
#define BODY_KEEP (64u * 1024u)

static int fail(struct httpreq *r, int status, const char *why)
{
    if (!r->status) {
        r->status = status;
        r->why = why;
    }
    return -1;
}

static int add_text(struct httpreq *r, const char *p, size_t n)
{
    if (buf_append(&r->text, p, n) < 0) return fail(r, 431, "request head too large");
    return 0;
}

/* End the target or the current header: NUL-terminate what was collected
 * and trim the blanks around a value. */
static int end_piece(struct httpreq *r)
{
    if (r->piece == PIECE_TARGET) return add_text(r, "", 1);
    struct httpreq_hdr *h = &r->hdr[r->nhdr - 1];
    if (r->piece == PIECE_NAME) {
        if (add_text(r, "", 1) < 0) return -1;
        h->value = (uint32_t)r->text.len;
        h->value_len = 0;
    }
    const char *v = r->text.data + h->value;
    while (h->value_len && (v[h->value_len - 1] == ' ' || v[h->value_len - 1] == '\t'))
        h->value_len--;
    while (h->value_len && (*v == ' ' || *v == '\t')) {
        v++;
        h->value++;
        h->value_len--;
    }
    r->text.len = h->value + h->value_len;
    return add_text(r, "", 1);
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    return add_text(p->data, at, n);
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct httpreq *r = p->data;
    if (r->phase != PH_HEAD) return 0; /* a trailer after a chunked body: ignored */
    if (r->piece != PIECE_NAME) {
        if (end_piece(r) < 0) return -1;
        if (r->nhdr == HTTPREQ_MAX_HEADERS) return fail(r, 431, "too many header lines");
        struct httpreq_hdr *h = &r->hdr[r->nhdr++];
        h->name = (uint32_t)r->text.len;
        h->name_len = 0;
        r->piece = PIECE_NAME;
    }
    r->hdr[r->nhdr - 1].name_len += (uint32_t)n;
    return add_text(r, at, n);
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct httpreq *r = p->data;
    if (r->phase != PH_HEAD) return 0;
    struct httpreq_hdr *h = &r->hdr[r->nhdr - 1];
    if (r->piece == PIECE_NAME) {
        if (add_text(r, "", 1) < 0) return -1;
        h->value = (uint32_t)r->text.len;
        h->value_len = 0;
        r->piece = PIECE_VALUE;
    }
    h->value_len += (uint32_t)n;
    return add_text(r, at, n);
}

/* Each coding of one Transfer-Encoding value, in order: how many there
 * are, how many are chunked, and whether the last one is. */
static void te_codings(const char *v, unsigned *n, unsigned *chunked, int *last_chunked)
{
    while (*v) {
        v += strspn(v, " \t");
        size_t len = strcspn(v, ",");
        size_t k = len;
        while (k && (v[k - 1] == ' ' || v[k - 1] == '\t')) k--;
        if (k) { /* an empty list element is allowed, and nothing */
            int is_chunked = k == 7 && !strncasecmp(v, "chunked", 7);
            (*n)++;
            *chunked += (unsigned)is_chunked;
            *last_chunked = is_chunked;
        }
        v += len;
        if (*v == ',') v++;
    }
}

/* The Transfer-Encoding lines (see the top). Returns 0, or -1 failed. */
static int check_te(struct httpreq *r)
{
    unsigned lines = 0, n = 0, chunked = 0;
    int last_chunked = 0;
    for (unsigned i = 0; i < r->nhdr; i++) {
        if (strcasecmp(r->text.data + r->hdr[i].name, "Transfer-Encoding") != 0) continue;
        lines++;
        te_codings(r->text.data + r->hdr[i].value, &n, &chunked, &last_chunked);
    }
    if (!lines) return 0;
    if (!r->http11) return fail(r, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (!last_chunked || chunked > 1 || !(r->p.flags & F_CHUNKED))
        return fail(r, 400, "Transfer-Encoding does not end with one chunked");
    if (n > 1) return fail(r, 501, "transfer coding not implemented (only chunked)");
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct httpreq *r = p->data;
    if (end_piece(r) < 0) return -1;
    if (p->http_major != 1) return fail(r, 505, "only HTTP/1.0 and HTTP/1.1 are served");
    char *q = memchr(r->text.data, '?', strlen(r->text.data));
    if (q) {
        *q = '\0';
        r->query = (uint32_t)(q + 1 - r->text.data);
    }
    r->keep_alive = http_should_keep_alive(p);
    r->http11 = p->http_minor >= 1;
    if (check_te(r) < 0) return -1;
    r->phase = PH_BODY;
    http_parser_pause(p, 1);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct httpreq *r = p->data;
    r->body_len += n;
    if (r->sink) {
        int st = r->sink(r->sink_ctx, at, n);
        return st ? fail(r, st, "request body refused") : 0;
    }
    if (r->body.len + n <= BODY_KEEP) buf_reserve_force(&r->body, n);
    if (buf_append(&r->body, at, n) == 0) return 0;
    if (buf_over(&r->body, n)) return fail(r, 413, "request body too large");
    return fail(r, 429, SERVE_BUDGET_SPENT);
}

static int on_message_complete(http_parser *p)
{
    struct httpreq *r = p->data;
    r->phase = PH_DONE;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void httpreq_init(struct httpreq *r)
{
    memset(r, 0, sizeof *r);
    buf_init(&r->text, TEXT_MAX);
    buf_init_budget(&r->body, SERVE_BODY_MAX);
    /* Counts the request line and the headers, every byte: the head bound. */
    http_parser_set_max_header_size(SERVE_HEAD_MAX);
    httpreq_reset(r);
}

void httpreq_free(struct httpreq *r)
{
    buf_free(&r->text);
    buf_free(&r->body);
}

void httpreq_reset(struct httpreq *r)
{
    http_parser_init(&r->p, HTTP_REQUEST);
    r->p.data = r;
    r->phase = PH_HEAD;
    r->piece = PIECE_TARGET;
    r->nhdr = 0;
    r->query = 0;
    r->keep_alive = r->http11 = 0;
    r->status = 0;
    r->why = NULL;
    r->sink = NULL;
    r->sink_ctx = NULL;
    r->body_len = 0;
    buf_reset(&r->text);
    if (r->body.cap > BODY_KEEP) buf_free(&r->body);
    buf_reset(&r->body);
    r->body.max = SERVE_BODY_MAX;
}

static int status_of(enum http_errno e)
{
    return e == HPE_HEADER_OVERFLOW ? 431 : 400;
}

enum httpreq_event httpreq_feed(struct httpreq *r, const char *p, size_t n, size_t *used)
{
    *used = 0;
    if (r->phase == PH_ERROR) return HTTPREQ_ERROR;
    if (r->phase == PH_DONE) return HTTPREQ_DONE;
    if (n == 0) return HTTPREQ_MORE;
    *used = http_parser_execute(&r->p, &settings, p, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
    if (e == HPE_PAUSED) {
        http_parser_pause(&r->p, 0);
        return r->phase == PH_DONE ? HTTPREQ_DONE : HTTPREQ_HEAD;
    }
    if (e != HPE_OK) {
        fail(r, status_of(e), http_errno_description(e));
        r->phase = PH_ERROR;
        return HTTPREQ_ERROR;
    }
    return HTTPREQ_MORE;
}

int httpreq_body_buffer(struct httpreq *r, size_t max)
{
    r->body.max = max;
    return httpreq_body_check(r);
}

int httpreq_body_check(struct httpreq *r)
{
    uint64_t len = r->p.content_length;
    if (r->sink || (r->p.flags & F_CHUNKED) || len == ULLONG_MAX || len == 0) return 0;
    if (len > r->body.max) {
        fail(r, 413, "request body too large");
        r->phase = PH_ERROR;
        return -1;
    }
    /* The whole body's memory now (see the top), and not a byte more. */
    r->body.max = (size_t)len;
    int rc = len <= BODY_KEEP ? buf_reserve_force(&r->body, (size_t)len) : buf_reserve(&r->body, (size_t)len);
    if (rc < 0) {
        fail(r, 429, SERVE_BUDGET_SPENT);
        r->phase = PH_ERROR;
        return -1;
    }
    return 0;
}

void httpreq_body_sink(struct httpreq *r, httpreq_body_fn fn, void *ctx)
{
    r->sink = fn;
    r->sink_ctx = ctx;
}

int httpreq_body_expected(const struct httpreq *r)
{
    if (r->phase != PH_BODY) return 0;
    return (r->p.flags & F_CHUNKED) ||
           (r->p.content_length > 0 && r->p.content_length != ULLONG_MAX);
}

int httpreq_status(const struct httpreq *r) { return r->status ? r->status : 400; }
const char *httpreq_why(const struct httpreq *r) { return r->why ? r->why : "malformed request"; }
enum http_method httpreq_method(const struct httpreq *r) { return (enum http_method)r->p.method; }
const char *httpreq_path(const struct httpreq *r) { return r->text.data; }
const char *httpreq_query(const struct httpreq *r) { return r->query ? r->text.data + r->query : ""; }
int httpreq_keep_alive(const struct httpreq *r) { return r->keep_alive; }
int httpreq_http11(const struct httpreq *r) { return r->http11; }
const struct buf *httpreq_body(const struct httpreq *r) { return &r->body; }

unsigned httpreq_header_count(const struct httpreq *r, const char *name)
{
    unsigned k = 0;
    for (unsigned i = 0; i < r->nhdr; i++)
        if (!strcasecmp(r->text.data + r->hdr[i].name, name)) k++;
    return k;
}

const char *httpreq_header(const struct httpreq *r, const char *name)
{
    const char *v = NULL;
    for (unsigned i = 0; i < r->nhdr; i++) {
        if (strcasecmp(r->text.data + r->hdr[i].name, name) != 0) continue;
        if (v) return NULL; /* twice: ambiguous, so absent */
        v = r->text.data + r->hdr[i].value;
    }
    return v;
}

void httpreq_header_at(const struct httpreq *r, unsigned i, const char **name, const char **value)
{
    *name = r->text.data + r->hdr[i].name;
    *value = r->text.data + r->hdr[i].value;
}

int httpreq_expects_continue(const struct httpreq *r)
{
    const char *e = httpreq_header(r, "Expect");
    return r->http11 && e && !strcasecmp(e, "100-continue");
}
