/*
 * fuzz_process_request.c - libFuzzer target: every process.Process request decoder
 * (agent/api/process/request.c) on any input, checked and parsed as connect/rpc.c does
 * (jsoncheck, then cJSON: a handler gets an object). What a decoder
 * accepts must hold together (argv NULL-terminated with a command, envs
 * "NAME=VALUE" with a name, signals in range, a selector with a pid or a
 * tag), and every decoded request frees cleanly whatever the result.
 */
#include "agent/api/process/request.h"
#include "agent/core/err.h"
#include "agent/core/jsoncheck.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_start(const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_start r;
    if (process_request_start(msg, &r, err) == 0) {
        if (!r.argv || !r.argv[0] || !r.argv[0][0]) __builtin_trap();
        for (size_t i = 0; i < r.nenvs; i++) {
            const char *eq = strchr(r.envs[i], '=');
            if (!eq || eq == r.envs[i]) __builtin_trap();
        }
        if (r.envs[r.nenvs] || r.timeout < 0 || (r.pty && r.stdin_pipe)) __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap();
    }
    process_request_start_free(&r);
}

static void check_sel(const struct process_request_sel *s)
{
    if (!s->has_pid && !s->tag) __builtin_trap();
}

static void check_others(const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_sel sel;
    struct process_request_input in;
    struct process_request_signal sig;
    struct process_request_update up;
    struct process_request_stream st;
    if (process_request_selector(msg, &sel, err) == 0) check_sel(&sel);
    if (process_request_input(msg, &in, err) == 0) {
        check_sel(&in.sel);
        if (in.data.len > PROCREQ_INPUT_MAX) __builtin_trap();
    }
    process_request_input_free(&in);
    if (process_request_signal(msg, &sig, err) == 0 && (sig.sig < 1 || sig.sig > 64)) __builtin_trap();
    if (process_request_update(msg, &up, err) == 0) check_sel(&up.sel);
    if (process_request_stream(msg, &st, err) == 0 && st.kind == PROCREQ_STREAM_START) check_sel(&st.in.sel);
    process_request_stream_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsoncheck jc;
    if (jsoncheck((const char *)data, size, &jc) < 0 || jc.type != JSON_OBJECT) return 0;
    cJSON *msg = cJSON_ParseWithLength((const char *)data, size);
    if (!msg) return 0;
    if (cJSON_IsObject(msg)) {
        check_start(msg);
        check_others(msg);
    }
    cJSON_Delete(msg);
    return 0;
}
