/*
 * stream.c - Start and Connect (see process/process.h; README "sandbox-agent
 * serve": the process API): one stream subscribed to one process.
 *
 * The start event goes first, then data events pulled from the process's
 * rings at the stream's own offsets, one chunk per channel in turn, for as
 * long as the connection takes them: when its queue is full the stream
 * waits for `more`, and the child's output waits for the stream (it is
 * paced: proc.h), unless the stream read nothing for the stall time; then
 * the rings keep what the child writes meanwhile, and the stream jumps to
 * the oldest byte kept (the jump is logged). Once the process has ended and
 * every channel is read to its end, the end event and the end-stream
 * message; the end is then sent, and the record may go some time later
 * (proc_end_sent: sent is not delivered, the client may have gone).
 * Keepalives go out while the stream is idle. The client leaving only
 * unsubscribes: the process runs on.
 *
 * Deadlines (Connect-Timeout-Ms): on Connect the stream ends with
 * deadline_exceeded and the process runs on. On Start the sooner of the
 * header and the request's `timeout` is the process's timeout (it stops
 * the process and what it started, whether or not the client is still
 * there). When it is the header's, the stream ends with deadline_exceeded
 * and no end event, which E2B's SDKs turn into their timeout error; the
 * record keeps its end for a later Connect. A sooner `timeout`: its end
 * event follows, as before.
 */
#include "agent/api/process/event.h"
#include "agent/api/process/process.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pstream {
    struct rpc_call *call;
    struct proc_sub sub;
    uint64_t off[PROC_CHANS]; /* the next byte to send of each channel */
    int with_offset;          /* a replay: data events carry their offsets */
    int blocked;              /* the connection is full: wait for `more` */
    int is_start;
    int deadline_stops;       /* a Start whose Connect-Timeout-Ms is its timeout */
};

static struct buf msgbuf; /* one message at a time (one loop) */
static char chunk[PROCESS_EVENT_DATA_MAX];

static struct buf *msg_buf(void)
{
    if (!msgbuf.max) buf_init(&msgbuf, 2 * PROCESS_EVENT_DATA_MAX + 1024);
    buf_reset(&msgbuf);
    return &msgbuf;
}

/* The stream is over (or its client left): forget it. */
static void close_stream(struct pstream *ps)
{
    proc_unsubscribe(&ps->sub);
    free(ps);
}

/* Send what b holds. Returns 1 (more fits), 0 (sent; now wait) or -1 (the
 * call is going: cancel follows). */
static int send_msg(struct pstream *ps, struct buf *b, int built)
{
    if (built < 0) {
        log_warn("api: out of memory writing an event; dropping the stream");
        rpc_fail(ps->call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        close_stream(ps);
        return -1;
    }
    int rc = rpc_send(ps->call, b->data, b->len);
    if (rc == 0) ps->blocked = 1;
    return rc;
}

static void send_end(struct pstream *ps)
{
    struct proc *p = ps->sub.p;
    struct buf *b = msg_buf();
    if (send_msg(ps, b, process_event_end(b, proc_end(p))) < 0) return;
    rpc_end(ps->call);
    proc_end_sent(p); /* the record may go once the time to reconnect is over */
    close_stream(ps);
}

/* One chunk of channel ch, if it has one. Returns 1 (sent, more fits), 0
 * (nothing to send, or sent and now full: see ps->blocked) or -1 (over). */
static int send_chunk(struct pstream *ps, enum proc_chan ch)
{
    struct proc *p = ps->sub.p;
    uint64_t skipped;
    size_t n;
    /* Encoded from the ring where it lies; copied once a lap, at its seam. */
    const char *src = proc_peek(p, ch, &ps->off[ch], sizeof chunk, &n, &skipped);
    if (!src && n) n = proc_read(p, ch, &ps->off[ch], (char *)(src = chunk), n, NULL);
    if (skipped)
        log_warn("api: process %d: a stream fell behind; %llu bytes of its output skipped",
                 (int)proc_pid(p), (unsigned long long)skipped);
    if (n == 0) return 0;
    proc_pace_moved(&ps->sub); /* output held back for this stream may flow */
    /* Encoded straight into the connection's queue, behind its envelope. */
    uint64_t at = ps->off[ch] - n;
    size_t len = process_event_data_len(ch, n, ps->with_offset, at);
    char *d = rpc_send_begin(ps->call, len);
    if (!d) return -1; /* the connection is going: cancel follows */
    process_event_data_put(d, ch, src, n, ps->with_offset, at);
    int rc = rpc_send_end(ps->call);
    if (rc == 0) ps->blocked = 1;
    return rc;
}

/* Send what the rings hold while the connection takes it; the end after. */
static void pump(struct pstream *ps)
{
    struct proc *p = ps->sub.p;
    int more = 1;
    while (more && !ps->blocked) {
        more = 0;
        for (int ch = 0; ch < PROC_CHANS && !ps->blocked; ch++) {
            if (!proc_has_chan(p, ch)) continue;
            int rc = send_chunk(ps, ch);
            if (rc < 0) return;
            if (rc > 0) more = 1;
        }
    }
    if (ps->blocked || !proc_end(p)) return;
    for (int ch = 0; ch < PROC_CHANS; ch++)
        if (proc_has_chan(p, ch) && ps->off[ch] < proc_read_end(p, ch)) return;
    send_end(ps);
}

static void on_ready(struct proc_sub *s, void *ctx) { pump(ctx); }

static void on_more(struct rpc_call *call, void *ctx)
{
    struct pstream *ps = ctx;
    ps->blocked = 0;
    pump(ps);
}

static void on_cancel(struct rpc_call *call, void *ctx) { close_stream(ctx); }

/* The agent stops: every process has ended by now (the API stops them
 * first), so the end goes out at once, whatever output is still unsent. */
static void on_stop(struct rpc_call *call, void *ctx)
{
    struct pstream *ps = ctx;
    if (proc_end(ps->sub.p)) {
        send_end(ps);
        return;
    }
    rpc_fail(call, RPC_UNAVAILABLE, "the agent is shutting down");
    close_stream(ps);
}

static void on_keepalive(struct rpc_call *call, void *ctx)
{
    struct pstream *ps = ctx;
    struct buf *b = msg_buf();
    if (!ps->blocked) send_msg(ps, b, process_event_keepalive(b));
}

/* Connect: the deadline ends the stream, never the process. A Start whose
 * deadline is its timeout: the process is stopped too, and no end event
 * goes out. A Start with a sooner `timeout`: that one stopped it already,
 * and its end event follows. */
static void on_deadline(struct rpc_call *call, void *ctx)
{
    struct pstream *ps = ctx;
    if (ps->is_start && !ps->deadline_stops) return;
    if (ps->deadline_stops) proc_stop(ps->sub.p); /* its own timer may come a moment later */
    rpc_fail(call, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
    close_stream(ps);
}

/* Subscribe a stream to p from off (each channel) and send its start.
 * is_start: 0 Connect, 1 Start, 2 a Start whose deadline stops it. */
static void stream_open(struct rpc_call *call, struct proc *p, uint64_t off, int live,
                        int with_offset, int is_start)
{
    struct pstream *ps = calloc(1, sizeof *ps);
    struct buf *b = msg_buf();
    if (!ps || process_event_start(b, proc_pid(p)) < 0) {
        free(ps);
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    ps->call = call;
    ps->with_offset = with_offset;
    ps->is_start = is_start > 0;
    ps->deadline_stops = is_start == 2;
    for (int ch = 0; ch < PROC_CHANS; ch++) ps->off[ch] = live ? proc_read_end(p, ch) : off;
    proc_subscribe(p, &ps->sub, on_ready, ps);
    /* The process's output waits for this stream (README: slow readers). */
    proc_pace_sub(&ps->sub, ps->off);
    struct rpc_hooks h = {.more = on_more, .cancel = on_cancel, .stop = on_stop,
                          .deadline = on_deadline,
                          .keepalive = on_keepalive, .ctx = ps};
    rpc_set_hooks(call, &h);
    if (send_msg(ps, b, 0) < 0) return;
    pump(ps);
}

/* The timeout of a Start: the request's or Connect-Timeout-Ms, the sooner
 * (the process's own: it stops it even when the client has left by then,
 * as an SDK aborting at its own deadline has). *hdr: the header's is it. */
static double start_timeout(struct rpc_call *call, double req, int *hdr)
{
    uint64_t ms;
    *hdr = 0;
    if (!rpc_timeout(call, &ms)) return req;
    double t = (double)ms / 1000.0;
    if (t <= 0) t = 0.001;
    if (req > 0 && req <= t) return req;
    *hdr = 1;
    return t;
}

void process_stream_start(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_start r;
    struct user_info u;
    enum rpc_code code = RPC_INVALID_ARGUMENT;
    struct proc *p = NULL;
    int stops = 0;
    if (!process_table()) {
        rpc_fail(call, RPC_UNAVAILABLE, "no process table");
        return;
    }
    if (process_request_start(msg, &r, err) == 0 && process_user(rpc_user(call), &u, &code, err) == 0) {
        struct proc_start s = {.argv = r.argv, .envs = r.envs, .tag = r.tag, .user = &u,
                               .stdin_pipe = r.stdin_pipe, .pty = r.pty, .cols = r.cols, .rows = r.rows,
                               .timeout = start_timeout(call, r.timeout, &stops)};
        struct buf dir;
        if (process_defaults(&r, &u, &s, &dir, err) < 0 || !(p = proc_start(process_table(), &s, err)))
            code = connect_code_of_errno(errno);
        buf_free(&dir);
    }
    process_request_start_free(&r);
    if (!p) {
        rpc_fail(call, code, err);
        return;
    }
    stream_open(call, p, 0, 0, 0, stops ? 2 : 1);
}

void process_stream_connect(struct rpc_call *call, const cJSON *msg)
{
    char err[ERR_LEN];
    struct process_request_sel sel;
    uint64_t from = 0;
    const char *replay = rpc_header(call, HEADER_REPLAY_FROM);
    if (!process_table()) {
        rpc_fail(call, RPC_UNAVAILABLE, "no process table");
        return;
    }
    if (process_request_selector(msg, &sel, err) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
        return;
    }
    if (replay && num_count(replay, UINT64_MAX, &from) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, HEADER_REPLAY_FROM " must be a byte offset");
        return;
    }
    struct proc *p = process_find(call, &sel);
    if (p) stream_open(call, p, from, replay == NULL, replay != NULL, 0);
}
