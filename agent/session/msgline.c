/*
 * msgline.c - session message lines (see msgline.h).
 *
 * Why a hand-written walk of the top-level members rather than cJSON_Parse of
 * the whole line: a 16 MiB line of `[0,0,0,...]` becomes hundreds of MiB of
 * cJSON nodes. The line is validated by jsoncheck (strict, no allocation),
 * then only the two values the agent needs ("id", "timeout") are located by a
 * non-recursive walk and decoded on their own; cJSON decodes the number.
 */
#include "agent/session/msgline.h"
#include "agent/core/b64.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/jsonw.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"

#include <cJSON.h>
#include <string.h>

static int id_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
}

int msgline_id_valid(const char *s, size_t n)
{
    if (n < 1 || n > MSG_ID_MAX || s[0] == '_' || s[n - 1] == '_') return 0;
    for (size_t i = 0; i < n; i++) {
        if (!id_char((unsigned char)s[i])) return 0;
        if (s[i] == '_' && i + 1 < n && s[i + 1] == '_') return 0;
    }
    return 1;
}

const char *msgline_nonce_problem(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return "it holds a byte outside printable ASCII";
    if (memmem(s, n, "__", 2)) return "it holds '__'";
    if (n && (s[0] == '_' || s[n - 1] == '_')) return "it starts or ends with '_'";
    return NULL;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && is_ws(s[i])) i++;
    return i;
}

/* s[i] is '"': the index after the closing quote, or 0 when unterminated
 * (0 is never a valid answer: a string takes two bytes at least). */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\') i++;
        else if (s[i] == '"') return i + 1;
    }
    return 0;
}

/* Skip one value starting at s[i], without recursion: strings are skipped
 * whole, brackets counted. Returns the index after it, or 0 when the text
 * ends first (a member value is always followed by ',' or '}'). */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    if (i >= n) return 0;
    if (s[i] == '"') return skip_string(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        size_t depth = 0;
        while (i < n) {
            char c = s[i];
            if (c == '"') {
                i = skip_string(s, n, i);
                if (!i) return 0;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
            i++;
        }
        return 0;
    }
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_ws(s[i])) i++;
    return i < n ? i : 0;
}

/* Decode the JSON string body raw[0..n) into out (at most max bytes) when it
 * holds only printable ASCII (escapes \uXXXX below 0x80 included). Returns the
 * length, or -1: such a string cannot be an id or a key we look for. */
static long decode_ascii(const char *raw, size_t n, char *out, size_t max)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '\\') {
            /* \uXXXX needs raw[i+1..i+5]. */
            if (i + 5 >= n || raw[i + 1] != 'u') return -1;
            unsigned v = 0;
            for (int k = 2; k <= 5; k++) {
                int h = num_hexval((unsigned char)raw[i + (size_t)k]);
                if (h < 0) return -1;
                v = v << 4 | (unsigned)h;
            }
            if (v < 0x20 || v >= 0x7f) return -1;
            c = (unsigned char)v;
            i += 5;
        } else if (c < 0x20 || c >= 0x7f) {
            return -1;
        }
        if (o >= max) return -1;
        out[o++] = (char)c;
    }
    return (long)o;
}

struct members {
    const char *id_raw;  /* body of the last "id" string value, else NULL */
    size_t id_rawlen;
    int id_not_string;   /* the last "id" was not a string */
    const char *to;      /* span of the last "timeout" value, else NULL */
    size_t tolen;
    int has_result_or_error;
};

/* Walk the top-level members of the object at s[0..n). Returns 0 when the
 * closing brace was reached, -1 when the text stopped looking like an object
 * (the members seen so far are still reported). */
static int walk(const char *s, size_t n, struct members *m)
{
    memset(m, 0, sizeof *m);
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return -1;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}') return 0;
    for (;;) {
        if (i >= n || s[i] != '"') return -1;
        size_t kstart = i + 1, kend = skip_string(s, n, i);
        if (!kend) return -1;
        char key[16];
        long klen = decode_ascii(s + kstart, kend - 1 - kstart, key, sizeof key);
        i = skip_ws(s, n, kend);
        if (i >= n || s[i] != ':') return -1;
        i = skip_ws(s, n, i + 1);
        if (i >= n) return -1;
        size_t vstart = i, vend = skip_value(s, n, i);
        if (!vend) return -1; /* the value runs past what we have */
        if (klen == 2 && !memcmp(key, "id", 2)) {
            if (s[vstart] == '"') {
                m->id_raw = s + vstart + 1;
                m->id_rawlen = vend - vstart - 2;
                m->id_not_string = 0;
            } else {
                m->id_raw = NULL;
                m->id_not_string = 1;
            }
        } else if (klen == 7 && !memcmp(key, "timeout", 7)) {
            m->to = s + vstart;
            m->tolen = vend - vstart;
        } else if ((klen == 6 && !memcmp(key, "result", 6)) || (klen == 5 && !memcmp(key, "error", 5))) {
            m->has_result_or_error = 1;
        }
        i = skip_ws(s, n, vend);
        if (i >= n) return -1;
        if (s[i] == '}') return 0;
        if (s[i] != ',') return -1;
        i = skip_ws(s, n, i + 1);
    }
}

static int take_id(const struct members *m, char id[MSG_ID_MAX + 1], size_t *idlen)
{
    if (!m->id_raw) return 0;
    long l = decode_ascii(m->id_raw, m->id_rawlen, id, MSG_ID_MAX);
    if (l < 0 || !msgline_id_valid(id, (size_t)l)) {
        id[0] = '\0';
        *idlen = 0;
        return 0;
    }
    id[l] = '\0';
    *idlen = (size_t)l;
    return 1;
}

int msgline_peek_id(const char *p, size_t n, char id[MSG_ID_MAX + 1], size_t *idlen)
{
    struct members m;
    id[0] = '\0';
    *idlen = 0;
    walk(p, n, &m);
    return take_id(&m, id, idlen);
}

enum msgline_kind msgline_parse_request(const char *line, size_t n, struct msgline_request *out)
{
    struct jsoncheck jc;
    struct members m;

    memset(out, 0, sizeof *out);
    if (skip_ws(line, n, 0) == n) return MSG_BLANK;
    if (jsoncheck(line, n, &jc) < 0) {
        out->why = "not valid JSON";
        msgline_peek_id(line, n, out->id, &out->idlen);
        return MSG_BAD;
    }
    if (jc.type != JSON_OBJECT) {
        out->why = "not a JSON object";
        return MSG_BAD;
    }
    walk(line, n, &m);
    if (!take_id(&m, out->id, &out->idlen)) {
        out->why = m.id_raw || m.id_not_string ? "invalid \"id\"" : "no \"id\"";
        return MSG_BAD;
    }
    if (m.to) {
        /* Short spans only: a number or null, never a document. */
        cJSON *v = m.tolen <= 64 ? cJSON_ParseWithLength(m.to, m.tolen) : NULL;
        int ok = 0;
        if (v && cJSON_IsNull(v)) ok = 1;
        else if (v && cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble <= 1e9) {
            out->timeout = v->valuedouble;
            ok = 1;
        }
        cJSON_Delete(v);
        if (!ok) {
            out->why = "\"timeout\" must be null or a number of seconds > 0";
            return MSG_BAD;
        }
    }
    return MSG_OK;
}

int msgline_parse_reply(const char *line, size_t n, char id[MSG_ID_MAX + 1], size_t *idlen)
{
    struct jsoncheck jc;
    struct members m;
    id[0] = '\0';
    *idlen = 0;
    if (jsoncheck(line, n, &jc) < 0 || jc.type != JSON_OBJECT) return 0;
    walk(line, n, &m);
    if (!m.has_result_or_error) return 0;
    return take_id(&m, id, idlen);
}

int msgline_error_json(struct buf *out, const char *id, size_t idlen, const char *code, const char *message)
{
    if (buf_putc(out, '{') < 0 || jsonw_key(out, "id") < 0 ||
        jsonw_str(out, id, idlen, JSONW_SURROGATEESCAPE) < 0 || buf_puts(out, ", ") < 0 ||
        jsonw_key(out, "error") < 0 || buf_putc(out, '{') < 0 || jsonw_key(out, "code") < 0 ||
        jsonw_cstr(out, code) < 0 || buf_puts(out, ", ") < 0 || jsonw_key(out, "message") < 0 ||
        jsonw_str(out, message, strlen(message), JSONW_REPLACE) < 0 || buf_puts(out, "}}") < 0)
        return -1;
    return 0;
}

int msgline_reply_line(struct buf *out, const char *id, size_t idlen, const char *nonce, size_t nonce_len,
                   const char *json, size_t json_len)
{
    size_t mark = out->len;
    if (buf_puts(out, SENTINEL_REPLY) < 0 || buf_append(out, id, idlen) < 0 ||
        buf_puts(out, SENTINEL_REPLY_SEP) < 0 || buf_append(out, nonce, nonce_len) < 0 ||
        buf_puts(out, SENTINEL_REPLY_SEP) < 0 || b64_encode(out, json, json_len) < 0 ||
        buf_putc(out, '\n') < 0) {
        out->len = mark;
        return -1;
    }
    return 0;
}
