/*
 * sentinel.h - the job outcome as the protocol prints it: the core JSON object
 * {"status", "exit_code", "result", "nonce"} (then "oom_killed": true when
 * the kernel's OOM killer ended the job, "result_error" when a result file
 * was refused, and "job_id" for the webhook) and the sentinel line
 * __SANDBOX_RESULT__<base64(core)>.
 */
#ifndef SA_RUNNER_RUN_SENTINEL_H
#define SA_RUNNER_RUN_SENTINEL_H

#include "agent/core/buf.h"

#include <stddef.h>

struct job_outcome {
    int exit_code;
    const char *result;       /* the result object's raw text, or NULL */
    size_t result_len;
    const char *result_error; /* NULL or "" when none */
    const char *nonce;
    size_t nonce_len;
    int oom_killed;           /* the kernel's OOM killer ended the job: "oom_killed": true */
};

/* The core object; job_id != NULL adds "job_id" (the webhook payload). */
int sentinel_json(struct buf *out, const struct job_outcome *o, const char *job_id);
/* SENTINEL_RESULT + base64(json) + "\n". */
int sentinel_line(struct buf *out, const char *json, size_t n);

#endif
