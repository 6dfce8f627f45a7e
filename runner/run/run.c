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
#include "runner/run/entry.h"
#include "runner/run/jobctl.h"
#include "runner/run/relay.h"
#include "runner/run/result.h"
#include "runner/run/sentinel.h"
#include "runner/run/webhook.h"
#include "agent/core/descendants.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/pid1.h"
#include "agent/core/protocol.h"
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
    "  " ENV_GRACE " seconds between SIGTERM/SIGINT and SIGKILL (default 5)\n"
    "  " ENV_SIGNAL_TARGET " 'group' (default) or 'child'\n"
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
    struct stop stop;
    struct reaper_watch rw;
    int relaying;        /* the job's stdout comes through the relay */
    struct relay relay;
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
    if (st->exited) return; /* reporting already: nothing left to signal */
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
    stop_cancel(loop, &st->stop);
    ev_break(loop, EVBREAK_ALL);
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

/* Print the sentinel; it must start a line on stdout. */
static void print_sentinel(const char *core, size_t n, int at_line_start)
{
    struct buf line;
    buf_init(&line, (size_t)-1 / 2);
    if ((!at_line_start && buf_putc(&line, '\n') < 0) || sentinel_line(&line, core, n) < 0) {
        log_error("out of memory building the sentinel");
        buf_free(&line);
        return;
    }
    if (io_write_all(STDOUT_FILENO, line.data, line.len) < 0)
        log_error("cannot write the sentinel to stdout: %s", strerror(errno));
    buf_free(&line);
}

static int parse_args(int argc, char **argv, char ***cmd, int *help)
{
    int i = 1;
    *cmd = NULL;
    *help = 0;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            if (i >= argc) {
                log_error("run: no command after --");
                return -1;
            }
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = 1;
            return 0;
        }
        if (argv[i][0] == '-') {
            log_error("run: unknown option '%s' (see run --help)", argv[i]);
            return -1;
        }
        break; /* first word of the command */
    }
    if (i < argc) *cmd = argv + i;
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
    if (parse_args(argc, argv, &st->cmd, &help) < 0) return -1;
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
    if (pid1_config_read(&st->cfg, err) < 0 || result_max_bytes(&st->result_max, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (prepare_result_path(&own->result_path) < 0) {
        log_error("out of memory");
        return -1;
    }
    st->result_path = own->result_path;
    io_cloexec_inherited();
    st->loop = ev_default_loop(EVFLAG_AUTO);
    if (!st->loop) {
        log_error("cannot start the event loop");
        return -1;
    }
    reaper_init(st->loop);
    stop_init(&st->stop, on_grace_expired, st);
    if (pid1_init(st->loop, on_signal, st, err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return 0;
}

/* Step 2: start the job. Returns the exit code to report when it could not be
 * started at all, else -1. */
static int run_start(struct run_state *st)
{
    char err[ERR_LEN];
    /* The job's stdout goes through us unless it is a terminal: the job must
     * then see a real TTY (isatty, job control) and we cannot interpose. */
    int pipefd[2] = {-1, -1};
    st->relaying = !isatty(STDOUT_FILENO);
    if (st->relaying && pipe2(pipefd, O_CLOEXEC) < 0) {
        log_warn("cannot create the stdout relay pipe: %s; the job writes to stdout directly",
                 strerror(errno));
        st->relaying = 0;
    }
    /* With a controlling terminal in the foreground, hand it to the job so
     * Ctrl-C and job control reach it, as in a shell. */
    int tty_fd = jobctl_init(&st->jc);

    struct spawn_opts so = {st->cmd, 1, tty_fd, -1, st->relaying ? pipefd[1] : -1, -1, NULL};
    st->child = spawn_child(&so, &st->exec_errno, err);
    if (st->relaying) close(pipefd[1]);
    if (st->child < 0) {
        log_error("cannot start the job: %s", err);
        if (st->relaying) close(pipefd[0]);
        st->relaying = 0;
        return EXIT_NOEXEC;
    }
    if (st->exec_errno) log_error("cannot run '%s': %s", st->cmd[0], spawn_exec_reason(st->exec_errno));
    jobctl_started(&st->jc, st->child);
    reaper_watch_traced(st->loop, &st->rw, st->child, on_child_exit, st);
    if (st->relaying) relay_start(&st->relay, st->loop, pipefd[0], STDOUT_FILENO);
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
 * subreaper, leftovers are left running like tini does, except before an
 * https webhook: curl is a fresh, dumpable process holding the nonce, and a
 * leftover of the same uid could read it from /proc/<curl>. Returns -1 when
 * the https webhook must not be sent: some leftover survived. */
static int clear_leftovers(struct run_state *st, const char *hook)
{
    int https = hook && !strncmp(hook, "https://", 8);
    if (!pid1_is_init() && !https) return 0;
    if (descendants_kill(st->loop, LEFTOVERS_KILL_SECONDS) == 0 || !https) return 0;
    log_error("webhook: not sent: curl would hold the nonce where a leftover of the job could read it");
    return -1;
}

/* Steps 5-7: read the result file, print the sentinel, POST the webhook. */
static void run_report(struct run_state *st, int exit_code, const struct nonce *nonce)
{
    int at_line_start = 1;
    if (st->relaying) {
        relay_finish(&st->relay);
        at_line_start = relay_at_line_start(&st->relay);
    } else if (isatty(STDOUT_FILENO)) {
        /* The job wrote to the terminal directly: whether its output ended a
         * line is unknowable, and a sentinel glued to a line is lost. */
        at_line_start = 0;
    }

    struct job_result res;
    result_read(st->result_path, st->result_max, &res);
    if (res.error[0]) log_warn("%s: %s", st->result_path, res.error);
    struct job_outcome o = {exit_code, res.raw, res.len, res.error, nonce->value, nonce->len};
    struct buf core;
    buf_init(&core, (size_t)-1 / 2);
    if (sentinel_json(&core, &o, NULL) < 0)
        log_error("out of memory building the outcome");
    else
        print_sentinel(core.data, core.len, at_line_start);

    const char *hook = getenv(ENV_WEBHOOK);
    if (clear_leftovers(st, hook) < 0) hook = NULL;
    if (hook && *hook) {
        const char *job_id = getenv(ENV_JOB_ID);
        struct buf payload;
        buf_init(&payload, (size_t)-1 / 2);
        if (sentinel_json(&payload, &o, job_id ? job_id : "") < 0)
            log_error("out of memory building the webhook payload");
        else
            webhook_post(st->loop, hook, payload.data, payload.len, WEBHOOK_BUDGET_SECONDS);
        buf_free(&payload);
    }
    buf_free(&core);
    result_free(&res);
}

/* The contract's steps, in order: prepare, start, supervise, report. */
static int run_job(int argc, char **argv, struct run_owned *own)
{
    struct run_state st;
    memset(&st, 0, sizeof st);
    int r = run_prepare(argc, argv, &st, own);
    if (r != 0) return r > 0 ? 0 : EXIT_USAGE;
    int exit_code = run_start(&st);
    if (exit_code < 0) exit_code = run_supervise(&st);
    jobctl_reclaim(&st.jc);
    run_report(&st, exit_code, &own->nonce);
    pid1_stop(st.loop);
    return exit_code;
}

int run_main(int argc, char **argv)
{
    struct run_owned own = {{NULL, 0}, NULL, NULL};
    int rc = run_job(argc, argv, &own);
    entry_free(own.entry);
    free(own.result_path);
    free(own.nonce.value);
    return rc;
}
