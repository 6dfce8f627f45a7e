/*
 * request.c - decoding the process.Process requests (see process/request.h).
 */
#include "agent/api/process/request.h"
#include "agent/core/b64.h"
#include "agent/core/err.h"
#include "agent/core/num.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- fields ---- */

/* The member `name` of obj, or NULL when absent or null. */
static const cJSON *field(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An object member (or absent: *out NULL). */
static int get_object(const cJSON *obj, const char *name, const cJSON **out, char *err)
{
    *out = field(obj, name);
    if (*out && !cJSON_IsObject(*out)) {
        err_set(err, "'%s' must be an object", name);
        return -1;
    }
    return 0;
}

static int get_string(const cJSON *obj, const char *name, const char **out, char *err)
{
    const cJSON *v = field(obj, name);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) {
        err_set(err, "'%s' must be a string", name);
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

static int get_bool(const cJSON *obj, const char *name, int *present, int *out, char *err)
{
    const cJSON *v = field(obj, name);
    *present = v != NULL;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        err_set(err, "'%s' must be true or false", name);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A uint32 up to max: a whole number, or its decimal string. */
static int get_uint(const cJSON *obj, const char *name, uint32_t max, int *present, uint32_t *out,
                    char *err)
{
    const cJSON *v = field(obj, name);
    uint64_t n = 0;
    int ok;
    *present = v != NULL;
    *out = 0;
    if (!v) return 0;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        ok = isfinite(d) && d >= 0 && d <= max && floor(d) == d;
        n = ok ? (uint64_t)d : 0;
    } else {
        ok = cJSON_IsString(v) && v->valuestring && num_count(v->valuestring, max, &n) == 0;
    }
    if (!ok) {
        err_set(err, "'%s' must be a whole number from 0 to %u", name, (unsigned)max);
        return -1;
    }
    *out = (uint32_t)n;
    return 0;
}

/* ---- the pieces ---- */

static int decode_selector(const cJSON *msg, struct process_request_sel *r, char *err)
{
    const cJSON *p;
    memset(r, 0, sizeof *r);
    if (get_object(msg, "process", &p, err) < 0) return -1;
    if (!p) {
        err_set(err, "'process' (a pid or a tag) is required");
        return -1;
    }
    if (get_uint(p, "pid", UINT32_MAX, &r->has_pid, &r->pid, err) < 0 ||
        get_string(p, "tag", &r->tag, err) < 0)
        return -1;
    if (r->has_pid) r->tag = NULL; /* a oneof: the pid wins when both are there */
    if (!r->has_pid && !r->tag) {
        err_set(err, "'process' needs a 'pid' or a 'tag'");
        return -1;
    }
    return 0;
}

int process_request_selector(const cJSON *msg, struct process_request_sel *r, char *err)
{
    return decode_selector(msg, r, err);
}

/* {"size": {"cols", "rows"}} of a PTY message. */
static int decode_size(const cJSON *pty, unsigned short *cols, unsigned short *rows, char *err)
{
    const cJSON *size;
    uint32_t c, r;
    int has_c, has_r;
    if (get_object(pty, "size", &size, err) < 0) return -1;
    if (!size) {
        err_set(err, "'pty' needs a 'size'");
        return -1;
    }
    if (get_uint(size, "cols", PROCREQ_PTY_MAX, &has_c, &c, err) < 0 ||
        get_uint(size, "rows", PROCREQ_PTY_MAX, &has_r, &r, err) < 0)
        return -1;
    *cols = (unsigned short)c;
    *rows = (unsigned short)r;
    return 0;
}

static int decode_args(const cJSON *proc, const char *cmd, struct process_request_start *r, char *err)
{
    const cJSON *args = field(proc, "args");
    int n = 0;
    if (args && !cJSON_IsArray(args)) {
        err_set(err, "'args' must be an array of strings");
        return -1;
    }
    if (args && (n = cJSON_GetArraySize(args)) > PROCREQ_ARGS_MAX) {
        err_set(err, "more than %d args", PROCREQ_ARGS_MAX);
        return -1;
    }
    if (!(r->argv = calloc((size_t)n + 2, sizeof *r->argv))) {
        err_set(err, "out of memory");
        return -1;
    }
    r->argv[0] = (char *)cmd;
    int i = 1;
    for (const cJSON *a = args ? args->child : NULL; a; a = a->next, i++) {
        if (!cJSON_IsString(a) || !a->valuestring) {
            err_set(err, "'args' must be an array of strings");
            return -1;
        }
        r->argv[i] = a->valuestring;
    }
    return 0;
}

static int decode_envs(const cJSON *proc, struct process_request_start *r, char *err)
{
    const cJSON *envs;
    if (get_object(proc, "envs", &envs, err) < 0) return -1;
    int n = envs ? cJSON_GetArraySize(envs) : 0;
    if (n > PROCREQ_ARGS_MAX) {
        err_set(err, "more than %d envs", PROCREQ_ARGS_MAX);
        return -1;
    }
    if (!(r->envs = calloc((size_t)n + 1, sizeof *r->envs))) {
        err_set(err, "out of memory");
        return -1;
    }
    for (const cJSON *e = envs ? envs->child : NULL; e; e = e->next) {
        const char *k = e->string;
        if (!k || !*k || strchr(k, '=')) {
            err_set(err, "env name '%.64s' is empty or has '='", k ? k : "");
            return -1;
        }
        if (!cJSON_IsString(e) || !e->valuestring) {
            err_set(err, "env '%.64s' must be a string", k);
            return -1;
        }
        size_t kl = strlen(k), vl = strlen(e->valuestring);
        char *s = malloc(kl + vl + 2);
        if (!s) {
            err_set(err, "out of memory");
            return -1;
        }
        memcpy(s, k, kl);
        s[kl] = '=';
        memcpy(s + kl + 1, e->valuestring, vl + 1);
        r->envs[r->nenvs++] = s;
    }
    return 0;
}

/* "timeout": seconds, a number or its decimal string; 0 means none. */
static int decode_timeout(const cJSON *msg, double *out, char *err)
{
    const cJSON *v = field(msg, "timeout");
    *out = 0;
    if (!v) return 0;
    int ok = 0;
    if (cJSON_IsNumber(v))
        ok = isfinite(v->valuedouble) && v->valuedouble >= 0 && v->valuedouble <= NUM_MAX_SECONDS;
    else if (cJSON_IsString(v) && v->valuestring)
        ok = num_seconds(v->valuestring, NUM_MAX_SECONDS, out) == 0;
    if (!ok) {
        err_set(err, "'timeout' must be a number of seconds from 0 to %.0f", NUM_MAX_SECONDS);
        return -1;
    }
    if (cJSON_IsNumber(v)) *out = v->valuedouble;
    return 0;
}

static int decode_process(const cJSON *msg, struct process_request_start *r, char *err)
{
    const cJSON *proc;
    const char *cmd;
    if (get_object(msg, "process", &proc, err) < 0) return -1;
    if (!proc) {
        err_set(err, "'process' is required");
        return -1;
    }
    if (get_string(proc, "cmd", &cmd, err) < 0 || get_string(proc, "cwd", &r->cwd, err) < 0)
        return -1;
    if (!cmd || !*cmd) {
        err_set(err, "'process.cmd' is required");
        return -1;
    }
    return decode_args(proc, cmd, r, err) < 0 ? -1 : decode_envs(proc, r, err);
}

static int decode_start(const cJSON *msg, struct process_request_start *r, char *err)
{
    const cJSON *pty;
    int has_stdin, want_stdin = 0;
    if (decode_process(msg, r, err) < 0 || get_object(msg, "pty", &pty, err) < 0 ||
        get_string(msg, "tag", &r->tag, err) < 0 ||
        get_bool(msg, "stdin", &has_stdin, &want_stdin, err) < 0 ||
        decode_timeout(msg, &r->timeout, err) < 0)
        return -1;
    if (pty) {
        r->pty = 1;
        if (decode_size(pty, &r->cols, &r->rows, err) < 0) return -1;
    }
    /* Absent means on, as envd has it for clients older than the field. */
    r->stdin_pipe = !r->pty && (has_stdin ? want_stdin : 1);
    return 0;
}

int process_request_start(const cJSON *msg, struct process_request_start *r, char *err)
{
    memset(r, 0, sizeof *r);
    return decode_start(msg, r, err);
}

void process_request_start_free(struct process_request_start *r)
{
    for (size_t i = 0; i < r->nenvs; i++) free(r->envs[i]);
    free(r->envs);
    free(r->argv);
    memset(r, 0, sizeof *r);
}

/* {"stdin": b64} or {"pty": b64} of a ProcessInput. */
static int decode_input_bytes(const cJSON *input, struct process_request_input *r, char *err)
{
    const char *s = NULL, *which = "stdin";
    if (get_string(input, "stdin", &s, err) < 0) return -1;
    if (!s) {
        which = "pty";
        if (get_string(input, "pty", &s, err) < 0) return -1;
        r->to_pty = s != NULL;
    }
    if (!s) {
        err_set(err, "'input' needs 'stdin' or 'pty'");
        return -1;
    }
    if (b64_decode(&r->data, s, strlen(s)) < 0) {
        err_set(err, "'input.%s' is not base64 of at most %u bytes", which,
                (unsigned)PROCREQ_INPUT_MAX);
        return -1;
    }
    return 0;
}

static int decode_input(const cJSON *msg, struct process_request_input *r, char *err)
{
    const cJSON *input;
    if (get_object(msg, "input", &input, err) < 0) return -1;
    if (!input) {
        err_set(err, "'input' is required");
        return -1;
    }
    return decode_input_bytes(input, r, err);
}

int process_request_input(const cJSON *msg, struct process_request_input *r, char *err)
{
    memset(r, 0, sizeof *r);
    buf_init(&r->data, PROCREQ_INPUT_MAX);
    if (decode_selector(msg, &r->sel, err) < 0) return -1;
    return decode_input(msg, r, err);
}

void process_request_input_free(struct process_request_input *r) { buf_free(&r->data); }

static const struct {
    const char *name;
    int sig;
} signals[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGKILL", SIGKILL},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM}, {"SIGCONT", SIGCONT},
    {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP}, {"SIGWINCH", SIGWINCH}, {"SIGALRM", SIGALRM},
};

int process_request_signal_number(const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        return isfinite(d) && d >= 1 && d <= 64 && floor(d) == d ? (int)d : 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring) return 0;
    const char *s = v->valuestring;
    if (strncmp(s, "SIGNAL_", 7) != 0) return 0;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (!strcmp(s + 7, signals[i].name)) return signals[i].sig;
    return 0;
}

int process_request_signal(const cJSON *msg, struct process_request_signal *r, char *err)
{
    memset(r, 0, sizeof *r);
    if (decode_selector(msg, &r->sel, err) < 0) return -1;
    const cJSON *v = field(msg, "signal");
    if (!v || !(r->sig = process_request_signal_number(v))) {
        err_set(err, "'signal' must name a signal (SIGNAL_SIGKILL, SIGNAL_SIGTERM, ...)");
        return -1;
    }
    return 0;
}

int process_request_update(const cJSON *msg, struct process_request_update *r, char *err)
{
    const cJSON *pty;
    memset(r, 0, sizeof *r);
    if (decode_selector(msg, &r->sel, err) < 0 || get_object(msg, "pty", &pty, err) < 0) return -1;
    if (!pty) {
        err_set(err, "'pty' (the new size) is required");
        return -1;
    }
    return decode_size(pty, &r->cols, &r->rows, err);
}

int process_request_stream(const cJSON *msg, struct process_request_stream *r, char *err)
{
    const cJSON *start, *data, *keep;
    memset(r, 0, sizeof *r);
    buf_init(&r->in.data, PROCREQ_INPUT_MAX);
    if (get_object(msg, "start", &start, err) < 0 || get_object(msg, "data", &data, err) < 0 ||
        get_object(msg, "keepalive", &keep, err) < 0)
        return -1;
    if (start) {
        r->kind = PROCREQ_STREAM_START;
        return decode_selector(start, &r->in.sel, err);
    }
    if (data) {
        r->kind = PROCREQ_STREAM_DATA;
        return decode_input(data, &r->in, err);
    }
    if (keep) {
        r->kind = PROCREQ_STREAM_KEEPALIVE;
        return 0;
    }
    err_set(err, "a StreamInput message is 'start', 'data' or 'keepalive'");
    return -1;
}

void process_request_stream_free(struct process_request_stream *r) { process_request_input_free(&r->in); }
