/*
 * connect.h - the Connect protocol's pieces, as the envd API uses them with
 * the JSON codec (README "sandbox-agent serve"): error codes and the HTTP
 * status of each, error bodies, the envelope of streamed messages, and the
 * request headers a call may carry. Pure functions: no sockets, no loop.
 */
#ifndef SA_API_CONNECT_CONNECT_H
#define SA_API_CONNECT_CONNECT_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

/* The codes, numbered as gRPC numbers them. */
enum rpc_code {
    RPC_OK = 0,
    RPC_CANCELED,
    RPC_UNKNOWN,
    RPC_INVALID_ARGUMENT,
    RPC_DEADLINE_EXCEEDED,
    RPC_NOT_FOUND,
    RPC_ALREADY_EXISTS,
    RPC_PERMISSION_DENIED,
    RPC_RESOURCE_EXHAUSTED,
    RPC_FAILED_PRECONDITION,
    RPC_ABORTED,
    RPC_OUT_OF_RANGE,
    RPC_UNIMPLEMENTED,
    RPC_INTERNAL,
    RPC_UNAVAILABLE,
    RPC_DATA_LOSS,
    RPC_UNAUTHENTICATED,
};

#define CONNECT_CT_UNARY "application/json"
#define CONNECT_CT_STREAM "application/connect+json"

/* Envelope flags. */
#define CONNECT_FLAG_COMPRESSED 0x01
#define CONNECT_FLAG_END 0x02
#define CONNECT_ENVELOPE_HEAD 5 /* flag byte + 4-byte big-endian length */

/* "invalid_argument", ...; "unknown" for a code out of range. */
const char *connect_code_name(enum rpc_code code);
/* The code of an errno of the services (the one table: the file service's
 * FILES_ENOTREG is -1, invalid_argument; the process table's ESRCH, a
 * process not running, not_found; ESHUTDOWN unavailable). */
enum rpc_code connect_code_of_errno(int errnum);
/* The HTTP status of a unary error with this code (Connect's table). */
int connect_code_status(enum rpc_code code);

/* {"code": "...", "message": "..."}: a unary error body. */
int connect_error_json(struct buf *b, enum rpc_code code, const char *msg);
/* The end-stream message: {} for RPC_OK, else {"error": {"code": ..., "message": ...}}. */
int connect_end_json(struct buf *b, enum rpc_code code, const char *msg);

/* Append one envelope holding msg[0..n). Returns 0, or -1 past b's bound. */
int connect_envelope_put(struct buf *b, unsigned flags, const void *msg, size_t n);

struct connect_envelope {
    unsigned flags;
    const char *msg; /* inside the decoded input */
    size_t len;
};

/* Decode the envelope at the start of p[0..n), whose message may be at most
 * max bytes. Returns the bytes it takes (> 0), 0 when p holds only part of
 * it, or -1 with a static reason in *why. Any input is safe. */
long connect_envelope_get(const void *p, size_t n, size_t max, struct connect_envelope *e,
                          const char **why);
/* The request body of a server-streaming call: exactly one uncompressed
 * message envelope. Returns 0, or -1 with a static reason in *why. */
int connect_request_message(const void *body, size_t n, struct connect_envelope *e,
                            const char **why);

/* Which codec a Content-Type names (parameters after ';' are ignored, the
 * media type is compared without case). */
enum connect_ctype { CONNECT_CTYPE_OTHER, CONNECT_CTYPE_UNARY, CONNECT_CTYPE_STREAM };
enum connect_ctype connect_ctype(const char *content_type);

/* Connect-Timeout-Ms: 1 to 10 digits, milliseconds. Returns 0, or -1. */
int connect_timeout_ms(const char *v, uint64_t *ms);
/* Keepalive-Ping-Interval: whole seconds, 1 .. CONNECT_KEEPALIVE_MAX.
 * Returns 0, or -1 (the caller keeps its default). */
#define CONNECT_KEEPALIVE_MAX 86400u
int connect_keepalive_s(const char *v, unsigned *s);

#endif
