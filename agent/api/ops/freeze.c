/*
 * freeze.c - POST /freeze, POST /unfreeze, the thaw of POST /init, and the
 * freeze family's lock (see ops/freeze.h).
 */
#include "agent/api/ops/freeze.h"
#include "agent/api/connect/rpc.h"
#include "agent/api/http/query.h"
#include "agent/core/buf.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX 1024
#define QUERY_MAX 64

static struct {
    const struct cgroup_base *base;
    struct freeze_set set;
    int locked;
    /* the /freeze waiting for its groups */
    struct conn *c;
    ev_timer poll_w;
    enum freeze_mode mode;
    struct freeze_stats st;
    double t0, swept, budget; /* io_now: the start, the sweep's end; seconds */
} F;

static const struct cgroup_base none = {.fd = -1};

int ops_freeze_lock(void)
{
    if (F.locked) return 0;
    F.locked = 1;
    return 1;
}

void ops_freeze_unlock(void) { F.locked = 0; }

int ops_freeze_int(const char *s, long long *out)
{
    int neg = *s == '-';
    const char *p = s + neg;
    long long v = 0;
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 18 || p[n]) return -1;
    for (size_t i = 0; i < n; i++) v = v * 10 + (p[i] - '0');
    *out = neg ? -v : v;
    return 0;
}

int ops_freeze_json(struct buf *b, enum freeze_mode mode, const struct freeze_stats *st, const char *method,
                    long long sweep_ms, long long wait_ms)
{
    return buf_printf(b,
                      "{\"mode\": \"%s\", \"visited\": %d, \"allowlisted\": %d, \"truncated\": %s, "
                      "\"preFrozen\": %d, \"requested\": %d, \"frozen\": %d, \"notFrozen\": %d, "
                      "\"failed\": %d, \"unobservable\": %d, \"sweepMs\": %lld, \"waitMs\": %lld, "
                      "\"method\": \"%s\"}",
                      freeze_mode_name(mode), st->visited, st->allowlisted, st->truncated ? "true" : "false",
                      st->prefrozen, st->requested, st->frozen, st->not_frozen, st->failed + st->lost,
                      st->unobservable, sweep_ms, wait_ms, method);
}

static const char *method(void)
{
    if (F.set.np || F.st.signalled) return "SIGSTOP";
    return F.set.kind == CGROUP_V2 ? "cgroup v2" : "cgroup v1 freezer";
}

/* A query parameter: 0 and *has 0 when absent; -1 (answered 400) when
 * repeated or not an integer. */
static int query_int(struct conn *c, const char *name, long long *v, int *has)
{
    struct buf q;
    char why[96];
    buf_init(&q, QUERY_MAX);
    int rc = query_get(httpreq_query(conn_req(c)), name, &q);
    *has = rc == 1;
    if (rc == 1 && (q.len != strlen(q.data) || ops_freeze_int(q.data, v) < 0)) rc = -1;
    buf_free(&q);
    if (rc >= 0) return 0;
    snprintf(why, sizeof why, "%s must be one integer", name);
    rpc_error_response(c, RPC_INVALID_ARGUMENT, why, NULL);
    return -1;
}

static void finish(int timed_out)
{
    struct conn *c = F.c;
    struct buf b;
    double now = io_now();
    ev_timer_stop(EV_DEFAULT, &F.poll_w);
    F.c = NULL;
    ops_freeze_unlock();
    if (timed_out) log_warn("api: /freeze: %d of the groups frozen did not read frozen within the wait", F.st.not_frozen);
    buf_init(&b, JSON_MAX);
    if (ops_freeze_json(&b, F.mode, &F.st, method(), (long long)((F.swept - F.t0) * 1000),
                        (long long)((now - F.swept) * 1000)) < 0)
        rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
    else
        conn_respond(c, 200, CONNECT_CT_UNARY, "Cache-Control: no-store\r\n", b.data, b.len);
    buf_free(&b);
}

static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    if (freeze_poll(&F.set, &F.st)) finish(0);
    else if (io_now() - F.swept >= F.budget) finish(1);
}

/* The client left while the call waited: the freeze stays, the lock goes. */
static void on_gone(struct conn *c, void *ctx)
{
    ev_timer_stop(EV_DEFAULT, &F.poll_w);
    F.c = NULL;
    ops_freeze_unlock();
}

void ops_freeze_respond(struct conn *c)
{
    struct buf q;
    long long max_visit = 0, wait_ms = 0;
    int has_mode, has_visit, has_wait;
    buf_init(&q, QUERY_MAX);
    int rc = query_get(httpreq_query(conn_req(c)), "mode", &q);
    has_mode = rc == 1;
    if (rc < 0 || (has_mode && freeze_mode_parse(q.data, &F.mode) < 0)) {
        buf_free(&q);
        rpc_error_response(c, RPC_INVALID_ARGUMENT, "mode must be legacy or hierarchy", NULL);
        return;
    }
    buf_free(&q);
    if (!has_mode) F.mode = FREEZE_LEGACY;
    if (query_int(c, "maxCgroups", &max_visit, &has_visit) < 0 || query_int(c, "maxWaitMs", &wait_ms, &has_wait) < 0)
        return;
    if (!ops_freeze_lock()) {
        rpc_error_response(c, RPC_UNAVAILABLE, "another freeze, thaw or filesystem freeze is in flight", NULL);
        return;
    }
    F.t0 = io_now();
    if (max_visit > FREEZE_VISIT_MAX) max_visit = FREEZE_VISIT_MAX;
    if (freeze_sweep(&F.set, F.base ? F.base : &none, F.mode, (int)max_visit, &F.st) < 0) {
        ops_freeze_unlock();
        rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
        return;
    }
    F.swept = io_now();
    log_info("api: /freeze: %s by %s: %d requested, %d left frozen as found, %d failed", freeze_mode_name(F.mode),
             method(), F.st.requested, F.st.prefrozen, F.st.failed);
    if (!has_wait || wait_ms <= 0) {
        ops_freeze_unlock();
        conn_respond(c, 204, NULL, NULL, "", 0);
        return;
    }
    F.budget = (double)wait_ms / 1000.0;
    F.c = c;
    if (freeze_poll(&F.set, &F.st)) {
        finish(0);
        return;
    }
    struct conn_hooks h = {.gone = on_gone};
    conn_set_hooks(c, &h);
    ev_timer_set(&F.poll_w, FREEZE_POLL_MS / 1000.0, FREEZE_POLL_MS / 1000.0);
    ev_timer_start(EV_DEFAULT, &F.poll_w);
}

static void thaw(const char *why)
{
    if (!freeze_held(&F.set)) return;
    int failed = freeze_thaw(&F.set);
    log_info("api: %s: thawed what /freeze froze%s", why, failed ? " (some could not be)" : "");
}

void ops_freeze_thaw_respond(struct conn *c)
{
    if (!ops_freeze_lock()) {
        rpc_error_response(c, RPC_UNAVAILABLE, "another freeze, thaw or filesystem freeze is in flight", NULL);
        return;
    }
    thaw("/unfreeze");
    ops_freeze_unlock();
    conn_respond(c, 204, NULL, NULL, "", 0);
}

void ops_freeze_resume(void)
{
    if (F.c) return; /* a /freeze still waits: its own caller decides */
    thaw("/init");
}

void ops_freeze_start(const struct cgroup_base *base)
{
    F.base = base;
    ev_timer_init(&F.poll_w, on_poll, 0., 0.);
}

void ops_freeze_stop(void)
{
    ev_timer_stop(EV_DEFAULT, &F.poll_w);
    F.c = NULL;
    freeze_set_free(&F.set);
    memset(&F, 0, sizeof F);
}
