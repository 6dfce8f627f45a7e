/*
 * serve.c - `sandbox-agent serve`: PID 1 serving E2B's envd API over HTTP/1.1
 * (README "sandbox-agent serve"). Owns the mode's order of things only:
 * the first step (secrets, log level), the configuration, the loop, the
 * reaper and the signals, the listening socket, and the stop on SIGTERM
 * (stop accepting, end every open stream, close every connection, exit 0).
 * HTTP, Connect and the routes are the API service's (agent/api).
 */
#include "agent/serve/serve.h"
#include "agent/api/listen.h"
#include "agent/api/routes.h"
#include "agent/api/server.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/num.h"
#include "agent/core/pid1.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char serve_usage[] =
    "usage: " SA_NAME " serve\n"
    "\n"
    "Be PID 1 and serve E2B's envd API (Connect RPC with JSON over HTTP/1.1:\n"
    "process.Process, filesystem.Filesystem, GET /health, GET /envs) so the E2B\n"
    "SDKs drive the sandbox. SIGTERM ends every stream and exits 0.\n"
    "\n"
    "environment:\n"
    "  " ENV_LISTEN "  HOST:PORT, [IPV6]:PORT or unix:/PATH (default\n"
    "      " DEFAULT_LISTEN_PUBLIC " with a token, " DEFAULT_LISTEN_LOCAL " without)\n"
    "  " ENV_TOKEN "   required as X-Access-Token on every request; hidden\n"
    "      from every process the agent starts\n"
    "  " ENV_INSECURE "=1  allow a non-loopback address without a token\n"
    "  " ENV_MAX_CONNECTIONS "  open connections at most (default 256)\n"
    "  " ENV_HTTP_TIMEOUT "  seconds a client may take to send a\n"
    "      request head or body, or to read a response (default 60; streams exempt)\n"
    "  " ENV_LOG "  debug | info | warn (default warn)\n"
    "\n"
    "exit status: 0 after SIGTERM, 2 usage or configuration error.\n";

struct serve_config {
    const char *listen;  /* the address as given (or the default) */
    struct listen_addr addr;
    unsigned max_conns;
    double timeout;
};

struct serve_state {
    struct ev_loop *loop;
    struct nonce nonce, token;
    struct serve_config cfg;
    struct routes routes;
    struct server srv;
    int stopping;
};

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

/* The environment of serve (README "sandbox-agent serve"). Returns 0, or -1
 * with a message in err. */
static int read_config(struct serve_config *cfg, int has_token, char *err)
{
    uint64_t n;
    const char *v = getenv(ENV_LISTEN);
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
        log_warn("serve: " ENV_INSECURE "=1: serving %s with no token; anyone who reaches it "
                 "can run commands here", cfg->listen);
    if (read_count(ENV_MAX_CONNECTIONS, 1000000, DEFAULT_MAX_CONNECTIONS, &n, err) < 0) return -1;
    cfg->max_conns = (unsigned)n;
    cfg->timeout = DEFAULT_HTTP_TIMEOUT;
    v = getenv(ENV_HTTP_TIMEOUT);
    if (v && *v && (num_seconds(v, NUM_MAX_SECONDS, &cfg->timeout) < 0 || cfg->timeout <= 0)) {
        err_set(err, ENV_HTTP_TIMEOUT " must be a number of seconds above 0, not '%.40s'", v);
        return -1;
    }
    return 0;
}

static void on_drained(struct server *s, void *ctx)
{
    struct serve_state *st = ctx;
    ev_break(st->loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    struct serve_state *st = ctx;
    if (sig != SIGTERM && sig != SIGINT) {
        log_debug("serve: signal %d (%s) ignored", sig, strsignal(sig));
        return;
    }
    if (st->stopping) return;
    st->stopping = 1;
    log_info("serve: %s: stopping", strsignal(sig));
    server_stop(&st->srv, on_drained, st);
}

static int parse_args(int argc, char **argv, int *help)
{
    *help = 0;
    if (argc < 2) return 0;
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        *help = 1;
        return 0;
    }
    log_error("serve: takes no arguments, not '%s' (see serve --help)", argv[1]);
    return -1;
}

/* Everything before the loop runs. Returns 0, 1 for --help, or -1 (logged). */
static int serve_prepare(int argc, char **argv, struct serve_state *st)
{
    char err[ERR_LEN];
    const char *why = NULL;
    int help;
    if (pid1_begin(&st->nonce) < 0) return -1;
    if (secret_take(ENV_TOKEN, &st->token, &why) < 0) {
        log_error("%s", why);
        return -1;
    }
    if (parse_args(argc, argv, &help) < 0) return -1;
    if (help) {
        fputs(serve_usage, stdout);
        return 1;
    }
    if (read_config(&st->cfg, st->token.len > 0, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    st->routes.token = st->token.len ? st->token.value : NULL;
    st->routes.token_len = st->token.len;
    io_cloexec_inherited();
    st->loop = ev_default_loop(EVFLAG_AUTO);
    if (!st->loop) {
        log_error("cannot start: no event loop");
        return -1;
    }
    reaper_init(st->loop);
    if (pid1_init(st->loop, on_signal, st, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return 0;
}

static int serve_listen(struct serve_state *st)
{
    char err[ERR_LEN];
    struct server_app app;
    int fd = listen_open(&st->cfg.addr, err);
    if (fd < 0) {
        log_error("serve: cannot listen on %s: %s", st->cfg.listen, err);
        return -1;
    }
    routes_app(&st->routes, &app);
    server_start(&st->srv, st->loop, fd, !st->cfg.addr.is_unix, st->cfg.max_conns,
                 st->cfg.timeout, &app);
    log_info("serve: listening on %s", st->cfg.listen);
    return 0;
}

int serve_main(int argc, char **argv)
{
    static struct serve_state st; /* one per process; the server lives as long */
    memset(&st, 0, sizeof st);
    int r = serve_prepare(argc, argv, &st);
    if (r == 0 && serve_listen(&st) < 0) r = -1;
    if (r == 0) {
        ev_run(st.loop, 0);
        if (!st.stopping) log_error("serve: nothing left to wait for; exiting");
        if (st.cfg.addr.is_unix) (void)unlink(st.cfg.addr.path);
        log_info("serve: stopped");
    }
    if (st.loop) pid1_stop(st.loop);
    free(st.nonce.value);
    free(st.token.value);
    return r < 0 ? EXIT_USAGE : 0;
}
