/*
 * serve.c - `sandbox-agent serve`: PID 1 serving E2B's envd API over HTTP/1.1
 * (README "sandbox-agent serve"). Owns the mode's order of things only:
 * the first step (secrets, log level), the loop, the reaper and the
 * signals, and on SIGTERM the API's stop (stop accepting, stop every
 * process, end every open stream, close every connection), then exit 0.
 * The configuration, HTTP, Connect, the routes and the processes are the
 * API service's (agent/api).
 */
#include "agent/serve/serve.h"
#include "agent/api/api.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
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
    "process.Process, filesystem.Filesystem, /files, GET /health, GET /envs,\n"
    "GET /metrics, POST /init) so the E2B SDKs drive the sandbox. SIGTERM ends\n"
    "every stream and exits 0.\n"
    "\n"
    "environment:\n"
    "  " ENV_LISTEN "  HOST:PORT, [IPV6]:PORT or unix:/PATH (default\n"
    "      " DEFAULT_LISTEN_PUBLIC " with a token, " DEFAULT_LISTEN_LOCAL " without)\n"
    "  " ENV_TOKEN "   required as X-Access-Token on every request; hidden\n"
    "      from every process the agent starts (POST /init may set or replace it)\n"
    "  " ENV_AWAIT_TOKEN "=1  a public address without a token: only /health\n"
    "      and /init answer until an /init sets one\n"
    "  " ENV_INSECURE "=1  allow a non-loopback address without a token\n"
    "  " ENV_MAX_CONNECTIONS "  open connections at most (default 256); at the\n"
    "      bound a new one displaces the oldest with no request past the token\n"
    "  " ENV_HTTP_TIMEOUT "  seconds a client may take to send a\n"
    "      request head or body, or to read a response (default 60; streams exempt)\n"
    "  " ENV_FIRST_HEAD "  seconds a connection with no request past the\n"
    "      token yet may take to send a head (default 10)\n"
    "  " ENV_RETAIN_BYTES "  output kept per channel of each process (default 8 MiB)\n"
    "  " ENV_USER "  who a request naming no user runs as (default: the agent's user)\n"
    "  " ENV_GRACE "  seconds between SIGTERM and SIGKILL of the processes (default 5)\n"
    "  " ENV_DISK_PATH "  the filesystem GET /metrics reports (default /)\n"
    "  " ENV_CGROUPS "  1: a cgroup for each process where one may be made (default),\n"
    "      0: none, v2 or v1: that kind only\n"
    "  " ENV_FORWARD "=1|0  servers listening on 127.0.0.1 or ::1 only are\n"
    "      reached at the same port on the outward addresses (default 1 when the\n"
    "      API listens on one, else 0); " ENV_FORWARD_ADDRS " (default: the\n"
    "      interfaces'), " ENV_FORWARD_MAX_CONNECTIONS " (1024),\n"
    "      " ENV_FORWARD_SECONDS " (the poll, 1)\n"
    "  " ENV_LOG "  debug | info | warn (default warn)\n"
    "\n"
    "exit status: 0 after SIGTERM, 2 usage or configuration error.\n";

struct serve_state {
    struct ev_loop *loop;
    struct nonce nonce, token;
    struct api_config cfg;
    struct api api;
    int stopping;
};

static void on_stopped(void *ctx)
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
    api_stop(&st->api, on_stopped, st);
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
    if (nonce_take_secret(ENV_TOKEN, &st->token, &why) < 0) {
        log_error("%s", why);
        return -1;
    }
    if (parse_args(argc, argv, &help) < 0) return -1;
    if (help) {
        fputs(serve_usage, stdout);
        return 1;
    }
    if (api_config_read(&st->cfg, st->token.value, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (!(st->loop = reaper_loop(err))) {
        log_error("serve: %s", err);
        return -1;
    }
    if (pid1_init(st->loop, on_signal, st, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return 0;
}

int serve_main(int argc, char **argv)
{
    static struct serve_state st; /* one per process; the server lives as long */
    memset(&st, 0, sizeof st);
    char err[ERR_LEN];
    int r = serve_prepare(argc, argv, &st);
    if (r == 0 && api_start(&st.api, st.loop, &st.cfg, st.token.value, err) < 0) {
        log_error("%s", err);
        r = -1;
    }
    nonce_wipe(&st.token); /* the API holds the one copy kept (api.h) */
    if (r == 0) {
        ev_run(st.loop, 0);
        if (!st.stopping) log_error("serve: nothing left to wait for; exiting");
    }
    api_free(&st.api);
    if (st.loop) pid1_stop(st.loop);
    free(st.nonce.value);
    return r < 0 ? EXIT_USAGE : 0;
}
