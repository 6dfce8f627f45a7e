/*
 * err.h - the agent's one error convention, after redis's anetSetError: a
 * function that can fail takes `char *err` (a caller's buffer of ERR_LEN
 * bytes, or NULL when the caller does not want the text), writes one line
 * saying what went wrong into it with err_set, and returns -1 (or NULL).
 * Callers log or print the text; helpers never exit() and never log the
 * same failure twice.
 */
#ifndef SA_ERR_H
#define SA_ERR_H

#define ERR_LEN 256

/* Format into err (at most ERR_LEN bytes, always NUL-terminated); no-op for
 * a NULL err. */
void err_set(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
