/*
 * query.h - the query string of a request target, as /files reads it:
 * name=value pairs separated by '&', each part percent-decoded with '+' as
 * a space (application/x-www-form-urlencoded, as the SDK's URLSearchParams
 * writes it). Any byte can arrive that way, so the values are bytes. Pure.
 */
#ifndef SA_API_HTTP_QUERY_H
#define SA_API_HTTP_QUERY_H

#include "agent/core/buf.h"

/* Returned by query_get when `name` appears more than once: which one a
 * request meant is ambiguous (a gateway that read the other would be
 * bypassed), so the request is refused. */
#define QUERY_REPEATED (-2)

/* The value of `name` in query (the part after '?'), decoded into out
 * (reset first; NUL-terminated, out->len bytes, which may include NULs).
 * Keys are compared decoded (`%70ath` is `path`). A pair without '=' has
 * the value "". Returns 1 found, 0 absent, -1 when that value has a bad
 * %XX escape or passes out's bound, QUERY_REPEATED when name is there
 * twice or more. */
int query_get(const char *query, const char *name, struct buf *out);

#endif
