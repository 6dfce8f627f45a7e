/*
 * path.h - a path of the filesystem API as the request's user means it
 * (README "sandbox-agent serve", the filesystem API): "~" and "~/x" are in
 * the user's home, a relative path is relative to the home, an absolute
 * path is taken as given, byte for byte. Pure.
 */
#ifndef SA_API_ASUSER_PATH_H
#define SA_API_ASUSER_PATH_H

#include "agent/core/buf.h"

/* A resolved path longer than this is refused (the kernel's own bound is
 * 4 KiB; this one only keeps hostile input from growing the buffer). */
#define ASUSER_PATH_MAX (64u * 1024u)

/*
 * Resolve path against home (absolute). "~", "~/x" and relative paths are
 * joined to home and cleaned lexically as envd does (Go's filepath.Join:
 * doubled '/', "." and ".." folded, no trailing '/'); an absolute path is
 * kept exactly. "" is the home. "~user" is refused (envd cannot expand
 * another user's home either). Writes the NUL-terminated result to out
 * (reset first). Returns 0, or -1 with a static reason in *why.
 */
int asuser_path_resolve(const char *home, const char *path, struct buf *out, const char **why);

/* Clean an absolute path lexically in place (as above). */
void asuser_path_clean(char *p);

/* The last component of an absolute, cleaned path ("/" for "/"). */
const char *asuser_path_base(const char *p);

#endif
