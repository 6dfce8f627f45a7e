/*
 * jsonw.h - JSON writers shaped like Python's json.dumps defaults, so that
 * what the agent prints matches, byte for byte, what the Python programs it
 * replaces printed: ", " and ": " separators, ensure_ascii (every non-ASCII
 * character and DEL as a lowercase \uXXXX escape, astral ones as surrogate
 * pairs), floats as repr() writes them. The output is pure ASCII, so it is
 * always valid UTF-8.
 */
#ifndef SA_CORE_JSONW_H
#define SA_CORE_JSONW_H

#include "agent/core/buf.h"

#include <stddef.h>

enum jsonw_bad {
    /* Each byte that is not valid UTF-8 becomes \udcXX (Python's
     * surrogateescape): os.fsencode() on the client gives the bytes back. */
    JSONW_SURROGATEESCAPE,
    /* Each maximal invalid subpart becomes U+FFFD, as bytes.decode(errors="replace"). */
    JSONW_REPLACE,
};

int jsonw_str(struct buf *b, const char *s, size_t n, enum jsonw_bad mode);
/* A NUL-terminated byte string, surrogateescape. */
int jsonw_cstr(struct buf *b, const char *s);
/* `"key": ` (keys are ASCII literals of ours). */
int jsonw_key(struct buf *b, const char *key);
/* A double as Python's repr(float) writes it ("1.5", "1700000000.0", "1e+16"). */
int jsonw_double(struct buf *b, double d);
/* The same by a plain shortest-round-trip search: the reference the fast
 * path of jsonw_double is tested against, and its fallback. */
int jsonw_double_repr(struct buf *b, double d);

/* "NAME=VALUE" strings (NULL-terminated, or v NULL) as a JSON object, in
 * order: a name given twice appears twice, and a JSON reader keeps the
 * last, as a process's environment does. A string without '=' is left out.
 * Returns 0, or -1 past b's bound. */
int jsonw_env(struct buf *b, char *const *v);

#endif
