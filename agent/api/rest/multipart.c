/*
 * multipart.c - streaming multipart/form-data (see rest/multipart.h).
 *
 * The delimiter is CRLF "--" boundary. Parsing starts as if a CRLF had just
 * been read, so a body that begins with "--boundary" (the usual case) finds
 * its first delimiter at once; anything before it is preamble and dropped.
 * A boundary holds no CR, so the delimiter has one CR, its first byte: when
 * a partial match fails, the bytes held back are exactly delim[0..match),
 * handed out from delim itself, and the failing byte can only begin a new
 * match if it is a CR. That keeps the parser to one pass with no buffer.
 */
#include "agent/api/rest/multipart.h"
#include "agent/api/http/hparam.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    ST_PREAMBLE, /* before the first delimiter */
    ST_AFTER,    /* a delimiter: "--" closes, blanks then CRLF open a part */
    ST_CLOSE,    /* "-" of the close delimiter seen */
    ST_LF,       /* the CR after a delimiter seen */
    ST_HEAD,     /* a part's header block */
    ST_BODY,     /* a part's data */
    ST_EPILOGUE, /* after the close delimiter */
    ST_ERROR,
};

/* RFC 2046 bchars. */
static int bchar(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("'()+_,-./:=? ", c));
}

int multipart_init(struct mp *m, const char *boundary, size_t len)
{
    memset(m, 0, sizeof *m);
    buf_init(&m->head, MP_HEAD_MAX);
    if (len == 0 || len > MP_BOUNDARY_MAX || boundary[len - 1] == ' ') return -1;
    for (size_t i = 0; i < len; i++)
        if (!bchar((unsigned char)boundary[i])) return -1;
    memcpy(m->delim, "\r\n--", 4);
    memcpy(m->delim + 4, boundary, len);
    m->dlen = 4 + len;
    m->state = ST_PREAMBLE;
    m->match = 2; /* as if the body followed a CRLF */
    return 0;
}

static void forget_part(struct mp *m)
{
    free(m->name);
    free(m->filename);
    m->name = m->filename = NULL;
    m->filename_len = 0;
    m->filename_nul = 0;
}

void multipart_free(struct mp *m)
{
    forget_part(m);
    buf_free(&m->head);
}

static size_t error(struct mp *m, const char *why, struct multipart_out *o)
{
    m->state = ST_ERROR;
    m->why = why;
    o->ev = MP_ERROR;
    return 0;
}

static char *dup_bytes(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Content-Disposition: form-data; name="..."; filename="..." (or filename*). */
static int disposition(struct mp *m, const char *value)
{
    struct buf v;
    buf_init(&v, MP_HEAD_MAX);
    int r = hparam_get(value, "name", &v);
    if (r >= 0) m->name = dup_bytes(r ? v.data : "", r ? v.len : 0);
    int f = r < 0 ? -1 : hparam_get(value, "filename*", &v);
    if (f == 0) f = hparam_get(value, "filename", &v);
    if (f > 0) {
        m->filename = dup_bytes(v.data, v.len);
        m->filename_len = v.len;
        m->filename_nul = memchr(v.data, '\0', v.len) != NULL;
    }
    buf_free(&v);
    if (r < 0 || f < 0) return -1;
    return m->name && (f <= 0 || m->filename) ? 0 : -1;
}

/* The header block (CRLF-separated lines, the blank line excluded). */
static int parse_head(struct mp *m)
{
    char *p = m->head.data, *end = p + m->head.len;
    forget_part(m);
    while (p < end) {
        char *eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol) eol = end;
        *eol = '\0';
        char *colon = strchr(p, ':');
        if (colon && (size_t)(colon - p) == strlen("Content-Disposition") &&
            !strncasecmp(p, "Content-Disposition", (size_t)(colon - p))) {
            if (m->name || !hparam_type_is(colon + 1, "form-data") || disposition(m, colon + 1) < 0)
                return -1;
        }
        p = eol + 2;
    }
    if (!m->name && !(m->name = dup_bytes("", 0))) return -1;
    return 0;
}

/* ST_HEAD: collect up to the blank line. */
static size_t head(struct mp *m, const char *p, size_t n, struct multipart_out *o)
{
    for (size_t i = 0; i < n; i++) {
        if (buf_putc(&m->head, p[i]) < 0) return error(m, "part headers too large", o);
        size_t len = m->head.len;
        const char *h = m->head.data;
        int blank = (len == 2 && !memcmp(h, "\r\n", 2)) ||
                    (len >= 4 && !memcmp(h + len - 4, "\r\n\r\n", 4));
        if (!blank) continue;
        m->head.len = len == 2 ? 0 : len - 2; /* keep each line's CRLF but the last */
        if (!buf_cstr(&m->head) || parse_head(m) < 0) return error(m, "bad part headers", o);
        buf_reset(&m->head);
        m->state = ST_BODY;
        m->match = 0;
        o->ev = MP_PART;
        return i + 1;
    }
    o->ev = MP_NEED;
    return n;
}

static size_t after(struct mp *m, const char *p, size_t n, size_t max, struct multipart_out *o);

/* A whole delimiter was matched, ending at p[used]: what follows says
 * whether it is one. */
static size_t delimiter(struct mp *m, const char *p, size_t n, size_t used, size_t max,
                        struct multipart_out *o)
{
    m->after_body = m->state == ST_BODY;
    m->state = ST_AFTER;
    m->confirmed = 0;
    m->match = 0;
    m->pad = 0;
    return used + after(m, p + used, n - used, max, o);
}

/* ST_PREAMBLE and ST_BODY: look for the delimiter; in a body, hand out the
 * data before it (at most max). */
static size_t scan(struct mp *m, const char *p, size_t n, size_t max, struct multipart_out *o)
{
    int body = m->state == ST_BODY;
    if (m->held_off < m->held_end) {
        size_t k = m->held_end - m->held_off;
        o->ev = MP_DATA;
        o->data = m->delim + m->held_off;
        o->len = k < max ? k : max;
        m->held_off += o->len;
        return 0;
    }
    size_t i = 0;
    while (i < n) {
        if (m->match > 0) {
            if (p[i] == m->delim[m->match]) {
                i++;
                if (++m->match == m->dlen) return delimiter(m, p, n, i, max, o);
                continue;
            }
            size_t held = m->match; /* not a delimiter: the held bytes are data */
            m->match = 0;
            if (!body) continue;
            m->held_off = 0;
            m->held_end = held;
            o->ev = MP_DATA;
            o->data = m->delim;
            o->len = held < max ? held : max;
            m->held_off = o->len;
            return i;
        }
        const char *cr = memchr(p + i, '\r', n - i);
        size_t end = cr ? (size_t)(cr - p) : n;
        if (end > i && body) {
            o->ev = MP_DATA;
            o->data = p + i;
            o->len = end - i < max ? end - i : max;
            return i + o->len;
        }
        i = end;
        if (cr) {
            m->match = 1;
            i++;
        }
    }
    o->ev = MP_NEED;
    return n;
}

/* "--boundary" followed by something else than "--", blanks or CRLF is
 * not a delimiter (a boundary that prefixes the data, as Go's reader takes
 * it): its bytes are data again, and c (at p[i]) is looked at anew. */
static size_t not_delimiter(struct mp *m, const char *p, size_t n, size_t i, size_t max,
                            struct multipart_out *o)
{
    m->state = m->after_body ? ST_BODY : ST_PREAMBLE;
    if (!m->after_body) return i + scan(m, p + i, n - i, max, o);
    m->held_end = m->dlen;
    o->ev = MP_DATA;
    o->data = m->delim;
    o->len = m->dlen < max ? m->dlen : max;
    m->held_off = o->len;
    return i;
}

/* ST_AFTER, ST_CLOSE, ST_LF: what follows a delimiter. */
static size_t after(struct mp *m, const char *p, size_t n, size_t max, struct multipart_out *o)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (m->state == ST_AFTER && !m->confirmed) {
            if (c != '-' && c != ' ' && c != '\t' && c != '\r') return not_delimiter(m, p, n, i, max, o);
            m->confirmed = 1;
            if (m->after_body) { /* the part ends here; c is looked at next */
                o->ev = MP_PART_END;
                return i;
            }
        }
        if (m->state == ST_CLOSE) {
            if (c != '-') return error(m, "bad close delimiter", o);
            m->state = ST_EPILOGUE;
            o->ev = MP_DONE;
            return n; /* the epilogue is ignored */
        }
        if (m->state == ST_LF) {
            if (c != '\n') return error(m, "bad delimiter line", o);
            m->state = ST_HEAD;
            buf_reset(&m->head);
            return i + 1 + head(m, p + i + 1, n - i - 1, o);
        }
        if (c == '-' && m->pad == 0) m->state = ST_CLOSE;
        else if ((c == ' ' || c == '\t') && ++m->pad <= MP_PADDING_MAX) continue;
        else if (c == '\r') m->state = ST_LF;
        else return error(m, "bad delimiter line", o);
    }
    o->ev = MP_NEED;
    return n;
}

size_t multipart_feed(struct mp *m, const char *p, size_t n, size_t max, struct multipart_out *o)
{
    o->ev = MP_NEED;
    o->data = NULL;
    o->len = 0;
    if (max == 0) max = 1;
    switch (m->state) {
    case ST_PREAMBLE: case ST_BODY: return scan(m, p, n, max, o);
    case ST_AFTER: case ST_CLOSE: case ST_LF: return after(m, p, n, max, o);
    case ST_HEAD: return head(m, p, n, o);
    case ST_EPILOGUE: o->ev = MP_DONE; return n;
    default: o->ev = MP_ERROR; return 0;
    }
}

int multipart_finish(struct mp *m)
{
    if (m->state == ST_EPILOGUE) return 0;
    if (m->state != ST_ERROR) m->why = m->state == ST_PREAMBLE ? "no multipart delimiter" : "the body ends inside a part";
    return -1;
}

int multipart_content_type(const char *ctype, char *out)
{
    if (!ctype || !hparam_type_is(ctype, "multipart/form-data")) return 0;
    struct buf b;
    buf_init(&b, MP_BOUNDARY_MAX + 1);
    int r = hparam_get(ctype, "boundary", &b);
    int len = -1;
    if (r > 0 && b.len >= 1 && b.len <= MP_BOUNDARY_MAX) {
        memcpy(out, b.data, b.len);
        out[b.len] = '\0';
        len = (int)b.len;
    }
    buf_free(&b);
    return len;
}
