/*
 * watchers.c - the polling watchers: CreateWatcher starts a watch and
 * answers its id, GetWatcherEvents hands over the events kept since the
 * last call, RemoveWatcher ends it (see filesystem_watch.h).
 *
 * Bounds: at most FSWATCHERS_MAX watchers, each keeping at most
 * FSWATCHER_EVENTS_MAX bytes of events between two reads, drawn from the
 * memory budget (core/budget.h). What does not fit (the bound, or the
 * budget) is lost, and never silently: the events kept are followed by one
 * marker (its room drawn whatever the budget says),
 * a FilesystemEvent of type EVENT_TYPE_UNSPECIFIED, name "", with an extra
 * field "error" saying what was lost. The same marker reports lost events
 * of the kernel's queue, and (with the directory as its name) a directory
 * below that could not be watched; those watches go on. The end of a watch
 * (the directory gone) is a last marker; a read after it fails with
 * failed_precondition until RemoveWatcher.
 */
#include "agent/api/filesystem/watch.h"
#include "agent/api/asuser/job.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define FSWATCHERS_MAX 128
#define FSWATCHER_EVENTS_MAX (1024u * 1024u)
/* The most one marker takes; room for two (the lost one and the end) is
 * kept free of events, so both always fit. */
#define MARKER_MAX 2048u
#define MARKER_ROOM (2 * MARKER_MAX)

struct watcher {
    struct filesystem_watch w;
    struct watcher *next;
    char id[24];
    struct buf events;  /* the kept events, ", "-separated JSON objects */
    int lost;           /* events were dropped since the last read: a marker is due */
    char *ended;        /* why the watch ended */
    int end_read;       /* ... and the marker of it was read */
};

static struct watcher *all;
static unsigned count;

static struct watcher *find(const char *id)
{
    for (struct watcher *w = all; w; w = w->next)
        if (!strcmp(w->id, id)) return w;
    return NULL;
}

static void unlink_watcher(struct watcher *x)
{
    for (struct watcher **p = &all; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            count--;
            return;
        }
}

static void free_watcher(void *owner)
{
    struct watcher *x = owner;
    buf_free(&x->events);
    free(x->ended);
    free(x);
}

/* "w" and 16 hex digits, unguessable enough for an id. */
static void new_id(char *id)
{
    static uint64_t counter;
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
        v = (uint64_t)time(NULL) << 20 ^ (uint64_t)clock() ^ ++counter;
    snprintf(id, 24, "w%016llx", (unsigned long long)v);
}

/* ---- events in ----------------------------------------------------------- */

static int append(struct watcher *x, const char *json, size_t n, size_t room)
{
    /* Room first: the separator and the event go in whole, or neither. */
    if (x->events.len + n + 2 + room > x->events.max || buf_reserve(&x->events, n + 2) < 0) return -1;
    return (x->events.len && buf_puts(&x->events, ", ") < 0) || buf_append(&x->events, json, n) < 0 ? -1 : 0;
}

static void marker(struct watcher *x, const char *name, size_t nlen, const char *why)
{
    struct buf m;
    buf_init(&m, MARKER_MAX);
    int bad = buf_puts(&m, "{\"name\": ") < 0 || jsonw_str(&m, name, nlen, JSONW_SURROGATEESCAPE) < 0 ||
              buf_puts(&m, ", \"type\": \"EVENT_TYPE_UNSPECIFIED\", \"error\": ") < 0 ||
              jsonw_str(&m, why, strlen(why), JSONW_REPLACE) < 0 || buf_putc(&m, '}') < 0;
    if (!bad) buf_reserve_force(&x->events, m.len + 2); /* its room, whatever the budget says */
    if (bad || append(x, m.data, m.len, 0) < 0) x->lost = 1;
    buf_free(&m);
}

static void on_event(struct filesystem_watch *w, const char *json, size_t n)
{
    struct watcher *x = w->owner;
    if (!x->lost && append(x, json, n, MARKER_ROOM) < 0) x->lost = 1;
}

static void on_problem(struct filesystem_watch *w, enum filesystem_watch_problem p, enum rpc_code code, const char *msg)
{
    struct watcher *x = w->owner;
    if (p == FSWATCH_LOST) {
        x->lost = 1;
    } else if (p == FSWATCH_HOLE) {
        const char *colon = strstr(msg, ": cannot be watched");
        if (x->lost || x->events.len + MARKER_MAX + MARKER_ROOM > x->events.max) x->lost = 1;
        else marker(x, msg, colon ? (size_t)(colon - msg) : 0, msg);
    } else {
        free(x->ended);
        x->ended = strdup(msg);
        filesystem_watch_release(&x->w, NULL);
    }
}

static const struct filesystem_watch_ops watcher_ops = {on_event, on_problem};

/* ---- the RPCs ------------------------------------------------------------- */

/* A new watcher for op's directory, answered with its id. */
static void start_watcher(struct rpc_call *call, struct filesystem_op *op)
{
    char err[ERR_LEN];
    struct watcher *x = calloc(1, sizeof *x);
    if (!x) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    /* Before the first walk, which may report a hole already. */
    buf_init_budget(&x->events, FSWATCHER_EVENTS_MAX);
    if (filesystem_watch_start(&x->w, op->path, op->recursive, op->include_entry, &op->user, &watcher_ops, x, err) < 0) {
        rpc_fail(call, RPC_INTERNAL, err);
        buf_free(&x->events);
        free(x);
        return;
    }
    new_id(x->id);
    x->next = all;
    all = x;
    count++;
    char reply[64];
    int len = snprintf(reply, sizeof reply, "{\"watcherId\": \"%s\"}", x->id);
    rpc_reply(call, reply, (size_t)len);
}

static void on_checked(struct filesystem_op *op, int32_t code, const char *data, size_t n)
{
    struct rpc_call *call = op->call;
    if (filesystem_op_failed(op, code, data, n)) {
        /* answered */
    } else if (count >= FSWATCHERS_MAX) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "too many watchers (remove some with RemoveWatcher)");
    } else {
        start_watcher(call, op);
    }
    filesystem_op_free(op);
}

void filesystem_watchers_create(struct rpc_call *call, const cJSON *msg) { filesystem_watch_check(call, msg, on_checked); }

/* The watcher a request names, or NULL after failing the call. */
static struct watcher *named(struct rpc_call *call, const cJSON *msg)
{
    struct filesystem_request r;
    char err[ERR_LEN];
    if (filesystem_request_decode(FSREQ_WATCHER, msg, &r, err) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
        return NULL;
    }
    struct watcher *x = find(r.watcher_id);
    if (!x) {
        err_set(err, "watcher with id %.64s not found", r.watcher_id);
        rpc_fail(call, RPC_NOT_FOUND, err);
    }
    return x;
}

void filesystem_watchers_get_events(struct rpc_call *call, const cJSON *msg)
{
    struct watcher *x = named(call, msg);
    if (!x) return;
    /* What the kernel has queued by now is part of the answer. */
    filesystem_watch_settle();
    if (x->end_read) {
        char err[ERR_LEN];
        err_set(err, "the watch has ended: %s", x->ended);
        rpc_fail(call, RPC_FAILED_PRECONDITION, err);
        return;
    }
    if (x->lost) marker(x, "", 0, "events were lost: list the directory again");
    if (x->ended) {
        marker(x, "", 0, x->ended);
        x->end_read = 1;
    }
    struct buf b;
    buf_init(&b, FSWATCHER_EVENTS_MAX + 64);
    if (buf_puts(&b, "{\"events\": [") < 0 || buf_append(&b, x->events.data, x->events.len) < 0 ||
        buf_puts(&b, "]}") < 0)
        rpc_fail(call, RPC_INTERNAL, "out of memory");
    else
        rpc_reply(call, b.data, b.len);
    buf_free(&b);
    buf_reset(&x->events);
    x->lost = 0;
}

void filesystem_watchers_remove(struct rpc_call *call, const cJSON *msg)
{
    struct watcher *x = named(call, msg);
    if (!x) return;
    unlink_watcher(x);
    filesystem_watch_release(&x->w, free_watcher);
    rpc_reply(call, "{}", 2);
}
