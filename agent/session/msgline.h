/*
 * msgline.h - the session's message lines, as pure functions over bytes:
 * validating a request id, reading a mailbox request, recognising a handler
 * reply, and writing the agent's own error replies and the reply line.
 *
 * Everything here reads untrusted input (anyone in the sandbox can write the
 * mailbox; the handler is the workload). Nothing allocates in proportion to
 * the input except the output buffers, nothing recurses, and every function
 * answers for any byte string.
 */
#ifndef SA_SESSION_MSGLINE_H
#define SA_SESSION_MSGLINE_H

#include "agent/core/buf.h"

#include <stddef.h>

#define MSG_ID_MAX 128

/* 1 when s[0..n) is 1-128 characters of [A-Za-z0-9._:-] without "__",
 * neither starting nor ending with '_': a client splits the reply prefix
 * on "__". */
int msgline_id_valid(const char *s, size_t n);

/* Why the nonce s[0..n) cannot travel in the reply prefix (a client could
 * not split it back out), as static text: a byte outside printable ASCII
 * (0x20-0x7e; a newline above all), "__", or a leading or trailing '_'.
 * NULL when it can ("" included). */
const char *msgline_nonce_problem(const char *s, size_t n);

enum msgline_kind {
    MSG_BLANK,  /* only whitespace: ignored */
    MSG_OK,     /* a request */
    MSG_BAD,    /* not a request; id[] holds its id when one could be read */
};

struct msgline_request {
    char id[MSG_ID_MAX + 1]; /* NUL-terminated; "" when none could be read */
    size_t idlen;
    double timeout;          /* seconds; 0 when the request has none */
    const char *why;         /* MSG_BAD: static text */
};

/* Read one mailbox line (without its newline). A request is a valid JSON
 * object (strict: RFC 8259, UTF-8) whose top-level "id" is a valid id and
 * whose optional "timeout" is null or a number > 0. When a key repeats, the
 * last one counts, as in Python's json.loads. */
enum msgline_kind msgline_parse_request(const char *line, size_t n, struct msgline_request *out);

/* The id of a line that cannot be parsed whole (too long, or not JSON),
 * read from its first bytes: the top-level members of the object are walked
 * until an "id" member whose value is a string, or until the text stops
 * looking like an object. Returns 1 and fills id/idlen when a valid id was
 * found there, else 0. */
int msgline_peek_id(const char *p, size_t n, char id[MSG_ID_MAX + 1], size_t *idlen);

/* A handler stdout line that is a reply: a valid JSON object with a valid
 * top-level "id" and a "result" or an "error" member. Returns 1 and fills
 * id/idlen, else 0 (the line is handler output, not a reply). */
int msgline_parse_reply(const char *line, size_t n, char id[MSG_ID_MAX + 1], size_t *idlen);

/* {"id": ID, "error": {"code": CODE, "message": MESSAGE}} (json.dumps style). */
int msgline_error_json(struct buf *out, const char *id, size_t idlen, const char *code, const char *message);

/* __SANDBOX_REPLY__<id>__<nonce>__<base64(json)>\n appended to out. */
int msgline_reply_line(struct buf *out, const char *id, size_t idlen, const char *nonce, size_t nonce_len,
                   const char *json, size_t json_len);

#endif
