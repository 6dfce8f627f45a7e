/*
 * result.h - reading the job's result file ($SANDBOX_RESULT) for the sentinel.
 *
 * The file is written by the untrusted workload. It is accepted only when it
 * is a regular file (not a symlink, FIFO or device) no larger than the bound,
 * valid UTF-8, and exactly one JSON object; it is then carried as written.
 * Opening never blocks (O_NONBLOCK, O_NOFOLLOW) and reading never passes the
 * bound, so /dev/zero or a FIFO cannot hang the agent.
 */
#ifndef SA_RUNNER_RUN_RESULT_H
#define SA_RUNNER_RUN_RESULT_H

#include <stddef.h>

struct job_result {
    char *raw;      /* the object's text (surrounding whitespace trimmed), or NULL */
    size_t len;
    char error[256]; /* one-line reason the file was refused, "" when none */
};

/* Never fails: a missing file gives raw == NULL and no error. */
void result_read(const char *path, size_t max_bytes, struct job_result *out);
/* Validate text already in memory (the part result_read and the fuzzer share). */
void result_accept(char *text, size_t n, struct job_result *out);
void result_free(struct job_result *r);

/* SANDBOX_RESULT_MAX_BYTES: 0 on success, -1 with err for a bad value. */
int result_max_bytes(size_t *out, char *err);

#endif
