/*
 * fsout.h - what every `fs` op prints: the `__SBX_FS__` result line, the
 * error object with its exit status, and the ENTRY object of PROTOCOL.md §3.
 *
 * Owns the output format of `fs` and the errno -> exit status mapping. Does
 * not touch the filesystem beyond the lstat/readlink an ENTRY needs.
 */
#ifndef SA_FSOUT_H
#define SA_FSOUT_H

#include "agent/core/buf.h"
#include "agent/core/protocol.h"

#include <sys/stat.h>

/* Pseudo-errno for "not a regular file": no errno says it, so the error
 * object carries code "ENOTREG" and "errno": null. */
#define FS_ENOTREG (-1)

/* Where the result line goes: stdout, except for `read` (stderr). */
void fsout_set_fd(int fd);

/* Write `__SBX_FS__` + json + "\n" to the result fd in one write.
 * Returns 0, or -1 when it could not be written (logged). */
int fsout_line(struct buf *json);

/* Print {"ok": true}, the whole result of remove and move; returns the exit status. */
int fsout_ok(void);

/* The symbolic name of an errno value ("ENOENT"), or NULL when unknown. */
const char *fs_errno_name(int e);

/* Exit status for an errno (or FS_ENOTREG). */
int fs_errno_status(int e);

/* Append the error object `"error": {...}` (key included) to b. message may be
 * NULL for strerror(e). Path is bytes, written surrogateescape. */
int fs_error_json(struct buf *b, int e, const char *message, const char *path);

/*
 * Print `{"ok": false, "error": {...}}` as the result line, log one stderr
 * line, and return the exit status for e. Every failed op ends here.
 */
int fs_fail(const char *op, int e, const char *message, const char *path);

/* "file", "dir", "symlink", "fifo", "socket", "char", "block" (or "unknown"). */
const char *fs_type_name(mode_t m);

/* st_mtime as Python's os.stat gives it: sec + nsec * 1e-9, as a double. */
double fs_mtime(const struct stat *st);


/*
 * Append one ENTRY object for st. name/path are byte strings (nlen/plen
 * bytes). For a symlink, target (tlen bytes) is added as "target" when not
 * NULL.
 */
int fs_entry_json(struct buf *b, const char *name, size_t nlen, const char *path, size_t plen,
                  const struct stat *st, const char *target, size_t tlen);

/*
 * readlinkat into a malloc'd buffer (not NUL-terminated); *len is set.
 * Returns NULL with errno set. Bounded at 64 KiB (PATH_MAX is 4 KiB on Linux).
 */
char *fs_readlink(int dirfd, const char *name, size_t *len);

#endif
