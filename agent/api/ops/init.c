/*
 * init.c - POST /init: checking, then applying, what the orchestrator sent
 * (see ops/init.h).
 */
#include "agent/api/ops/init.h"
#include "agent/api/asuser/asuser.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/connect/rpc.h"
#include "agent/api/ops/freeze.h"
#include "agent/api/ops/initreq.h"
#include "agent/api/ops/token.h"
#include "agent/core/err.h"
#include "agent/core/log.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* A guest clock behind the orchestrator's by more than this is set. */
#define CLOCK_BEHIND_MAX 0.05
/* One ahead by more than this is logged. */
#define CLOCK_AHEAD_MAX 5.0

/* Unsupported fields already logged (each once). */
static unsigned logged;

static void note_unsupported(unsigned bits)
{
    for (unsigned bit = 1; bit <= INITREQ_CA_BUNDLE; bit <<= 1)
        if ((bits & bit) && !(logged & bit)) {
            logged |= bit;
            log_warn("api: /init: '%s' is not supported; ignored", ops_initreq_field_name(bit));
        }
}

/* The guest clock against the orchestrator's timestamp. */
static void sync_clock(const struct timespec *ts)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double skew = (double)(ts->tv_sec - now.tv_sec) + (double)(ts->tv_nsec - now.tv_nsec) / 1e9;
    if (skew > CLOCK_BEHIND_MAX) {
        if (clock_settime(CLOCK_REALTIME, ts) == 0)
            log_info("api: /init: the clock was %.3f s behind; set", skew);
        else
            log_warn("api: /init: the clock is %.3f s behind the orchestrator's and cannot be set: %s", skew,
                     strerror(errno));
    } else if (-skew > CLOCK_AHEAD_MAX) {
        log_warn("api: /init: the clock is %.3f s ahead of the orchestrator's; left alone", -skew);
    }
}

/* Refuse what cannot be applied: a user the agent cannot act as. */
static int check(const struct ops_initreq *r, enum rpc_code *code, char *err)
{
    struct user_info u;
    if (!r->user || asuser_get(r->user, &u, err) == 0) return 0;
    *code = errno == ENOENT || errno == EPERM ? RPC_INVALID_ARGUMENT : connect_code_of_errno(errno);
    return -1;
}

/* Everything at once: the new defaults and token are made first, then
 * swapped in; the clock last (it cannot be taken back, and never fails
 * the request). *changed: a token was set or replaced (the same one again
 * changes nothing). */
static int apply(const struct ops_initreq *r, enum rpc_code *code, char *err, int *changed)
{
    struct asuser_defaults next;
    int had = ops_token_present();
    *changed = r->token && !ops_token_ok(r->token);
    *code = RPC_INTERNAL;
    if (asuser_defaults_merge(&next, r->env, r->nenv, INITREQ_ENV_MAX, r->workdir, r->user, err) < 0) {
        if (errno == E2BIG) *code = RPC_INVALID_ARGUMENT; /* past a bound: the count, or the room */
        return -1;
    }
    if (*changed && ops_token_replace(r->token, r->token_len) < 0) {
        asuser_defaults_drop(&next);
        err_set(err, "out of memory");
        return -1;
    }
    asuser_defaults_commit(&next);
    if (*changed) log_info("api: /init: access token %s", had ? "replaced" : "set");
    if (r->has_time) sync_clock(&r->time);
    return 0;
}

/* The body is done with: the token it may carry goes now, not whenever
 * the buffer is reused. */
static void wipe_body(struct conn *c)
{
    struct buf *b = (struct buf *)httpreq_body(conn_req(c));
    volatile char *v = b ? b->data : NULL;
    for (size_t i = 0; v && i < b->len; i++) v[i] = '\0';
}

void ops_init_respond(struct conn *c)
{
    const struct buf *body = httpreq_body(conn_req(c));
    struct ops_initreq r;
    char err[ERR_LEN];
    enum rpc_code code = RPC_INVALID_ARGUMENT;
    int changed = 0;
    int rc = ops_initreq_decode(body ? body->data : "", body ? body->len : 0, &r, err);
    wipe_body(c);
    if (rc == 0) {
        note_unsupported(r.unsupported);
        rc = check(&r, &code, err) < 0 ? -1 : apply(&r, &code, err, &changed);
    }
    ops_initreq_free(&r);
    if (rc < 0) {
        log_info("api: /init refused: %s", err);
        rpc_error_response(c, code, err, NULL);
        return;
    }
    if (changed) { /* what the old token (or none) allowed is over; this client has the new one */
        conn_trust_revoke(c);
        conn_trust(c);
    }
    ops_freeze_resume(); /* a resume: what /freeze froze runs again */
    conn_respond(c, 204, NULL, "Cache-Control: no-store\r\n", "", 0);
}
