/*
 * sentinel.c - building the outcome JSON and the sentinel line.
 *
 * Key order and separators follow the bash runner's json.dumps, so a log
 * scanner that compares text (not just parsed values) sees the same bytes.
 */
#include "runner/run/sentinel.h"
#include "agent/core/b64.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"

int sentinel_json(struct buf *b, const struct job_outcome *o, const char *job_id)
{
    int r = 0;
    r |= buf_puts(b, "{");
    r |= jsonw_key(b, "status");
    r |= jsonw_cstr(b, o->exit_code == 0 ? STATUS_SUCCEEDED : STATUS_FAILED);
    r |= buf_puts(b, ", ");
    r |= jsonw_key(b, "exit_code");
    r |= buf_printf(b, "%d", o->exit_code);
    r |= buf_puts(b, ", ");
    r |= jsonw_key(b, "result");
    if (o->result)
        r |= buf_append(b, o->result, o->result_len);
    else
        r |= buf_printf(b, "{\"exit_code\": %d}", o->exit_code);
    r |= buf_puts(b, ", ");
    r |= jsonw_key(b, "nonce");
    r |= jsonw_str(b, o->nonce, o->nonce_len, JSONW_SURROGATEESCAPE);
    if (o->oom_killed) { /* only when true, right after the nonce (README) */
        r |= buf_puts(b, ", ");
        r |= jsonw_key(b, "oom_killed");
        r |= buf_puts(b, "true");
    }
    if (o->result_error && o->result_error[0]) {
        r |= buf_puts(b, ", ");
        r |= jsonw_key(b, "result_error");
        r |= jsonw_cstr(b, o->result_error);
    }
    if (job_id) {
        r |= buf_puts(b, ", ");
        r |= jsonw_key(b, "job_id");
        r |= jsonw_cstr(b, job_id);
    }
    r |= buf_puts(b, "}");
    return r ? -1 : 0;
}

int sentinel_line(struct buf *b, const char *json, size_t n)
{
    if (buf_puts(b, SENTINEL_RESULT) < 0) return -1;
    if (b64_encode(b, json, n) < 0) return -1;
    return buf_putc(b, '\n');
}
