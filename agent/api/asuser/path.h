/*
 * path.h - the one resolver of a path as the request's user means it, for
 * every route that takes one: a Start's cwd and every filesystem path,
 * RPC and /files (README "sandbox-agent serve": "Paths, and a Start's
 * cwd"). envd's rules: "" is POST /init's defaultWorkdir, else the home;
 * "~" and "~/x" are in the user's home, "~user" is refused; a relative
 * path is relative to the home; those are cleaned lexically; an absolute
 * path is taken as given, byte for byte. Pure.
 */
#ifndef SA_API_ASUSER_PATH_H
#define SA_API_ASUSER_PATH_H

#include "agent/core/buf.h"

/* A resolved path longer than this is refused (the kernel's own bound is
 * 4 KiB; this one only keeps hostile input from growing the buffer). */
#define ASUSER_PATH_MAX (64u * 1024u)

/*
 * Resolve path for a user whose home is home (absolute), workdir being
 * POST /init's defaultWorkdir (absolute; NULL or "": none). "" is workdir
 * when there is one, else the home. "~", "~/x" (and "~\x", as envd takes
 * it) and relative paths are joined to home and cleaned lexically as envd
 * does (Go's filepath.Join: doubled '/', "." and ".." folded, never above
 * "/", no trailing '/'); an absolute path is kept exactly. "~user" is
 * refused (envd cannot expand another user's home either). Writes the
 * NUL-terminated result to out (reset first). Returns 0, or -1 with a
 * static reason in *why.
 */
int asuser_path_resolve(const char *home, const char *workdir, const char *path, struct buf *out,
                        const char **why);

/* Clean an absolute path lexically in place (as above). */
void asuser_path_clean(char *p);

/* The last component of an absolute, cleaned path ("/" for "/"). */
const char *asuser_path_base(const char *p);

#endif
