/*
 * fsout.h - what every `fs` op prints: the `__SBX_FS__` result line, the
 * error object with its exit status, and the ENTRY object (README, section
 * "sandbox-agent fs OP ... - file operations").
 *
 * Owns the output format of `fs`, the errno names and the errno -> exit
 * status mapping. Touches no file: what it formats comes from the file
 * service (agent/files/files.h).
 */
#ifndef SA_FS_FSOUT_H
#define SA_FS_FSOUT_H

#include "agent/core/buf.h"
#include "agent/files/files.h"

#include <stddef.h>

/* Where the result line goes: stdout, except for `read` (stderr). */
void fsout_set_fd(int fd);

/* Write `__SBX_FS__` + json + "\n" to the result fd in one write.
 * Returns 0, or -1 when it could not be written (logged). */
int fsout_line(struct buf *json);

/* Print {"ok": true}, the whole result of remove and move; returns the exit status. */
int fsout_ok(void);

/* The symbolic name of an errno value ("ENOENT"), or NULL when unknown. */
const char *fsout_errno_name(int e);

/* Exit status for an errno (or FILES_ENOTREG): 66, 67, 68, 69 or 1. */
int fsout_status(int e);

/* Append the error object `"error": {...}` (key included) to b. message may be
 * NULL for files_strerror(e). Path is bytes, written surrogateescape. */
int fsout_error_json(struct buf *b, int e, const char *message, const char *path);

/*
 * Print `{"ok": false, "error": {...}}` as the result line, log one stderr
 * line, and return the exit status for e. Every failed op ends here.
 */
int fsout_fail(const char *op, int e, const char *message, const char *path);
/* The same, the error object carrying "size" after "path" (size >= 0): read
 * over --max-bytes tells the file's size. */
int fsout_fail_size(const char *op, int e, const char *message, const char *path, long long size);

/* fsout_fail for a failure of the file service, whose fd (when e->at_fd)
 * is called fd_name ("<stdin>"); frees e->path. */
int fsout_fail_err(const char *op, struct files_err *e, const char *fd_name);

/* Append one ENTRY object for ent ("target" only when ent has one). */
int fsout_entry_json(struct buf *b, const struct files_entry *ent);

#endif
