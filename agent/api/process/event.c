/*
 * event.c - writing the process.Process messages (see process/event.h).
 */
#include "agent/api/process/event.h"
#include "agent/core/b64.h"
#include "agent/core/jsonw.h"

#include <string.h>

int process_event_start(struct buf *b, pid_t pid)
{
    return buf_puts(b, "{\"event\": {\"start\": {\"pid\": ") < 0 ||
                   buf_put_u64(b, (unsigned long long)pid, 0) < 0 || buf_puts(b, "}}}") < 0
               ? -1
               : 0;
}

/* The data event: its head (one per channel), the base64, DATA_TAIL, with
 * an offset DATA_OFFSET and its digits, then "}". */
static const char *const data_heads[PROC_CHANS] = {
    "{\"event\": {\"data\": {\"stdout\": \"",
    "{\"event\": {\"data\": {\"stderr\": \"",
    "{\"event\": {\"data\": {\"pty\": \"",
};
#define DATA_TAIL "\"}}"
#define DATA_OFFSET ", \"offset\": "

/* The decimal digits of v at out (NULL: only counted). */
static size_t u64_digits(uint64_t v, char *out)
{
    size_t k = 1;
    for (uint64_t t = v; t >= 10; t /= 10) k++;
    for (size_t i = k; out && i-- > 0; v /= 10) out[i] = (char)('0' + v % 10);
    return k;
}

size_t process_event_data_len(enum proc_chan ch, size_t n, int with_offset, uint64_t offset)
{
    return strlen(data_heads[ch]) + b64_encoded_len(n) + sizeof DATA_TAIL - 1 + 1 /* "}" */ +
           (with_offset ? sizeof DATA_OFFSET - 1 + u64_digits(offset, NULL) : 0);
}

void process_event_data_put(char *d, enum proc_chan ch, const char *p, size_t n, int with_offset,
                            uint64_t offset)
{
    size_t k = strlen(data_heads[ch]);
    memcpy(d, data_heads[ch], k);
    d += k;
    d += b64_encode_to(d, p, n);
    memcpy(d, DATA_TAIL, sizeof DATA_TAIL - 1);
    d += sizeof DATA_TAIL - 1;
    if (with_offset) {
        memcpy(d, DATA_OFFSET, sizeof DATA_OFFSET - 1);
        d += sizeof DATA_OFFSET - 1;
        d += u64_digits(offset, d);
    }
    *d = '}';
}

int process_event_data(struct buf *b, enum proc_chan ch, const char *p, size_t n, int with_offset,
                uint64_t offset)
{
    size_t len = process_event_data_len(ch, n, with_offset, offset);
    if (buf_reserve(b, len) < 0) return -1;
    process_event_data_put(b->data + b->len, ch, p, n, with_offset, offset);
    b->len += len;
    return 0;
}

int process_event_keepalive(struct buf *b) { return buf_puts(b, "{\"event\": {\"keepalive\": {}}}"); }

int process_event_end(struct buf *b, const struct proc_end *e)
{
    if (buf_puts(b, "{\"event\": {\"end\": {\"exitCode\": ") < 0 ||
        buf_put_i64(b, e->exit_code) < 0 || buf_puts(b, ", \"exited\": ") < 0 ||
        buf_puts(b, e->exited ? "true" : "false") < 0 || buf_puts(b, ", ") < 0 ||
        jsonw_key(b, "status") < 0 || jsonw_str(b, e->status, strlen(e->status), JSONW_REPLACE) < 0)
        return -1;
    if (e->error[0] && (buf_puts(b, ", ") < 0 || jsonw_key(b, "error") < 0 ||
                        jsonw_str(b, e->error, strlen(e->error), JSONW_REPLACE) < 0))
        return -1;
    /* Beyond envd (SDKs ignore unknown fields): only when true. */
    if (e->oom_killed && buf_puts(b, ", \"oomKilled\": true") < 0) return -1;
    return buf_puts(b, "}}}");
}

static int str_array(struct buf *b, char *const *v)
{
    if (buf_putc(b, '[') < 0) return -1;
    for (size_t i = 0; v && v[i]; i++)
        if ((i && buf_puts(b, ", ") < 0) || jsonw_cstr(b, v[i]) < 0) return -1;
    return buf_putc(b, ']');
}

static int process_info(struct buf *b, struct proc *p)
{
    char *const *argv = proc_argv(p);
    const char *cwd = proc_cwd(p), *tag = proc_tag(p);
    if (buf_puts(b, "{\"config\": {\"cmd\": ") < 0 || jsonw_cstr(b, argv[0]) < 0 ||
        buf_puts(b, ", \"args\": ") < 0 || str_array(b, argv + 1) < 0 ||
        buf_puts(b, ", \"envs\": ") < 0 || jsonw_env(b, proc_envs(p)) < 0)
        return -1;
    if (cwd && (buf_puts(b, ", \"cwd\": ") < 0 || jsonw_cstr(b, cwd) < 0)) return -1;
    if (buf_puts(b, "}, \"pid\": ") < 0 || buf_put_u64(b, (unsigned long long)proc_pid(p), 0) < 0)
        return -1;
    if (tag && (buf_puts(b, ", \"tag\": ") < 0 || jsonw_cstr(b, tag) < 0)) return -1;
    return buf_putc(b, '}');
}

int process_event_list(struct buf *b, struct proc_table *t)
{
    int first = 1;
    if (buf_puts(b, "{\"processes\": [") < 0) return -1;
    for (struct proc *p = proc_first(t); p; p = proc_next(p)) {
        if (!proc_running(p)) continue;
        if ((!first && buf_puts(b, ", ") < 0) || process_info(b, p) < 0) return -1;
        first = 0;
    }
    return buf_puts(b, "]}");
}
