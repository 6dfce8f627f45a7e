/*
 * rpc_input.c - the request body of a client-streaming call (see connect/rpc.h): the
 * Connect streaming request, a sequence of envelopes, each decoded and
 * handed to the method's `message` as soon as it is whole; the end of the
 * body is the end of the client's stream.
 *
 * The body sink finds its call through the list of calls whose body is
 * being read, never through a pointer of its own: a call that finished
 * early (a refusal) may be freed while its body still arrives, and then
 * the rest is read and dropped. What waits for the rest of an envelope is
 * at most one envelope head and SERVE_BODY_MAX bytes, drawn from the memory
 * budget (refused: resource_exhausted).
 */
#include "agent/api/connect/rpc_priv.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <cJSON.h>

static struct rpc_call *reading; /* calls whose body is being read */
/* Pending bytes up to this are drawn whatever the budget says, as a small
 * unary body is (http/httpreq.c): small messages are never refused. */
#define SMALL (64u * 1024u)

static struct rpc_call *find(const struct conn *c)
{
    for (struct rpc_call *call = reading; call; call = call->in_next)
        if (call->conn == c) return call;
    return NULL;
}

void rpc_input_release(struct rpc_call *call)
{
    if (call->reading) {
        if (call->in_prev) call->in_prev->in_next = call->in_next;
        else reading = call->in_next;
        if (call->in_next) call->in_next->in_prev = call->in_prev;
        call->reading = 0;
    }
    buf_free(&call->pending);
}

/* One whole envelope: its message to the handler. Returns 0, or -1 when
 * the call is over. */
static int deliver(struct rpc_call *call, const struct connect_envelope *e)
{
    const char *why = "the request message is not a JSON object";
    if (e->flags & CONNECT_FLAG_COMPRESSED) {
        rpc_fail(call, RPC_UNIMPLEMENTED, "compressed messages are not supported");
        return -1;
    }
    if (e->flags & CONNECT_FLAG_END) return 0; /* no such message from a client: ignored */
    cJSON *msg = rpc_parse_json(e->msg, e->len, &why);
    if (!msg) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, why);
        return -1;
    }
    if (call->hooks.message) call->hooks.message(call, msg, call->hooks.ctx);
    cJSON_Delete(msg);
    return call->finished ? -1 : 0;
}

/* Every whole envelope pending, in order. */
static void take_envelopes(struct rpc_call *call)
{
    struct connect_envelope e;
    const char *why = NULL;
    size_t used = 0;
    while (!call->finished) {
        long k = connect_envelope_get(call->pending.data + used, call->pending.len - used,
                                      SERVE_BODY_MAX, &e, &why);
        if (k == 0) break;
        if (k < 0) {
            rpc_fail(call, RPC_INVALID_ARGUMENT, why);
            break;
        }
        used += (size_t)k;
        if (deliver(call, &e) < 0) break;
    }
    if (!call->finished) buf_consume(&call->pending, used);
}

static int on_body(void *ctx, const char *p, size_t n)
{
    struct rpc_call *call = find(ctx);
    if (!call || call->finished) return 0; /* answered already: dropped */
    rpc_enter(call);
    if (call->pending.len + n <= SMALL) buf_reserve_force(&call->pending, n);
    if (buf_append(&call->pending, p, n) < 0) /* past the bound, or the memory budget's */
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED,
                 buf_over(&call->pending, n) ? "request message larger than 16 MiB" : SERVE_BUDGET_SPENT);
    else
        take_envelopes(call);
    rpc_leave(call);
    return 0;
}

int rpc_input_begin(struct conn *c, const struct rpc_method *m)
{
    struct rpc_call *call = rpc_call_open(c, m);
    if (!call) return -1;
    buf_init_budget(&call->pending, CONNECT_ENVELOPE_HEAD + SERVE_BODY_MAX);
    call->reading = 1;
    call->in_next = reading;
    if (reading) reading->in_prev = call;
    reading = call;
    httpreq_body_sink(conn_req(c), on_body, c);
    rpc_enter(call);
    m->start(call, NULL);
    rpc_leave(call);
    return 0;
}

void rpc_input_end(struct conn *c)
{
    struct rpc_call *call = find(c);
    if (!call || call->finished) return;
    rpc_enter(call);
    if (call->pending.len)
        rpc_fail(call, RPC_INVALID_ARGUMENT, "the request body ends inside an envelope");
    else if (call->hooks.input_end)
        call->hooks.input_end(call, call->hooks.ctx);
    else
        rpc_reply(call, "{}", 2);
    rpc_leave(call);
}
