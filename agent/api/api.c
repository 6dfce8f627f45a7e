/*
 * api.c - the API service's configuration, start and stop (see api.h).
 */
#include "agent/api/api.h"
#include "agent/api/process/process.h"
#include "agent/api/asuser/asuser.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/ops/freeze.h"
#include "agent/api/ops/fsfreeze.h"
#include "agent/api/ops/metrics.h"
#include "agent/api/ops/token.h"
#include "agent/core/budget.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/num.h"
#include "agent/core/pause.h"
#include "agent/core/pid1.h"
#include "agent/core/protocol.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After the grace, the processes' ends are waited for this much longer
 * (SIGKILL has gone out; only an unkillable process takes longer). */
#define STOP_SLACK_SECONDS 2.0

int api_wanted(void)
{
    const char *v = getenv(ENV_LISTEN);
    return v && *v;
}

static int read_count(const char *name, uint64_t max, uint64_t dflt, uint64_t *out, char *err)
{
    const char *v = getenv(name);
    *out = dflt;
    if (v && *v && (num_count(v, max, out) < 0 || *out == 0)) {
        err_set(err, "%s must be a count from 1 to %llu, not '%.40s'", name,
                (unsigned long long)max, v);
        return -1;
    }
    return 0;
}

/* SANDBOX_AGENT_AWAIT_TOKEN: "1", or unset (or "" or "0"). */
static int read_await(struct api_config *cfg, char *err)
{
    const char *v = getenv(ENV_AWAIT_TOKEN);
    cfg->await_token = v && !strcmp(v, "1");
    if (v && *v && strcmp(v, "0") && strcmp(v, "1")) {
        err_set(err, ENV_AWAIT_TOKEN " must be 1 or 0, not '%.40s'", v);
        return -1;
    }
    return 0;
}

/* A token, or the promise of one (AWAIT_TOKEN), lets the agent listen on
 * a public address, and makes that the default. */
static int read_listen(struct api_config *cfg, int has_token, char *err)
{
    const char *v = getenv(ENV_LISTEN);
    int awaits = !has_token && cfg->await_token;
    has_token = has_token || awaits;
    cfg->listen = v && *v ? v : has_token ? DEFAULT_LISTEN_PUBLIC : DEFAULT_LISTEN_LOCAL;
    if (listen_parse(cfg->listen, &cfg->addr, err) < 0) {
        char why[ERR_LEN];
        memcpy(why, err, ERR_LEN);
        err_set(err, ENV_LISTEN ": %s", why);
        return -1;
    }
    const char *ins = getenv(ENV_INSECURE);
    int warn;
    if (listen_check(cfg->listen, &cfg->addr, has_token, ins && !strcmp(ins, "1"), &warn, err) < 0)
        return -1;
    if (warn)
        log_warn("api: " ENV_INSECURE "=1: serving %s with no token; anyone who reaches it "
                 "can run commands here", cfg->listen);
    if (awaits && !cfg->addr.loopback)
        log_warn("api: " ENV_AWAIT_TOKEN "=1: only /health and /init answer on %s until an /init sets "
                 "the token; whoever reaches it first sets it", cfg->listen);
    return 0;
}

/* SANDBOX_AGENT_USER: a user of passwd, and one the agent may become. */
static int read_user(struct api_config *cfg, char *err)
{
    struct user_info u;
    const char *v = getenv(ENV_USER);
    char why[ERR_LEN];
    cfg->user = v && *v ? v : NULL;
    if (cfg->user && asuser_get(cfg->user, &u, why) < 0) {
        err_set(err, ENV_USER ": %s", why);
        return -1;
    }
    return 0;
}

/* Seconds above 0 from the variable name, else dflt. */
static int read_seconds(const char *name, double dflt, double *out, char *err)
{
    const char *v = getenv(name);
    *out = dflt;
    if (v && *v && (num_seconds(v, NUM_MAX_SECONDS, out) < 0 || *out <= 0)) {
        err_set(err, "%s must be a number of seconds above 0, not '%.40s'", name, v);
        return -1;
    }
    return 0;
}

/* SANDBOX_AGENT_MEMORY_BUDGET: bytes (0: none), else the default, found
 * at the start (start_budget). */
static int read_budget(struct api_config *cfg, char *err)
{
    const char *v = getenv(ENV_MEMORY_BUDGET), *k = getenv(ENV_KEEP_FINISHED_BYTES);
    uint64_t n = 0;
    cfg->budget_default = !(v && *v);
    cfg->keep_default = !(k && *k);
    if (v && *v && (num_count(v, BUDGET_MAX, &n) < 0 || (n && n < BUDGET_LEAST))) {
        err_set(err, ENV_MEMORY_BUDGET " must be 0 or a byte count from %llu to %llu, not '%.40s'",
                (unsigned long long)BUDGET_LEAST, (unsigned long long)BUDGET_MAX, v);
        return -1;
    }
    cfg->budget = (size_t)n;
    return 0;
}

/* The port forwarder's: on by default when the API is served outward; the
 * API's own port is never forwarded. */
static int read_forward(struct api_config *cfg, char *err)
{
    const struct listen_addr *a = &cfg->addr;
    unsigned port = a->is_unix ? 0 : ntohs(((const struct sockaddr_in *)(const void *)&a->ss)->sin_port);
    return forward_config_read(&cfg->fwd, !a->is_unix && !a->loopback, port, err);
}

int api_config_read(struct api_config *cfg, const char *token, char *err)
{
    uint64_t n;
    struct pid1_config pc;
    memset(cfg, 0, sizeof *cfg);
    if (read_await(cfg, err) < 0 || read_listen(cfg, token && *token, err) < 0 || read_forward(cfg, err) < 0)
        return -1;
    const char *disk = getenv(ENV_DISK_PATH);
    cfg->disk = disk && *disk ? disk : NULL;
    if (read_count(ENV_MAX_CONNECTIONS, 1000000, DEFAULT_MAX_CONNECTIONS, &n, err) < 0) return -1;
    cfg->max_conns = (unsigned)n;
    if (read_seconds(ENV_HTTP_TIMEOUT, DEFAULT_HTTP_TIMEOUT, &cfg->timeout, err) < 0 ||
        read_seconds(ENV_FIRST_HEAD, DEFAULT_FIRST_HEAD, &cfg->first_head, err) < 0)
        return -1;
    if (proc_table_opts_env(&cfg->procs, err) < 0 || pid1_config_read(&pc, err) < 0 ||
        read_budget(cfg, err) < 0)
        return -1;
    cfg->procs.grace = pc.grace;
    return read_user(cfg, err);
}

/* ---- the stop ---- */

static void on_drained(struct server *s, void *ctx)
{
    struct api *a = ctx;
    a->done = 1;
    ev_timer_stop(a->loop, &a->bound_w);
    log_info("api: stopped");
    if (a->on_done) a->on_done(a->done_ctx);
}

/* Every process has ended (or the bound passed): end the streams, close
 * the connections. */
static void on_step(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct api *a = w->data;
    ev_timer_stop(loop, &a->bound_w);
    server_stop(&a->srv, on_drained, a);
}

static void on_bound(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct api *a = w->data;
    log_warn("api: %zu processes still running %.3g s after the stop; closing anyway",
             proc_table_running(a->t), a->cfg.procs.grace + STOP_SLACK_SECONDS);
    on_step(loop, &a->step_w, 0);
}

/* Not under the table's callback: the next step runs from the loop. */
static void step_soon(struct api *a)
{
    if (!ev_is_active(&a->step_w)) ev_timer_start(a->loop, &a->step_w);
}

static void on_proc_end(struct proc *p, void *ctx)
{
    struct api *a = ctx;
    if (a->stopping && proc_table_running(a->t) == 0) step_soon(a);
}

void api_stop(struct api *a, api_done_fn done, void *ctx)
{
    if (done) {
        a->on_done = done;
        a->done_ctx = ctx;
    }
    if (a->stopping) {
        if (a->done && done) done(ctx);
        return;
    }
    a->stopping = 1;
    if (!a->started) { /* nothing to stop */
        a->done = 1;
        if (done) done(ctx);
        return;
    }
    server_close_listener(&a->srv);
    forward_free(a->fwd);
    a->fwd = NULL;
    proc_table_shutdown(a->t, a->cfg.procs.grace);
    if (proc_table_running(a->t) == 0) {
        step_soon(a);
        return;
    }
    log_info("api: stopping %zu processes", proc_table_running(a->t));
    ev_timer_set(&a->bound_w, a->cfg.procs.grace + STOP_SLACK_SECONDS, 0);
    ev_timer_start(a->loop, &a->bound_w);
}

/* ---- the start ---- */

/* The memory budget (core/budget.h): the variable's, or a quarter of the
 * memory GET /metrics reports (after ops_metrics_start); the finished
 * processes kept hold a quarter of it at most unless their variable says. */
static void start_budget(struct api_config *cfg)
{
    if (cfg->budget_default) cfg->budget = budget_default_for(ops_metrics_mem_total());
    if (cfg->budget && cfg->keep_default && cfg->procs.keep_bytes > cfg->budget / 4)
        cfg->procs.keep_bytes = cfg->budget / 4;
    budget_set(cfg->budget);
    log_debug("api: memory budget %zu bytes (%zu drawn), finished processes kept up to %zu bytes",
              budget_limit(), budget_used(), cfg->procs.keep_bytes);
}

int api_start(struct api *a, struct ev_loop *loop, const struct api_config *cfg,
              const char *token, char *err)
{
    struct server_app app;
    char why[ERR_LEN];
    memset(a, 0, sizeof *a);
    a->loop = loop;
    a->cfg = *cfg;
    a->cfg.procs.on_end = on_proc_end;
    a->cfg.procs.ctx = a;
    if (ops_token_start(token, a->cfg.await_token) < 0) {
        err_set(err, "api: out of memory");
        return -1;
    }
    nonce_forget_secret(ENV_TOKEN); /* the copy above is the one kept */
    ev_timer_init(&a->step_w, on_step, 0., 0.);
    ev_timer_init(&a->bound_w, on_bound, 0., 0.);
    a->step_w.data = a->bound_w.data = a;
    ops_metrics_start(a->cfg.disk);
    start_budget(&a->cfg);
    if (!(a->t = proc_table_new(loop, &a->cfg.procs, err))) {
        ops_metrics_stop();
        ops_token_free();
        return -1;
    }
    int fd = listen_open(&a->cfg.addr, why);
    if (fd < 0) {
        err_set(err, "api: cannot listen on %s: %s", a->cfg.listen, why);
        proc_table_free(a->t);
        a->t = NULL;
        ops_metrics_stop();
        ops_token_free();
        return -1;
    }
    process_init(a->t);
    asuser_default(a->cfg.user);
    ops_freeze_start(proc_table_cgroups(a->t));
    ops_fsfreeze_start(a->cfg.disk);
    routes_app(&app);
    server_start(&a->srv, loop, fd, !a->cfg.addr.is_unix, a->cfg.max_conns, a->cfg.timeout,
                 a->cfg.first_head, &app);
    pause_start(loop);
    a->started = 1;
    log_info("api: listening on %s", a->cfg.listen);
    if (a->cfg.fwd.on && !(a->fwd = forward_start(loop, &a->cfg.fwd, why)))
        log_warn("api: %s; no port is forwarded", why);
    return 0;
}

void api_free(struct api *a)
{
    if (!a->started) return;
    ev_timer_stop(a->loop, &a->step_w);
    ev_timer_stop(a->loop, &a->bound_w);
    pause_stop(a->loop);
    server_close_listener(&a->srv);
    forward_free(a->fwd);
    a->fwd = NULL;
    if (a->cfg.addr.is_unix) (void)unlink(a->cfg.addr.path);
    process_init(NULL);
    asuser_default(NULL);
    asuser_defaults_clear();
    ops_token_free();
    ops_metrics_stop();
    ops_freeze_stop();
    ops_fsfreeze_stop();
    proc_table_free(a->t);
    a->t = NULL;
    a->started = 0;
    /* Every draw has had its give by now (a helper still running, or a
     * polling watcher, keeps its own): 0 here in the tests. */
    log_debug("api: memory budget at the stop: %zu bytes drawn, %zu at most, of %zu", budget_used(),
              budget_peak(), budget_limit());
}
