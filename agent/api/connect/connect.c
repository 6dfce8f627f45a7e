/*
 * connect.c - Connect protocol pieces (see connect/connect.h).
 *
 * The status table is the Connect protocol's current one (after its RFC on
 * HTTP codes: canceled 499, deadline_exceeded 504, failed_precondition 400,
 * unimplemented 501). Clients read the code from the JSON body; the status
 * matters to proxies and to clients that find no body.
 */
#include "agent/api/connect/connect.h"
#include "agent/core/jsonw.h"
#include "agent/core/num.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    int status;
} codes[] = {
    [RPC_OK] = {"ok", 200},
    [RPC_CANCELED] = {"canceled", 499},
    [RPC_UNKNOWN] = {"unknown", 500},
    [RPC_INVALID_ARGUMENT] = {"invalid_argument", 400},
    [RPC_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
    [RPC_NOT_FOUND] = {"not_found", 404},
    [RPC_ALREADY_EXISTS] = {"already_exists", 409},
    [RPC_PERMISSION_DENIED] = {"permission_denied", 403},
    [RPC_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
    [RPC_FAILED_PRECONDITION] = {"failed_precondition", 400},
    [RPC_ABORTED] = {"aborted", 409},
    [RPC_OUT_OF_RANGE] = {"out_of_range", 400},
    [RPC_UNIMPLEMENTED] = {"unimplemented", 501},
    [RPC_INTERNAL] = {"internal", 500},
    [RPC_UNAVAILABLE] = {"unavailable", 503},
    [RPC_DATA_LOSS] = {"data_loss", 500},
    [RPC_UNAUTHENTICATED] = {"unauthenticated", 401},
};
#define NCODES (sizeof codes / sizeof codes[0])

const char *connect_code_name(enum rpc_code code)
{
    return (unsigned)code < NCODES ? codes[code].name : codes[RPC_UNKNOWN].name;
}

int connect_code_status(enum rpc_code code)
{
    return (unsigned)code < NCODES ? codes[code].status : codes[RPC_UNKNOWN].status;
}

static int error_fields(struct buf *b, enum rpc_code code, const char *msg)
{
    if (buf_putc(b, '{') < 0 || jsonw_key(b, "code") < 0 ||
        jsonw_cstr(b, connect_code_name(code)) < 0)
        return -1;
    if (msg && *msg && (buf_puts(b, ", ") < 0 || jsonw_key(b, "message") < 0 ||
                        jsonw_str(b, msg, strlen(msg), JSONW_REPLACE) < 0))
        return -1;
    return buf_putc(b, '}');
}

int connect_error_json(struct buf *b, enum rpc_code code, const char *msg)
{
    return error_fields(b, code, msg);
}

int connect_end_json(struct buf *b, enum rpc_code code, const char *msg)
{
    if (code == RPC_OK) return buf_puts(b, "{}");
    if (buf_putc(b, '{') < 0 || jsonw_key(b, "error") < 0 || error_fields(b, code, msg) < 0)
        return -1;
    return buf_putc(b, '}');
}

int connect_envelope_put(struct buf *b, unsigned flags, const void *msg, size_t n)
{
    if (n > 0xffffffffu) return -1;
    unsigned char head[CONNECT_ENVELOPE_HEAD] = {
        (unsigned char)flags, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
        (unsigned char)(n >> 8), (unsigned char)n,
    };
    if (buf_reserve(b, sizeof head + n) < 0) return -1;
    buf_append(b, head, sizeof head);
    return buf_append(b, msg, n);
}

long connect_envelope_get(const void *p, size_t n, size_t max, struct connect_envelope *e,
                          const char **why)
{
    const unsigned char *u = p;
    if (n < CONNECT_ENVELOPE_HEAD) return 0;
    uint32_t len = (uint32_t)u[1] << 24 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 8 | u[4];
    if (u[0] & ~(unsigned)(CONNECT_FLAG_COMPRESSED | CONNECT_FLAG_END)) {
        *why = "unknown envelope flags";
        return -1;
    }
    if (len > max) {
        *why = "message larger than allowed";
        return -1;
    }
    if (n - CONNECT_ENVELOPE_HEAD < len) return 0;
    e->flags = u[0];
    e->msg = (const char *)u + CONNECT_ENVELOPE_HEAD;
    e->len = len;
    return (long)(CONNECT_ENVELOPE_HEAD + (size_t)len);
}

int connect_request_message(const void *body, size_t n, struct connect_envelope *e,
                            const char **why)
{
    long k = connect_envelope_get(body, n, n, e, why);
    if (k < 0) return -1;
    if (k == 0) {
        *why = "request body is not a whole envelope";
        return -1;
    }
    if (e->flags & CONNECT_FLAG_COMPRESSED) {
        *why = "compressed messages are not supported";
        return -1;
    }
    if (e->flags & CONNECT_FLAG_END) {
        *why = "a request carries no end-stream message";
        return -1;
    }
    if ((size_t)k != n) {
        *why = "a server-streaming request holds exactly one message";
        return -1;
    }
    return 0;
}

/* 1 when ct's media type (before ';', blanks trimmed) is exactly want. */
static int media_is(const char *ct, const char *want)
{
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t')) n--;
    return n == strlen(want) && !strncasecmp(ct, want, n);
}

enum connect_ctype connect_ctype(const char *ct)
{
    if (!ct) return CONNECT_CTYPE_OTHER;
    if (media_is(ct, CONNECT_CT_UNARY)) return CONNECT_CTYPE_UNARY;
    if (media_is(ct, CONNECT_CT_STREAM)) return CONNECT_CTYPE_STREAM;
    return CONNECT_CTYPE_OTHER;
}

int connect_timeout_ms(const char *v, uint64_t *ms)
{
    if (!v || strlen(v) > 10) return -1;
    return num_count(v, 9999999999ull, ms);
}

int connect_keepalive_s(const char *v, unsigned *s)
{
    uint64_t k;
    if (!v || num_count(v, CONNECT_KEEPALIVE_MAX, &k) < 0 || k == 0) return -1;
    *s = (unsigned)k;
    return 0;
}

enum rpc_code connect_code_of_errno(int errnum)
{
    switch (errnum) {
    case ENOENT: case ENOTDIR: case ESRCH: return RPC_NOT_FOUND;
    case EACCES: case EPERM: case EROFS: return RPC_PERMISSION_DENIED;
    case EEXIST: return RPC_ALREADY_EXISTS;
    case ENOTEMPTY: case EBUSY: case EXDEV: case ENOTTY: case EPIPE: return RPC_FAILED_PRECONDITION;
    case EISDIR: case EINVAL: case ENAMETOOLONG: case ELOOP: case -1 /* FILES_ENOTREG */:
        return RPC_INVALID_ARGUMENT;
    case ENOSPC: case EDQUOT: case ENOMEM: case EMFILE: case ENFILE: case EAGAIN: return RPC_RESOURCE_EXHAUSTED;
    case ESHUTDOWN: return RPC_UNAVAILABLE;
    default: return RPC_INTERNAL;
    }
}
