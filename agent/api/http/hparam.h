/*
 * hparam.h - the parameters of an HTTP header value, as /files reads them:
 * a media type and its `; name=value` parameters (token or quoted-string,
 * RFC 9110; `name*=charset'lang'%XX` extended values, RFC 8187), and a
 * coding list with q-values (Accept-Encoding). Pure.
 */
#ifndef SA_API_HTTP_HPARAM_H
#define SA_API_HTTP_HPARAM_H

#include "agent/core/buf.h"

#include <stddef.h>

/* 1 when the value's first item (before ';', blanks trimmed) is type,
 * compared without case. */
int hparam_type_is(const char *value, const char *type);

/*
 * The parameter `attr` (compared without case) of value, decoded into out
 * (reset first; NUL-terminated; may hold any byte, NUL included: out->len
 * says). A quoted-string loses its quotes and backslashes; `attr*` (pass the
 * star) is an RFC 8187 ext-value whose %XX escapes are decoded, charset and
 * language ignored. Returns 1 found, 0 absent, -1 malformed or past out's
 * bound.
 */
int hparam_get(const char *value, const char *attr, struct buf *out);

/* 1 when an Accept-Encoding value accepts `coding` (named with q > 0, or
 * "*" with q > 0 and the coding not named with q=0). */
int hparam_accepts(const char *value, const char *coding);

#endif
