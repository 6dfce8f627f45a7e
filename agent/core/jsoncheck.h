/*
 * jsoncheck.h - a strict RFC 8259 validator for JSON that the agent must carry
 * byte for byte (the job's result file) or decode from untrusted input.
 *
 * Why not cJSON alone: cJSON parses numbers with strtod, so it accepts text a
 * JSON client rejects ("+1", "01", "1."), it does not check UTF-8, and it turns
 * every number into a double. The result file is forwarded exactly as written,
 * so the agent must know the text is JSON that any client will parse, without
 * re-serialising it. This validator only answers "is it JSON, of what type,
 * and where is it wrong"; cJSON still does the decoding where values are needed.
 */
#ifndef SA_CORE_JSONCHECK_H
#define SA_CORE_JSONCHECK_H

#include <stddef.h>

enum json_type {
    JSON_INVALID = 0,
    JSON_OBJECT,
    JSON_ARRAY,
    JSON_STRING,
    JSON_NUMBER,
    JSON_BOOL,
    JSON_NULL,
};

/* Nesting deeper than this is refused (bounded recursion). */
#define JSONCHECK_MAX_DEPTH 512

struct jsoncheck {
    enum json_type type;  /* of the top-level value */
    size_t start, end;    /* the value's span, surrounding whitespace excluded */
    size_t err_off;       /* where it went wrong */
    const char *err;      /* static text, NULL when valid */
    int has_nul;          /* some string holds \u0000 */
};

/* Returns 0 when s[0..n) is exactly one JSON value (with optional whitespace). */
int jsoncheck(const char *s, size_t n, struct jsoncheck *out);

const char *jsoncheck_type_name(enum json_type t);

#endif
