/*
 * watchdir.c - WatchDir: a server stream of one watched directory (see
 * filesystem_watch.h). {"start": {}} first (the SDK requires it), then
 * {"filesystem": FilesystemEvent} per event and {"keepalive": {}} when idle,
 * until the client leaves or the deadline. Anything the stream cannot
 * carry ends it, with the reason in the end-stream error, never silently:
 * lost events (data_loss: list again and watch again), a directory below
 * that could not be watched (internal), the directory gone (not_found).
 *
 * Back-pressure: a client that reads slower than events come is written to
 * anyway, up to WATCHDIR_BEHIND_MAX bytes past the connection's high-water
 * mark; past that its events are lost and the stream ends with data_loss.
 */
#include "agent/api/filesystem/watch.h"
#include "agent/api/asuser/job.h"
#include "agent/core/err.h"

#include <stdlib.h>
#include <string.h>

#define WATCHDIR_BEHIND_MAX (1024u * 1024u)

struct wstream {
    struct filesystem_watch w;
    struct rpc_call *call; /* NULL once the call is over */
    struct buf msg;
    int blocked;           /* rpc_send said wait */
    size_t behind;         /* bytes sent while blocked */
    int starting;          /* inside filesystem_watch_start: a problem waits */
    enum rpc_code code;    /* ... the first one */
    char why[ERR_LEN];
};

static void free_stream(void *owner)
{
    struct wstream *s = owner;
    buf_free(&s->msg);
    free(s);
}

/* The call is over (ended here or by the client): stop watching. */
static void over(struct wstream *s)
{
    static const struct rpc_hooks none;
    if (s->call) rpc_set_hooks(s->call, &none);
    s->call = NULL;
    filesystem_watch_release(&s->w, free_stream);
}

static void fail(struct wstream *s, enum rpc_code code, const char *msg)
{
    struct rpc_call *call = s->call;
    over(s);
    if (call) rpc_fail(call, code, msg);
}

static void send_msg(struct wstream *s, const char *json, size_t n)
{
    if (!s->call) return;
    if (s->blocked && (s->behind += n) > WATCHDIR_BEHIND_MAX) {
        fail(s, RPC_DATA_LOSS, "the client reads events too slowly: events were lost");
        return;
    }
    int r = rpc_send(s->call, json, n);
    if (r == 0 && !s->blocked) {
        s->blocked = 1;
        s->behind = 0;
    }
    if (r < 0) over(s); /* the connection is going; cancel follows */
}

static void on_event(struct filesystem_watch *w, const char *json, size_t n)
{
    struct wstream *s = w->owner;
    buf_reset(&s->msg);
    if (buf_puts(&s->msg, "{\"filesystem\": ") < 0 || buf_append(&s->msg, json, n) < 0 ||
        buf_putc(&s->msg, '}') < 0) {
        fail(s, RPC_DATA_LOSS, "an event too large to send was lost");
        return;
    }
    send_msg(s, s->msg.data, s->msg.len);
}

static void on_problem(struct filesystem_watch *w, enum filesystem_watch_problem p, enum rpc_code code, const char *msg)
{
    struct wstream *s = w->owner;
    if (!s->starting) {
        fail(s, code, msg);
    } else if (!s->code) {
        s->code = code;
        err_set(s->why, "%s", msg);
    }
}

static const struct filesystem_watch_ops stream_ops = {on_event, on_problem};

static void on_more(struct rpc_call *call, void *ctx)
{
    struct wstream *s = ctx;
    s->blocked = 0;
    s->behind = 0;
}

static void on_cancel(struct rpc_call *call, void *ctx)
{
    struct wstream *s = ctx;
    s->call = NULL;
    over(s);
}

/* The agent stops: the stream ends as a finished one. */
static void on_stop(struct rpc_call *call, void *ctx)
{
    struct wstream *s = ctx;
    over(s);
    rpc_end(call);
}

static void on_deadline(struct rpc_call *call, void *ctx)
{
    fail(ctx, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
}

static void on_keepalive(struct rpc_call *call, void *ctx)
{
    struct wstream *s = ctx;
    if (!s->blocked) send_msg(s, "{\"keepalive\": {}}", 17);
}

static void on_checked(struct filesystem_op *op, int32_t code, const char *data, size_t n)
{
    struct rpc_call *call = op->call;
    char err[ERR_LEN];
    if (filesystem_op_failed(op, code, data, n)) {
        filesystem_op_free(op);
        return;
    }
    struct wstream *s = calloc(1, sizeof *s);
    if (!s) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        filesystem_op_free(op);
        return;
    }
    s->call = call;
    buf_init(&s->msg, (4u << 20) + 64);
    /* Every watch in place before the start event: a client that acts on
     * it must not find a change missed. What goes wrong meanwhile (a
     * directory below that cannot be watched) waits until start is out. */
    s->starting = 1;
    int r = filesystem_watch_start(&s->w, op->path, op->recursive, op->include_entry, &op->user, &stream_ops, s, err);
    s->starting = 0;
    filesystem_op_free(op);
    if (r < 0) {
        rpc_fail(call, RPC_INTERNAL, err);
        free_stream(s);
        return;
    }
    if (rpc_send(call, "{\"start\": {}}", 13) < 0) { /* the connection is going */
        s->call = NULL;
        filesystem_watch_release(&s->w, free_stream);
        return;
    }
    struct rpc_hooks h = {.more = on_more, .cancel = on_cancel, .stop = on_stop,
                          .deadline = on_deadline, .keepalive = on_keepalive, .ctx = s};
    rpc_set_hooks(call, &h);
    if (s->code) fail(s, s->code, s->why);
}

void filesystem_watchdir(struct rpc_call *call, const cJSON *msg) { filesystem_watch_check(call, msg, on_checked); }
