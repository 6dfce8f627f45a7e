/*
 * run.c - `sandbox-agent run`: run one job as a child, supervise it as an init
 * would, then report its outcome (sentinel line, webhook) and exit with its
 * exit code. A drop-in for the bash job runner: same environment, same
 * sentinel, same exit code, minus its holes (ignored SIGTERM, leaked zombies,
 * a nonce readable in /proc).
 *
 * Owns the job's lifecycle only. Signals, spawning, reaping, the nonce, the
 * outcome format, the result file, the relay and the webhook each live in
 * their own file; this one decides the order they happen in.
 */
#include "runner/run/run.h"
#include "runner/run/drain.h"
#include "runner/run/entry.h"
#include "runner/run/jobctl.h"
#include "runner/run/report.h"
#include "runner/run/result.h"
#include "runner/run/sentinel.h"
#include "runner/run/webhook.h"
#include "agent/api/api.h"
#include "agent/core/descendants.h"
#include "agent/core/err.h"
#include "agent/core/errpipe.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/oom.h"
#include "agent/core/outlet.h"
#include "agent/core/pid1.h"
#include "agent/core/protocol.h"
#include "agent/core/relay.h"
#include "agent/core/spawn.h"
#include "agent/core/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: " SA_NAME " run [-- CMD [ARG...]]\n"
    "\n"
    "Run a job as PID 1: forward signals to it, reap every zombie, then print\n"
    "one " SENTINEL_RESULT "<base64 JSON> line and exit with the job's exit code.\n"
    "\n"
    "The command comes from `-- CMD ARG...`, else from " ENV_INNER_ENTRY "\n"
    "(a JSON array of strings).\n"
    "\n"
    "environment:\n"
    "  " ENV_INNER_ENTRY "  JSON array: the argv to run\n"
    "  " ENV_NONCE "        secret copied into the result; hidden from the job\n"
    "  " ENV_RESULT "           where the job may write a JSON object (default " DEFAULT_RESULT_PATH ")\n"
    "  " ENV_RESULT_MAX " largest accepted result file (default 1048576)\n"
    "  " ENV_WEBHOOK "      http:// or https:// URL the outcome is POSTed to\n"
    "  " ENV_JOB_ID "           copied into the webhook payload\n"
    "  " ENV_WEBHOOK_CA_FILE " PEM bundle an https:// webhook is checked against\n"
    "      (default " DEFAULT_CA_FILE ")\n"
    "  " ENV_GRACE " seconds between SIGTERM/SIGINT and SIGKILL (default 5)\n"
    "  " ENV_SIGNAL_TARGET " 'group' (default) or 'child'\n"
    "  " ENV_REPORT " how long a stalled stdout may hold the sentinel (default 30)\n"
    "  " ENV_LISTEN " also serve the envd API there while the job runs\n"
    "      (the variables of `serve --help` apply)\n"
    "  " ENV_LOG "          debug | info | warn (default warn)\n"
    "\n"
    "exit status: the job's, 128+N if signal N killed it, 126 not executable,\n"
    "127 not found, 2 usage or configuration error.\n";

struct run_state {
    struct ev_loop *loop;
    struct pid1_config cfg;
    char **cmd;
    const char *result_path;
    size_t result_max;
    pid_t child;
    int exec_errno;
    int exited;
    int status;
    long long oom_before, oom_after; /* OOM kills counted at the start and the exit */
    int sent_kill;       /* a signal rewritten to SIGKILL went to the job */
    struct stop stop;
    struct reaper_watch rw;
    int relaying;        /* the job's stdout comes through the relay */
    struct outlet out;   /* the agent's stdout */
    struct relay relay;
    struct errpipe err;  /* the job's own stderr under 2>&1 */
    double report_bound; /* SANDBOX_AGENT_REPORT_SECONDS */
    struct report report;
    struct drain drain;
    int serving;         /* the API beside the job (SANDBOX_AGENT_LISTEN) */
    struct api api;
    struct nonce token;
    struct jobctl jc;    /* the terminal and job-control stops */
};

/* How long the leftovers of the job get to die before the webhook. */
#define LEFTOVERS_KILL_SECONDS 2.0

static void on_grace_expired(struct ev_loop *loop, struct stop *s, void *ctx)
{
    (void)loop;
    (void)s;
    struct run_state *st = ctx;
    /* The whole group: a shell that forwards nothing must not leave its
     * children running. stop.c kills the leader too, in case it left. A job
     * that stopped the terminal's output must not block the log line. */
    jobctl_flow_on();
    log_warn("job still running %.3g s after the stop signal; sending SIGKILL", st->cfg.grace);
}

static void on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    struct run_state *st = ctx;
    if (st->exited) { /* reporting already: nothing left to signal */
        if (sig == SIGTERM || sig == SIGINT) report_stop(&st->report);
        return;
    }
    /* SIGTERM (docker stop) and SIGINT (Ctrl-C without a terminal) are
     * requests to stop: the job gets the grace period to exit by itself, and
     * SIGCONT, since a stopped job (SIGSTOP, Ctrl-Z) could otherwise only ever
     * end in SIGKILL. A second one is forwarded again but does not restart
     * the clock. The terminal's stop signals stop the agent too, after the
     * job (jobctl.h), and SIGCONT gives the job its terminal back first.
     * Every other signal is only passed on. */
    int out = rewrite_apply(&st->cfg.rewrite, sig);
    if (!out) {
        log_info("signal %d dropped (" ENV_SIGNAL_REWRITE ")", sig);
        return;
    }
    if ((sig == SIGTERM || sig == SIGINT) && st->serving) api_stop(&st->api, NULL, NULL);
    if (out == SIGKILL) st->sent_kill = 1;
    if (sig == SIGCONT) jobctl_continued(&st->jc);
    if (sig == SIGTERM || sig == SIGINT)
        stop_begin(loop, &st->stop, st->child, out, st->cfg.to_group, st->cfg.grace);
    else
        pid1_forward(&st->cfg, st->child, sig);
    if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) jobctl_signal_stop(&st->jc);
}

static void on_child_exit(struct ev_loop *loop, pid_t pid, int status, void *ctx)
{
    (void)pid;
    struct run_state *st = ctx;
    if (WIFSTOPPED(status)) {
        jobctl_job_stopped(&st->jc);
        return;
    }
    if (WIFCONTINUED(status)) return;
    st->exited = 1;
    st->status = status;
    st->oom_after = oom_kills(NULL); /* before anything else can die */
    stop_cancel(loop, &st->stop);
    ev_break(loop, EVBREAK_ALL);
}

/* With SANDBOX_AGENT_LISTEN, the API serves beside the job on the same loop
 * (README "sandbox-agent serve"). Returns 0, or -1 (logged). */
static int run_serve_start(struct run_state *st)
{
    char err[ERR_LEN];
    const char *why;
    struct api_config cfg;
    if (!api_wanted()) return 0;
    if (nonce_take_secret(ENV_TOKEN, &st->token, &why) < 0) {
        log_error("%s", why);
        return -1;
    }
    int rc = api_config_read(&cfg, st->token.value, err) < 0 ||
             api_start(&st->api, st->loop, &cfg, st->token.value, err) < 0 ? -1 : 0;
    nonce_wipe(&st->token); /* the API holds the one copy kept (api.h) */
    if (rc < 0) {
        log_error("%s", err);
        return -1;
    }
    st->serving = 1;
    return 0;
}

static void on_api_stopped(void *ctx) { ev_break(ctx, EVBREAK_ALL); }

/* The job is over: so is the API (its processes stopped, its streams ended). */
static void run_serve_finish(struct run_state *st)
{
    if (st->serving) {
        api_stop(&st->api, on_api_stopped, st->loop);
        while (!st->api.done) ev_run(st->loop, 0);
        api_free(&st->api);
    }
    free(st->token.value);
}

/* Step 1 of the contract: the result directory, or the fallback path. */
static int prepare_result_path(char **path_out)
{
    const char *p = getenv(ENV_RESULT);
    char *path = strdup(p && *p ? p : DEFAULT_RESULT_PATH);
    if (!path) return -1;
    char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        *slash = '\0';
        int r = io_mkdir_p(path, 0777);
        int e = errno;
        *slash = '/';
        if (r < 0) {
            log_warn("cannot create the directory of %s: %s; using " FALLBACK_RESULT_PATH, path,
                     strerror(e));
            free(path);
            path = strdup(FALLBACK_RESULT_PATH);
            if (!path) return -1;
            if (io_mkdir_p("/tmp", 01777) < 0)
                log_warn("cannot create /tmp: %s", strerror(errno));
        }
    }
    if (setenv(ENV_RESULT, path, 1) < 0) {
        free(path);
        return -1;
    }
    *path_out = path;
    return 0;
}

/* Everything run_main allocates, freed in one place on every path. */
struct run_owned {
    struct nonce nonce;
    char **entry;
    char *result_path;
};

/* Read the configuration: the command, the tuning variables, the result
 * path (step 1). Returns 0, 1 for --help (printed), or -1 (logged). */
static int run_prepare(int argc, char **argv, struct run_state *st, struct run_owned *own)
{
    char err[ERR_LEN];
    int help;

    if (pid1_begin(&own->nonce) < 0) return -1;
    if (pid1_command_line(argc, argv, "run", &st->cmd, &help, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (help) {
        fputs(run_usage, stdout);
        return 1;
    }
    if (!st->cmd) {
        const char *text = getenv(ENV_INNER_ENTRY);
        if (entry_decode(text, text ? strlen(text) : 0, &own->entry, err) < 0) {
            log_error("%s", err);
            return -1;
        }
        st->cmd = own->entry;
    }
    if (pid1_config_read(&st->cfg, err) < 0 || result_max_bytes(&st->result_max, err) < 0 ||
        report_seconds(&st->report_bound, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (prepare_result_path(&own->result_path) < 0) {
        log_error("out of memory");
        return -1;
    }
    st->result_path = own->result_path;
    if (!(st->loop = reaper_loop(err))) {
        log_error("%s", err);
        return -1;
    }
    stop_init(&st->stop, on_grace_expired, st);
    if (pid1_init(st->loop, on_signal, st, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return run_serve_start(st);
}

/* The job's stdout goes through us unless it is a terminal: the job must
 * then see a real TTY (isatty, job control) and we cannot interpose. Under
 * 2>&1 its stderr gets a pipe of its own too (errpipe.h). Returns the write
 * end for the job's stdout, or -1 when it inherits ours. */
static int relay_setup(struct run_state *st)
{
    int pipefd[2];
    errpipe_init(&st->err);
    report_init(&st->report);
    st->relay.in_fd = -1;
    outlet_grow_pipe(STDOUT_FILENO);
    outlet_init(&st->out, STDOUT_FILENO);
    st->relaying = !isatty(STDOUT_FILENO);
    if (!st->relaying) return -1;
    if (pipe2(pipefd, O_CLOEXEC) < 0) pipefd[0] = pipefd[1] = -1;
    if (pipefd[0] < 0 || relay_start(&st->relay, st->loop, pipefd[0], &st->out, 0) < 0) {
        log_warn("cannot set up the stdout relay: %s; the job writes to stdout directly", strerror(errno));
        if (pipefd[0] >= 0) {
            close(pipefd[0]);
            close(pipefd[1]);
        }
        st->relay.in_fd = -1;
        st->relaying = 0;
        return -1;
    }
    errpipe_open(&st->err, st->loop, &st->out);
    return pipefd[1];
}

/* Step 2: start the job. Returns the exit code to report when it could not be
 * started at all, else -1. */
static int run_start(struct run_state *st)
{
    char err[ERR_LEN];
    int out_fd = relay_setup(st);
    /* With a controlling terminal in the foreground, hand it to the job so
     * Ctrl-C and job control reach it, as in a shell. */
    int tty_fd = jobctl_init(&st->jc);

    int own_session = tty_fd < 0 && jobctl_no_terminal();
    /* A job leading a session of its own is an orphaned process group: the
     * kernel ignores SIGTSTP, SIGTTIN and SIGTTOU there unless caught, so a
     * suspend reaches it as SIGSTOP, as under dumb-init (its setsid mode);
     * SANDBOX_AGENT_SIGNAL_REWRITE naming one of them wins. */
    static const int suspends[] = {SIGTSTP, SIGTTIN, SIGTTOU};
    for (size_t i = 0; own_session && i < sizeof suspends / sizeof suspends[0]; i++)
        rewrite_default(&st->cfg.rewrite, suspends[i], SIGSTOP);
    struct spawn_opts so = {.argv = st->cmd, .new_pgrp = 1, .new_session = own_session,
                            .tty_fd = tty_fd, .stdin_fd = -1,
                            .stdout_fd = out_fd, .stderr_fd = errpipe_child_fd(&st->err), .cwd = NULL};
    st->oom_before = oom_kills(NULL);
    st->child = spawn_child(&so, &st->exec_errno, err);
    if (out_fd >= 0) close(out_fd);
    errpipe_close_write(&st->err);
    if (st->child < 0) {
        log_error("cannot start the job: %s", err);
        if (st->relaying) relay_close(&st->relay);
        errpipe_close(&st->err);
        st->relaying = 0;
        return EXIT_NOEXEC;
    }
    if (st->exec_errno) log_error("cannot run '%s': %s", st->cmd[0], spawn_exec_reason(st->exec_errno));
    jobctl_started(&st->jc, st->child);
    reaper_watch_traced(st->loop, &st->rw, st->child, on_child_exit, st);
    log_debug("job started as pid %d", (int)st->child);
    return -1;
}

/* Step 3-4: supervise until the job exits; its exit code. */
static int run_supervise(struct run_state *st)
{
    while (!st->exited) ev_run(st->loop, 0);
    int exit_code = st->exec_errno ? spawn_exec_exit_code(st->exec_errno) : spawn_exit_code(st->status);
    log_info("job exited with code %d", exit_code);
    return exit_code;
}

/* As PID 1 the kernel kills everything left when we exit. Do it now, and
 * wait until it is reaped, so no leftover process of the job lives alongside
 * the webhook POST nor holds the process slot its helper needs. As a
 * subreaper, leftovers are left running like tini does: the webhook's
 * helper is a fork of the agent, out of their reach (webhook.h). */
static void clear_leftovers(struct run_state *st)
{
    if (pid1_is_init()) descendants_kill(st->loop, LEFTOVERS_KILL_SECONDS);
}

/* As a subreaper, a leftover of the job that still holds its stdout (or
 * stderr) would lose it when we exit: fork the drain process now, before
 * the nonce is in any buffer (drain.h). */
static void drain_prepare(struct run_state *st, struct nonce *nonce)
{
    int fds[DRAIN_MAX_FDS], n = 0;
    if (!st->relaying || pid1_is_init()) return;
    if (relay_writers(&st->relay)) fds[n++] = st->relay.in_fd;
    if (st->err.active && relay_writers(&st->err.relay)) fds[n++] = st->err.relay.in_fd;
    if (n) drain_fork(&st->drain, fds, n, nonce);
}

/* After the report: hand the relay pipes over if anything can still come. */
static void drain_finish(struct run_state *st)
{
    if (st->drain.pid <= 0) return;
    if (!st->out.broken && (relay_live(&st->relay) || (st->err.active && relay_live(&st->err.relay))))
        drain_go(&st->drain);
    else
        drain_cancel(&st->drain);
}

/* Steps 5-6: the result file, then the job's last output and the sentinel. */
static void report_sentinel(struct run_state *st, const struct job_outcome *o)
{
    struct buf core, line;
    buf_init(&core, (size_t)-1 / 2);
    buf_init(&line, (size_t)-1 / 2);
    if (sentinel_json(&core, o, NULL) < 0 || sentinel_line(&line, core.data, core.len) < 0) {
        log_error("out of memory building the sentinel");
    } else {
        /* A terminal the job wrote to directly: whether its output ended a
         * line is unknowable, and a sentinel glued to a line is lost. */
        int force_nl = !st->relaying && isatty(STDOUT_FILENO);
        /* A job ended by a stop signal got the grace period; its report
         * gets no longer on a stalled stdout. */
        double bound = st->report_bound;
        int stopped = st->stop.pid > 0 || st->stop.killed || st->report.stop_early;
        if (stopped && st->cfg.grace < bound) bound = st->cfg.grace;
        if (st->relaying) report_add_relay(&st->report, &st->relay);
        if (st->err.active) report_add_relay(&st->report, &st->err.relay);
        report_run(&st->report, st->loop, &st->out, line.data, line.len, force_nl, bound);
    }
    /* Both hold the nonce. */
    nonce_overwrite(line.data, line.cap);
    nonce_overwrite(core.data, core.cap);
    buf_free(&line);
    buf_free(&core);
}

/* Steps 5-7: read the result file, print the sentinel, POST the webhook. */
static void run_report(struct run_state *st, int exit_code, struct nonce *nonce)
{
    drain_prepare(st, nonce);
    struct job_result res;
    result_read(st->result_path, st->result_max, &res);
    if (res.error[0]) log_warn("%s: %s", st->result_path, res.error);
    int oom = !st->exec_errno && oom_killed(st->status, st->stop.killed || st->sent_kill, st->oom_before,
                                            st->oom_after);
    if (oom) log_warn("the job was killed by the kernel's OOM killer (out of memory)");
    struct job_outcome o = {exit_code, res.raw, res.len, res.error, nonce->value, nonce->len, oom};
    report_sentinel(st, &o);

    const char *hook = getenv(ENV_WEBHOOK);
    clear_leftovers(st);
    if (hook && *hook) {
        const char *job_id = getenv(ENV_JOB_ID);
        struct buf payload;
        buf_init(&payload, (size_t)-1 / 2);
        if (sentinel_json(&payload, &o, job_id ? job_id : "") < 0)
            log_error("out of memory building the webhook payload");
        else
            webhook_post(st->loop, hook, getenv(ENV_WEBHOOK_CA_FILE), payload.data, payload.len,
                         WEBHOOK_BUDGET_SECONDS);
        /* It holds the nonce. */
        nonce_overwrite(payload.data, payload.cap);
        buf_free(&payload);
    }
    result_free(&res);
    drain_finish(st);
}

/* The contract's steps, in order: prepare, start, supervise, report. */
static int run_job(int argc, char **argv, struct run_owned *own)
{
    struct run_state st;
    memset(&st, 0, sizeof st);
    int r = run_prepare(argc, argv, &st, own);
    if (r != 0) {
        free(st.token.value);
        return r > 0 ? 0 : EXIT_USAGE;
    }
    int exit_code = run_start(&st);
    if (exit_code < 0) exit_code = run_supervise(&st);
    jobctl_reclaim(&st.jc);
    run_serve_finish(&st);
    run_report(&st, exit_code, &own->nonce);
    if (st.relaying) relay_close(&st.relay);
    errpipe_close(&st.err);
    pid1_stop(st.loop);
    return exit_code;
}

int run_main(int argc, char **argv)
{
    struct run_owned own = {{NULL, 0}, NULL, NULL};
    int rc = run_job(argc, argv, &own);
    entry_free(own.entry);
    free(own.result_path);
    nonce_wipe(&own.nonce);
    return rc;
}
