/*
 * jsonbytes.h - the way back for bytes the agent writes as surrogateescape
 * (jsonw.h: a byte that is not UTF-8 becomes \udcXX): JSON text a client
 * sends with such escapes in its strings is turned into text whose strings
 * hold the bytes themselves, ready for a decoder (cJSON) that would refuse a
 * lone surrogate. Paths with any bytes survive a round trip that way.
 */
#ifndef SA_CORE_JSONBYTES_H
#define SA_CORE_JSONBYTES_H

#include <stddef.h>

/*
 * Rewrite s[0..n) in place, already checked by jsoncheck: inside strings,
 * each \udcXX escape (XX 80..ff) that does not follow a high-surrogate
 * escape becomes the single byte 0xXX. Nothing else changes (an escaped
 * backslash stays one; a surrogate pair stays a pair). Returns the new
 * length, never more than n.
 */
size_t jsonbytes_unescape(char *s, size_t n);

#endif
