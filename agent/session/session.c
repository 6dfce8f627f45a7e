/*
 * session.c - `sandbox-agent session -- HANDLER ARGV...`: PID 1 of a warm
 * sandbox. Follows the mailbox the host appends requests to, keeps one
 * handler process warm, matches its replies to requests by id and prints each
 * as an authenticated reply line on stdout (README "`sandbox-agent session --
 * HANDLER ARGV...`").
 *
 * Owns session_main: the usage text, the arguments, the environment
 * (SANDBOX_AGENT_RESTART_BASE_SECONDS, SANDBOX_AGENT_QUEUE_MAX and the PID 1
 * variables), the wiring of the parts (session_priv.h lists them), the handler's
 * lifecycle callbacks and the exit. Every PID 1 duty (nonce, signals,
 * reaping) is agent/core's.
 */
#include "agent/session/session.h"
#include "agent/session/session_priv.h"
#include "agent/api/api.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/core/spawn.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESTART_BASE_MIN 0.001
#define RESTART_BASE_MAX 3600.0
#define QUEUE_MAX_MAX 1000000

static const char session_usage[] =
    "usage: " SA_NAME " session [--] HANDLER [ARG...]\n"
    "\n"
    "Be PID 1 of a warm sandbox: keep HANDLER running, hand it each request line\n"
    "appended to the mailbox (on its stdin), and print each of its replies as\n"
    SENTINEL_REPLY "<id>__<nonce>__<base64 JSON> on stdout.\n"
    "An id is 1-128 of [A-Za-z0-9._:-], without '__', not starting or ending with\n"
    "'_'. The nonce must be printable ASCII, without '__', not starting or ending\n"
    "with '_' (else exit 2).\n"
    "\n"
    "environment:\n"
    "  " ENV_MAILBOX "      the mailbox file (default " DEFAULT_MAILBOX ")\n"
    "  " ENV_NONCE "    secret printed in each reply; hidden from the handler\n"
    "  " ENV_GRACE " seconds in-flight requests get after SIGTERM (default 5)\n"
    "  " ENV_RESTART_BASE " restart delays are this times 1, 4, 16, 64 (default 1)\n"
    "  " ENV_QUEUE_MAX " requests held while the handler restarts (default 1024)\n"
    "  " ENV_SIGNAL_TARGET " 'group' (default) or 'child': where other signals go\n"
    "  " ENV_LISTEN " also serve the envd API there (the variables of\n"
    "      `serve --help` apply)\n"
    "  " ENV_LOG "      debug | info | warn (default warn)\n"
    "\n"
    "exit status: 0 after SIGTERM/SIGINT, 126/127 when HANDLER cannot be run,\n"
    "2 usage or configuration error.\n";

/* ---- configuration --------------------------------------------------------- */

static int read_restart_base(double *base, char *err)
{
    const char *v = getenv(ENV_RESTART_BASE);
    *base = DEFAULT_RESTART_BASE;
    if (!v || !*v) return 0;
    if (num_seconds(v, RESTART_BASE_MAX, base) < 0 || !(*base >= RESTART_BASE_MIN)) {
        err_set(err, ENV_RESTART_BASE " must be a number from %g to %g, not '%.40s'", RESTART_BASE_MIN,
                RESTART_BASE_MAX, v);
        return -1;
    }
    return 0;
}

static int read_queue_max(size_t *out, char *err)
{
    const char *v = getenv(ENV_QUEUE_MAX);
    uint64_t q = DEFAULT_QUEUE_MAX;
    if (v && *v && (num_count(v, QUEUE_MAX_MAX, &q) < 0 || q < 1)) {
        err_set(err, ENV_QUEUE_MAX " must be a whole number from 1 to %d, not '%.40s'", QUEUE_MAX_MAX, v);
        return -1;
    }
    *out = (size_t)q;
    return 0;
}

/* The nonce travels in every reply prefix: one a client cannot split back
 * out is refused (README, "Reply line"). The value itself is never logged. */
static int check_nonce(const struct nonce *n, char *err)
{
    const char *why = msgline_nonce_problem(n->value, n->len);
    if (!why) return 0;
    err_set(err, ENV_NONCE " cannot be carried in a reply line: %s (a client splits the prefix on '__')", why);
    return -1;
}

static int read_config(struct session *s, double *base, char *err)
{
    if (check_nonce(&s->nonce, err) < 0 || pid1_config_read(&s->cfg, err) < 0 ||
        read_restart_base(base, err) < 0 || read_queue_max(&s->queue_max, err) < 0)
        return -1;
    return 0;
}

/* ---- the handler's lifecycle ----------------------------------------------- */

static void h_started(void *ctx)
{
    struct session *s = ctx;
    if (s->queue.head) handler_want_write(&s->h, 1);
}

static void h_exit(void *ctx, int status)
{
    struct session *s = ctx;
    (void)status;
    /* Everything that reached it, even in part, is lost with it. */
    size_t lost =
        requests_answer_started(s, SESSION_ERR_HANDLER_EXITED, "the handler exited before answering");
    if (lost)
        log_warn("the handler exited with %zu requests in flight; answered " SESSION_ERR_HANDLER_EXITED,
                 lost);
    if (s->stopping) {
        shutdown_finish(s);
        return;
    }
    /* Down: read on, into the bounded queue. */
    intake_resume(s);
}

static const struct handler_ops ops = {pump_reply, pump_reply_too_large, pump_writable, h_started, h_exit};

/* ---- the API beside the handler (SANDBOX_AGENT_LISTEN) --------------------- */

static struct {
    int on;
    struct api api;
    struct nonce token;
} side;

/* Returns 0, or -1 with err. */
static int serve_start(struct session *s, char *err)
{
    const char *why;
    struct api_config cfg;
    if (!api_wanted()) return 0;
    if (nonce_take_secret(ENV_TOKEN, &side.token, &why) < 0) {
        err_set(err, "%s", why);
        return -1;
    }
    int rc = api_config_read(&cfg, side.token.value, err) < 0 ||
             api_start(&side.api, s->loop, &cfg, side.token.value, err) < 0 ? -1 : 0;
    nonce_wipe(&side.token); /* the API holds the one copy kept (api.h) */
    if (rc < 0) return -1;
    side.on = 1;
    return 0;
}

static void on_api_stopped(void *ctx) { ev_break(ctx, EVBREAK_ALL); }

/* The session is over: so is the API (its processes stopped, its streams ended). */
static void serve_finish(struct session *s)
{
    if (side.on) {
        api_stop(&side.api, on_api_stopped, s->loop);
        while (!side.api.done) ev_run(s->loop, 0);
        api_free(&side.api);
        side.on = 0;
    }
    free(side.token.value);
    side.token.value = NULL;
}

/* SIGTERM/SIGINT stop the API's processes along with the handler. */
static void on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    if ((sig == SIGTERM || sig == SIGINT) && side.on) api_stop(&side.api, NULL, NULL);
    shutdown_on_signal(loop, sig, ctx);
}

/* ---- wiring ---------------------------------------------------------------- */

/* The loop, the tables, the buffers, the signals. -1 with err. */
static int setup(struct session *s, char *err)
{
    if (!(s->loop = reaper_loop(err))) return -1;
    s->seen = seen_new(SESSION_DEDUP_WINDOW);
    if (!s->seen || requests_init(s) < 0) {
        err_set(err, "cannot start: out of memory");
        return -1;
    }
    output_init(s);
    buf_init(&s->tmp, 64 * 1024);
    if (pid1_init(s->loop, on_signal, s, err) < 0) return -1;
    pump_start(s);
    shutdown_init(s);
    return serve_start(s, err);
}

/* Safe at every stage of set-up: what was not made is all zero. */
static void free_all(struct session *s)
{
    requests_free_all(s);
    intake_stop(s);
    handler_free(&s->h);
    seen_free(s->seen);
    output_free(s);
    buf_free(&s->tmp);
    if (s->loop) pid1_stop(s->loop);
    free(s->nonce.value);
}

/* The handler, then the mailbox. Returns 0, or -1 with *code the exit code
 * (the caller frees what was made). */
static int start(struct session *s, char **cmd, double base, const char *path, int *code)
{
    char err[ERR_LEN];
    int exec_errno;
    handler_init(&s->h, s->loop, cmd, base, &ops, s);
    if (handler_start(&s->h, &exec_errno, err) < 0) {
        log_error("cannot start the handler: %s", err);
        *code = EXIT_NOEXEC;
        return -1;
    }
    if (exec_errno) {
        /* A handler that cannot be run at all is a configuration error the
         * operator must see, not something to retry forever. */
        log_error("cannot run the handler '%s': %s", cmd[0], spawn_exec_reason(exec_errno));
        handler_no_restart(&s->h);
        *code = spawn_exec_exit_code(exec_errno);
        return -1;
    }
    if (intake_start(s, path, err) < 0) {
        log_error("%s", err);
        handler_no_restart(&s->h);
        stop_kill(s->h.pid);
        *code = EXIT_USAGE;
        return -1;
    }
    log_info("session: mailbox %s, handler %s", path, cmd[0]);
    return 0;
}

/* Until the handler has exited after SIGTERM/SIGINT. Returns 0. */
static int run(struct session *s)
{
    ev_run(s->loop, 0);
    if (!s->done) log_error("session: nothing left to wait for; exiting"); /* a bug: never spin */
    pump_stop(s);
    serve_finish(s);
    /* As PID 1 the kernel kills everything left when we exit; do it now so
     * nothing of the handler outlives the last reply line. */
    if (pid1_is_init()) kill(-1, SIGKILL);
    return 0;
}

/* Everything after the nonce: configuration, set-up, the session. Returns
 * the exit code; what it made is freed by the caller on every path. */
static int configure_and_run(struct session *s, int argc, char **argv)
{
    char err[ERR_LEN];
    char **cmd;
    int help, code;
    double base;

    if (pid1_command_line(argc, argv, "session", &cmd, &help, err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    if (!cmd && !help) {
        log_error("session: no handler command (usage: session -- HANDLER [ARG...])");
        return EXIT_USAGE;
    }
    if (help) {
        fputs(session_usage, stdout);
        return 0;
    }
    if (read_config(s, &base, err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    const char *path = getenv(ENV_MAILBOX);
    if (!path || !*path) path = DEFAULT_MAILBOX;
    if (setup(s, err) < 0) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    if (start(s, cmd, base, path, &code) < 0) {
        serve_finish(s);
        return code;
    }
    return run(s);
}

int session_main(int argc, char **argv)
{
    struct session st; /* one per process; everything it holds is freed here */
    memset(&st, 0, sizeof st);
    if (pid1_begin(&st.nonce) < 0) return EXIT_USAGE;
    int code = configure_and_run(&st, argc, argv);
    free_all(&st);
    return code;
}
