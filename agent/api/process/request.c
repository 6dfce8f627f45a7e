/*
 * request.c - decoding the process.Process requests (see process/request.h).
 */
#include "agent/api/process/request.h"
#include "agent/api/connect/pbjson.h"
#include "agent/core/b64.h"
#include "agent/core/err.h"
#include "agent/core/num.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A reader of a process.Process message (connect/pbjson.h). */
static struct pbjson reader(const cJSON *msg, char *err) { return (struct pbjson){msg, 1, err}; }

/* ---- the pieces ---- */

static int decode_selector(const struct pbjson *msg, struct process_request_sel *r)
{
    struct pbjson p;
    memset(r, 0, sizeof *r);
    int has = pbjson_object(msg, "process", &p);
    if (has < 0) return -1;
    if (!has) return err_set(msg->err, "'process' (a pid or a tag) is required"), -1;
    if ((r->has_pid = pbjson_uint(&p, "pid", UINT32_MAX, &r->pid)) < 0 ||
        pbjson_string(&p, "tag", PBJSON_UNBOUNDED, &r->tag) < 0)
        return -1;
    if (r->has_pid) r->tag = NULL; /* a oneof: the pid wins when both are there */
    if (!r->has_pid && !r->tag) return err_set(msg->err, "'process' needs a 'pid' or a 'tag'"), -1;
    return 0;
}

int process_request_selector(const cJSON *msg, struct process_request_sel *r, char *err)
{
    struct pbjson m = reader(msg, err);
    return decode_selector(&m, r);
}

/* {"size": {"cols", "rows"}} of a PTY message. */
static int decode_size(const struct pbjson *pty, unsigned short *cols, unsigned short *rows)
{
    struct pbjson size;
    uint32_t c = 0, r = 0;
    int has = pbjson_object(pty, "size", &size);
    if (has < 0) return -1;
    if (!has) return err_set(pty->err, "'pty' needs a 'size'"), -1;
    if (pbjson_uint(&size, "cols", PROCREQ_PTY_MAX, &c) < 0 || pbjson_uint(&size, "rows", PROCREQ_PTY_MAX, &r) < 0)
        return -1;
    *cols = (unsigned short)c;
    *rows = (unsigned short)r;
    return 0;
}

static int decode_args(const struct pbjson *proc, const char *cmd, struct process_request_start *r)
{
    const cJSON *args = NULL;
    int i = 1;
    if (pbjson_array(proc, "args", PROCREQ_ARGS_MAX, &args) < 0) return -1;
    if (!(r->argv = calloc((size_t)(args ? cJSON_GetArraySize(args) : 0) + 2, sizeof *r->argv)))
        return err_set(proc->err, "out of memory"), -1;
    r->argv[0] = (char *)cmd;
    for (const cJSON *a = args ? args->child : NULL; a; a = a->next, i++) {
        if (!cJSON_IsString(a) || !a->valuestring) return err_set(proc->err, "'args' must be an array of strings"), -1;
        r->argv[i] = a->valuestring;
    }
    return 0;
}

static int decode_envs(const struct pbjson *proc, struct process_request_start *r)
{
    const cJSON *envs = NULL;
    if (pbjson_map(proc, "envs", PROCREQ_ARGS_MAX, &envs) < 0) return -1;
    if (!(r->envs = calloc((size_t)(envs ? cJSON_GetArraySize(envs) : 0) + 1, sizeof *r->envs)))
        return err_set(proc->err, "out of memory"), -1;
    for (const cJSON *e = envs ? envs->child : NULL; e; e = e->next) {
        const char *k = e->string;
        if (!k || !*k || strchr(k, '='))
            return err_set(proc->err, "env name '%.64s' is empty or has '='", k ? k : ""), -1;
        size_t kl = strlen(k), vl = strlen(e->valuestring);
        char *s = malloc(kl + vl + 2);
        if (!s) return err_set(proc->err, "out of memory"), -1;
        memcpy(s, k, kl);
        s[kl] = '=';
        memcpy(s + kl + 1, e->valuestring, vl + 1);
        r->envs[r->nenvs++] = s;
    }
    return 0;
}

/* "timeout": seconds, a number or its decimal string; 0 means none. */
static int decode_timeout(const struct pbjson *msg, double *out)
{
    const cJSON *v = pbjson_field(msg, "timeout");
    int ok = 0;
    *out = 0;
    if (!v) return 0;
    if (cJSON_IsNumber(v))
        ok = isfinite(v->valuedouble) && v->valuedouble >= 0 && v->valuedouble <= NUM_MAX_SECONDS;
    else if (cJSON_IsString(v) && v->valuestring)
        ok = num_seconds(v->valuestring, NUM_MAX_SECONDS, out) == 0;
    if (!ok) return err_set(msg->err, "'timeout' must be a number of seconds from 0 to %.0f", NUM_MAX_SECONDS), -1;
    if (cJSON_IsNumber(v)) *out = v->valuedouble;
    return 0;
}

static int decode_process(const struct pbjson *msg, struct process_request_start *r)
{
    struct pbjson proc;
    const char *cmd = NULL;
    int has = pbjson_object(msg, "process", &proc);
    if (has < 0) return -1;
    if (!has) return err_set(msg->err, "'process' is required"), -1;
    if (pbjson_string(&proc, "cmd", PBJSON_UNBOUNDED, &cmd) < 0 ||
        pbjson_string(&proc, "cwd", PBJSON_UNBOUNDED, &r->cwd) < 0)
        return -1;
    if (!cmd || !*cmd) return err_set(msg->err, "'process.cmd' is required"), -1;
    return decode_args(&proc, cmd, r) < 0 ? -1 : decode_envs(&proc, r);
}

static int decode_start(const struct pbjson *msg, struct process_request_start *r)
{
    struct pbjson pty;
    int has_stdin, want_stdin = 0;
    if (decode_process(msg, r) < 0 || (r->pty = pbjson_object(msg, "pty", &pty)) < 0 ||
        pbjson_string(msg, "tag", PBJSON_UNBOUNDED, &r->tag) < 0 ||
        (has_stdin = pbjson_bool(msg, "stdin", &want_stdin)) < 0 || decode_timeout(msg, &r->timeout) < 0)
        return -1;
    if (r->pty && decode_size(&pty, &r->cols, &r->rows) < 0) return -1;
    /* Absent means on, as envd has it for clients older than the field. */
    r->stdin_pipe = !r->pty && (has_stdin ? want_stdin : 1);
    return 0;
}

int process_request_start(const cJSON *msg, struct process_request_start *r, char *err)
{
    struct pbjson m = reader(msg, err);
    memset(r, 0, sizeof *r);
    return decode_start(&m, r);
}

void process_request_start_free(struct process_request_start *r)
{
    for (size_t i = 0; i < r->nenvs; i++) free(r->envs[i]);
    free(r->envs);
    free(r->argv);
    memset(r, 0, sizeof *r);
}

/* {"input": {"stdin": b64} or {"pty": b64}}: a ProcessInput. */
static int decode_input(const struct pbjson *msg, struct process_request_input *r)
{
    struct pbjson input;
    const char *s = NULL, *which = "stdin";
    int has = pbjson_object(msg, "input", &input);
    if (has < 0) return -1;
    if (!has) return err_set(msg->err, "'input' is required"), -1;
    if (pbjson_string(&input, "stdin", PBJSON_UNBOUNDED, &s) < 0) return -1;
    if (!s) {
        which = "pty";
        if ((r->to_pty = pbjson_string(&input, "pty", PBJSON_UNBOUNDED, &s)) < 0) return -1;
    }
    if (!s) return err_set(msg->err, "'input' needs 'stdin' or 'pty'"), -1;
    if (b64_decode(&r->data, s, strlen(s)) < 0)
        return err_set(msg->err, "'input.%s' is not base64 of at most %u bytes", which, (unsigned)PROCREQ_INPUT_MAX), -1;
    return 0;
}

int process_request_input(const cJSON *msg, struct process_request_input *r, char *err)
{
    struct pbjson m = reader(msg, err);
    memset(r, 0, sizeof *r);
    buf_init(&r->data, PROCREQ_INPUT_MAX);
    return decode_selector(&m, &r->sel) < 0 ? -1 : decode_input(&m, r);
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
    struct pbjson m = reader(msg, err);
    memset(r, 0, sizeof *r);
    if (decode_selector(&m, &r->sel) < 0) return -1;
    const cJSON *v = pbjson_field(&m, "signal");
    if (!v || !(r->sig = process_request_signal_number(v)))
        return err_set(err, "'signal' must name a signal (SIGNAL_SIGKILL, SIGNAL_SIGTERM, ...)"), -1;
    return 0;
}

int process_request_update(const cJSON *msg, struct process_request_update *r, char *err)
{
    struct pbjson m = reader(msg, err), pty;
    int has;
    memset(r, 0, sizeof *r);
    if (decode_selector(&m, &r->sel) < 0 || (has = pbjson_object(&m, "pty", &pty)) < 0) return -1;
    if (!has) return err_set(err, "'pty' (the new size) is required"), -1;
    return decode_size(&pty, &r->cols, &r->rows);
}

int process_request_stream(const cJSON *msg, struct process_request_stream *r, char *err)
{
    struct pbjson m = reader(msg, err), start, data, keep;
    int has_start, has_data, has_keep;
    memset(r, 0, sizeof *r);
    buf_init(&r->in.data, PROCREQ_INPUT_MAX);
    if ((has_start = pbjson_object(&m, "start", &start)) < 0 || (has_data = pbjson_object(&m, "data", &data)) < 0 ||
        (has_keep = pbjson_object(&m, "keepalive", &keep)) < 0)
        return -1;
    if (has_start) {
        r->kind = PROCREQ_STREAM_START;
        return decode_selector(&start, &r->in.sel);
    }
    if (has_data) {
        r->kind = PROCREQ_STREAM_DATA;
        return decode_input(&data, &r->in);
    }
    if (has_keep) {
        r->kind = PROCREQ_STREAM_KEEPALIVE;
        return 0;
    }
    return err_set(err, "a StreamInput message is 'start', 'data' or 'keepalive'"), -1;
}

void process_request_stream_free(struct process_request_stream *r) { process_request_input_free(&r->in); }
