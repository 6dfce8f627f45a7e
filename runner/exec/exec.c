/*
 * exec.c - `sandbox-agent exec [OPTIONS] -- CMD...`: run one command with a
 * deadline and bounded output, then print one `__SBX_EXEC__{json}` line
 * (README, "`sandbox-agent exec`").
 *
 * Owns the order of the steps only: parse the command line (cli.h), start
 * the command (cmd.h), supervise it until it is done, report the result
 * line. Background processes the command starts are left running, as a shell
 * leaves them.
 *
 * Exit status: 0 whenever the result line was printed (the command's own
 * status is in it), 2 for a usage error, 1 when no result could be made.
 */
#include "runner/exec/exec.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/oom.h"
#include "agent/core/pid1.h"
#include "agent/core/sig.h"
#include "agent/core/spawn.h"
#include "runner/exec/cli.h"
#include "runner/exec/cmd.h"

#include <signal.h>
#include <string.h>

struct exec_run {
    struct ev_loop *loop;
    char **sh; /* --shell's argv, owned */
    struct exec_cmd cmd;
};

static void on_signal(struct ev_loop *loop, int sig, void *ctx)
{
    (void)loop;
    exec_cmd_signal(ctx, sig);
}

/* Step 2: the loop, the signals, the command. Returns 0, or -1 (logged). */
static int exec_start(struct exec_run *r, struct exec_opts *o)
{
    char err[ERR_LEN];
    exec_cmd_init(&r->cmd, &o->spec);
    if (o->shell && !(o->spec.argv = r->sh = exec_cli_shell_argv(o->spec.argv))) {
        log_error("exec: out of memory");
        return -1;
    }
    if (!(r->loop = reaper_loop(err))) {
        log_error("exec: %s", err);
        return -1;
    }
    /* The command's orphans become ours, and the reaper reaps them: a
     * zombie left in its group after a timeout (whose reaper, PID 1, may
     * never reap) cannot hold the call until --kill-after. */
    pid1_subreaper();
    oom_protect(); /* a command that exhausts memory must not take the result with it */
    /* Before the spawn: a stop signal that arrives the moment the command
     * runs must be passed on, not kill us with the default action. */
    if (sig_catch(r->loop, (int[]){SIGTERM, SIGINT, SIGHUP, 0}, on_signal, &r->cmd, err) < 0 ||
        exec_cmd_start(r->loop, &r->cmd, &o->spec, err) < 0) {
        log_error("exec: %s", err);
        return -1;
    }
    return 0;
}

/* Step 3: until the command is done (cmd.h says when). Returns 0, or -1. */
static int exec_supervise(struct exec_run *r)
{
    ev_run(r->loop, 0);
    if (r->cmd.exited) return 0;
    /* Cannot happen (the child watcher keeps the loop running); be safe. */
    log_error("exec: event loop ended before the command");
    return -1;
}

/* Step 4: the result line. Returns exec's exit status. */
static int exec_finish(struct exec_run *r)
{
    if (r->cmd.out.oom || r->cmd.err.oom) log_warn("exec: out of memory keeping output; some was dropped");
    return exec_cli_report(&r->cmd);
}

static void exec_cleanup(struct exec_run *r)
{
    if (r->loop) {
        exec_cmd_free(r->loop, &r->cmd);
        sig_release(r->loop);
    }
    exec_cli_shell_free(r->sh);
}

int exec_main(int argc, char **argv)
{
    struct exec_opts o;
    int rc = exec_cli_parse(argc, argv, &o); /* step 1 */
    if (rc != EXEC_GO) return rc;
    static struct exec_run r;
    memset(&r, 0, sizeof r);
    if (exec_start(&r, &o) < 0 || exec_supervise(&r) < 0) rc = 1;
    else rc = exec_finish(&r);
    exec_cleanup(&r);
    return rc;
}
