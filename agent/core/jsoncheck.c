/*
 * jsoncheck.c - strict JSON validation (see jsoncheck.h). Recursive descent;
 * depth is bounded by JSONCHECK_MAX_DEPTH, so hostile nesting cannot overflow
 * the stack.
 */
#include "agent/core/jsoncheck.h"
#include "agent/core/num.h"
#include "agent/core/utf8.h"

#include <string.h>

struct jc {
    const unsigned char *s;
    size_t n, i;
    const char *err;
    size_t err_off;
    int has_nul;
};

static int fail(struct jc *c, const char *msg)
{
    if (!c->err) {
        c->err = msg;
        c->err_off = c->i;
    }
    return -1;
}

static void ws(struct jc *c)
{
    while (c->i < c->n) {
        unsigned char ch = c->s[c->i];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') break;
        c->i++;
    }
}

static int string(struct jc *c)
{
    c->i++; /* opening quote */
    for (;;) {
        if (c->i >= c->n) return fail(c, "unterminated string");
        unsigned char ch = c->s[c->i];
        if (ch == '"') {
            c->i++;
            return 0;
        }
        if (ch < 0x20) return fail(c, "control character in string");
        if (ch == '\\') {
            c->i++;
            if (c->i >= c->n) return fail(c, "unterminated string");
            ch = c->s[c->i];
            if (ch == 'u') {
                unsigned v = 0;
                for (int k = 1; k <= 4; k++) {
                    int h = c->i + (size_t)k < c->n ? num_hexval(c->s[c->i + (size_t)k]) : -1;
                    if (h < 0) return fail(c, "bad \\u escape");
                    v = v << 4 | (unsigned)h;
                }
                if (v == 0) c->has_nul = 1;
                c->i += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", ch) || ch == 0) return fail(c, "bad escape");
            c->i++;
            continue;
        }
        if (ch < 0x80) {
            c->i++;
            continue;
        }
        unsigned cp;
        size_t bad, k = utf8_next(c->s + c->i, c->n - c->i, &cp, &bad);
        if (!k) return fail(c, "invalid UTF-8");
        c->i += k;
    }
}

static int digits(struct jc *c)
{
    size_t start = c->i;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') c->i++;
    return c->i > start ? 0 : fail(c, "bad number");
}

static int number(struct jc *c)
{
    if (c->s[c->i] == '-') c->i++;
    if (c->i >= c->n) return fail(c, "bad number");
    if (c->s[c->i] == '0') {
        c->i++; /* no leading zeros: "01" is not JSON */
    } else if (digits(c) < 0) {
        return -1;
    }
    if (c->i < c->n && c->s[c->i] == '.') {
        c->i++;
        if (digits(c) < 0) return -1;
    }
    if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        c->i++;
        if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-')) c->i++;
        if (digits(c) < 0) return -1;
    }
    return 0;
}

static int literal(struct jc *c, const char *word)
{
    size_t k = strlen(word);
    if (c->n - c->i < k || memcmp(c->s + c->i, word, k) != 0) return fail(c, "unexpected character");
    c->i += k;
    return 0;
}

static int value(struct jc *c, int depth, enum json_type *type);

static int container(struct jc *c, int depth, int is_object)
{
    unsigned char close = is_object ? '}' : ']';
    enum json_type t;
    if (depth >= JSONCHECK_MAX_DEPTH) return fail(c, "nested too deeply");
    c->i++;
    ws(c);
    if (c->i < c->n && c->s[c->i] == close) {
        c->i++;
        return 0;
    }
    for (;;) {
        if (is_object) {
            if (c->i >= c->n || c->s[c->i] != '"') return fail(c, "expected a string key");
            if (string(c) < 0) return -1;
            ws(c);
            if (c->i >= c->n || c->s[c->i] != ':') return fail(c, "expected ':'");
            c->i++;
            ws(c);
        }
        if (value(c, depth + 1, &t) < 0) return -1;
        ws(c);
        if (c->i >= c->n) return fail(c, "unterminated container");
        if (c->s[c->i] == ',') {
            c->i++;
            ws(c);
            continue;
        }
        if (c->s[c->i] == close) {
            c->i++;
            return 0;
        }
        return fail(c, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(struct jc *c, int depth, enum json_type *type)
{
    if (c->i >= c->n) return fail(c, "unexpected end of input");
    switch (c->s[c->i]) {
    case '{': *type = JSON_OBJECT; return container(c, depth, 1);
    case '[': *type = JSON_ARRAY; return container(c, depth, 0);
    case '"': *type = JSON_STRING; return string(c);
    case 't': *type = JSON_BOOL; return literal(c, "true");
    case 'f': *type = JSON_BOOL; return literal(c, "false");
    case 'n': *type = JSON_NULL; return literal(c, "null");
    default:
        if (c->s[c->i] == '-' || (c->s[c->i] >= '0' && c->s[c->i] <= '9')) {
            *type = JSON_NUMBER;
            return number(c);
        }
        return fail(c, "unexpected character");
    }
}

int jsoncheck(const char *s, size_t n, struct jsoncheck *out)
{
    struct jc c = {(const unsigned char *)s, n, 0, NULL, 0, 0};
    enum json_type t = JSON_INVALID;
    memset(out, 0, sizeof *out);
    ws(&c);
    out->start = c.i;
    if (value(&c, 0, &t) == 0) {
        out->end = c.i;
        ws(&c);
        if (c.i != n) fail(&c, "extra data after the value");
    }
    out->has_nul = c.has_nul;
    if (c.err) {
        out->err = c.err;
        out->err_off = c.err_off;
        out->type = JSON_INVALID;
        return -1;
    }
    out->type = t;
    return 0;
}

const char *jsoncheck_type_name(enum json_type t)
{
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_NUMBER: return "a number";
    case JSON_BOOL: return "a boolean";
    case JSON_NULL: return "null";
    default: return "invalid";
    }
}
