/*
 * err.h - the agent's error convention, after redis's anetSetError: a
 * function that can fail takes `char *err` (a caller's buffer of ERR_LEN
 * bytes, or NULL when the caller does not want the text), writes one line
 * saying what went wrong into it with err_set, and returns -1 (or NULL),
 * errno set when the caller picks a code by it. Callers log or print the
 * text; helpers never exit() and never log the same failure twice.
 *
 * Two narrower forms, each for one kind of function and only there:
 *   const char **why  a pure decoder of untrusted input whose every reason
 *                     is a fixed text (a Connect envelope, a query, gzip):
 *                     *why points at a static string, so the hot path
 *                     formats nothing and the caller sends the reason as it
 *                     is. (A request message's fields are read by one reader,
 *                     agent/api/connect/pbjson.h, whose reasons name the
 *                     field: it takes err.)
 *   struct files_err  the file service (agent/files/files.h): a failure is
 *                     an errno, the path that failed (a descendant deep in a
 *                     recursive remove, not the path asked for) and the text,
 *                     which callers map to their own codes and formats.
 */
#ifndef SA_CORE_ERR_H
#define SA_CORE_ERR_H

#define ERR_LEN 256

/* Format into err (at most ERR_LEN bytes, always NUL-terminated); no-op for
 * a NULL err. */
void err_set(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
