/*
 * control.c - the unary process RPCs and StreamInput (see process/process.h;
 * README "sandbox-agent serve": the process API). Each decodes its request
 * (process/request.h), finds the process by pid or tag (not_found otherwise), acts
 * through the process table and answers {} or a Connect error. Signals go
 * to the process group; input is queued for the child without blocking.
 *
 * StreamInput is client-streaming: a request body of envelopes, `start`
 * (the selector) first, then `data` and `keepalive` in any number, each
 * acted on as it arrives; {} when the body ends.
 */
#include "agent/api/process/event.h"
#include "agent/api/process/process.h"
#include "agent/core/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define EMPTY "{}"

/* The request decoded, or the call failed: invalid_argument. */
static int decoded(struct rpc_call *call, int rc, const char *err)
{
    if (!process_table()) {
        rpc_fail(call, RPC_UNAVAILABLE, "no process table");
        return 0;
    }
    if (rc < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
        return 0;
    }
    return 1;
}

/* Answer {} for rc 0, else the error of errno. */
static void answer(struct rpc_call *call, int rc, const char *err)
{
    if (rc < 0) rpc_fail(call, connect_code_of_errno(errno), err);
    else rpc_reply(call, EMPTY, 2);
}

void process_control_list(struct rpc_call *call, const cJSON *msg)
{
    struct buf b;
    if (!decoded(call, 0, NULL)) return;
    buf_init(&b, SERVE_BODY_MAX);
    if (process_event_list(&b, process_table()) < 0)
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "the process list does not fit in 16 MiB");
    else
        rpc_reply(call, b.data, b.len);
    buf_free(&b);
}

void process_control_send_input(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_input r;
    struct proc *p;
    if (decoded(call, process_request_input(msg, &r, err), err) && (p = process_find(call, &r.sel)))
        answer(call, proc_send_input(p, r.to_pty, r.data.data, r.data.len, err), err);
    process_request_input_free(&r);
}

void process_control_send_signal(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_signal r;
    struct proc *p;
    if (decoded(call, process_request_signal(msg, &r, err), err) && (p = process_find(call, &r.sel)))
        answer(call, proc_signal(p, r.sig, err), err);
}

void process_control_close_stdin(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_sel sel;
    struct proc *p;
    if (decoded(call, process_request_selector(msg, &sel, err), err) && (p = process_find(call, &sel)))
        answer(call, proc_close_stdin(p, err), err);
}

void process_control_update(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_update r;
    struct proc *p;
    if (decoded(call, process_request_update(msg, &r, err), err) && (p = process_find(call, &r.sel)))
        answer(call, proc_resize(p, r.cols, r.rows, err), err);
}

/* ---- StreamInput ---- */

/* The call's state: the process, found by the start message. Held by pid:
 * the record may go while the body is read. */
struct sinput {
    int started;
    struct process_request_sel sel;
    char tag[256];
};

static struct proc *sinput_proc(struct rpc_call *call, struct sinput *si)
{
    return process_find(call, &si->sel); /* fails the call when gone */
}

static void sinput_start(struct rpc_call *call, struct sinput *si, const struct process_request_sel *sel)
{
    if (si->started) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, "StreamInput: a second start message");
        return;
    }
    si->sel = *sel;
    if (sel->tag) {
        snprintf(si->tag, sizeof si->tag, "%s", sel->tag);
        si->sel.tag = si->tag;
    }
    if (sinput_proc(call, si)) si->started = 1;
}

static void sinput_message(struct rpc_call *call, const cJSON *msg, void *ctx)
{
    struct sinput *si = ctx;
    char err[ERR_LEN];
    struct process_request_stream r;
    struct proc *p;
    if (process_request_stream(msg, &r, err) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
    } else if (r.kind == PROCREQ_STREAM_START) {
        sinput_start(call, si, &r.in.sel);
    } else if (r.kind == PROCREQ_STREAM_DATA && !si->started) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, "StreamInput: data before the start message");
    } else if (r.kind == PROCREQ_STREAM_DATA && (p = sinput_proc(call, si)) &&
               proc_send_input(p, r.in.to_pty, r.in.data.data, r.in.data.len, err) < 0) {
        rpc_fail(call, connect_code_of_errno(errno), err);
    }
    process_request_stream_free(&r);
}

static void sinput_end(struct rpc_call *call, void *ctx)
{
    struct sinput *si = ctx;
    if (!si->started) rpc_fail(call, RPC_INVALID_ARGUMENT, "StreamInput: no start message");
    else rpc_reply(call, EMPTY, 2);
}

void process_control_stream_input(struct rpc_call *call, const cJSON *msg)
{
    struct sinput *si = calloc(1, sizeof *si);
    if (!decoded(call, 0, NULL)) {
        free(si);
        return;
    }
    if (!si) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    struct rpc_hooks h = {.message = sinput_message, .input_end = sinput_end, .release = free,
                          .ctx = si};
    rpc_set_hooks(call, &h);
}
