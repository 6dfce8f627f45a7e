/*
 * pid1.c - init duties: the first step, subreaper, the supervisors' tuning
 * variables (see pid1.h). Which signals are caught, and why, is sig.c's.
 *
 * As PID 1 catching matters twice over: the kernel drops any signal PID 1 has
 * no handler for, which is why `docker stop` on a bare bash runner waits out
 * its full timeout and ends in SIGKILL.
 */
#include "agent/core/pid1.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/nonce.h"
#include "agent/core/num.h"
#include "agent/core/oom.h"
#include "agent/core/protocol.h"
#include "agent/core/stop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int pid1_is_init(void) { return getpid() == 1; }

int pid1_begin(struct nonce *n)
{
    const char *err = NULL;
    if (nonce_take(n, &err) < 0 || log_init(&err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return 0;
}

int pid1_command_line(int argc, char **argv, const char *mode, char ***cmd, int *help, char *err)
{
    int i = 1;
    *cmd = NULL;
    *help = 0;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            if (++i >= argc) {
                err_set(err, "%s: no command after --", mode);
                return -1;
            }
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = 1;
            return 0;
        }
        if (argv[i][0] == '-') {
            err_set(err, "%s: unknown option '%.100s' (see %s --help)", mode, argv[i], mode);
            return -1;
        }
        break; /* the first word of the command */
    }
    if (i < argc) *cmd = argv + i;
    return 0;
}

int pid1_config_read(struct pid1_config *cfg, char *err)
{
    const char *t = getenv(ENV_SIGNAL_TARGET);
    const char *g = getenv(ENV_GRACE);
    const char *rw = getenv(ENV_SIGNAL_REWRITE);
    char why[ERR_LEN];
    cfg->to_group = 1;
    cfg->grace = DEFAULT_GRACE_SECONDS;
    if (t && *t) {
        if (!strcmp(t, "child")) cfg->to_group = 0;
        else if (strcmp(t, "group") != 0) {
            err_set(err, ENV_SIGNAL_TARGET " must be 'group' or 'child', not '%.40s'", t);
            return -1;
        }
    }
    if (g && *g && num_seconds(g, NUM_MAX_SECONDS, &cfg->grace) < 0) {
        err_set(err, ENV_GRACE " must be a number of seconds from 0 to %.0f, not '%.40s'",
                NUM_MAX_SECONDS, g);
        return -1;
    }
    rewrite_init(&cfg->rewrite);
    if (rw && *rw && rewrite_parse(&cfg->rewrite, rw, why) < 0) {
        err_set(err, ENV_SIGNAL_REWRITE " must be FROM:TO,... signal pairs: %s", why);
        return -1;
    }
    return 0;
}

int pid1_forward(const struct pid1_config *cfg, pid_t pid, int sig)
{
    int out = rewrite_apply(&cfg->rewrite, sig);
    if (!out) {
        log_debug("signal %d dropped (" ENV_SIGNAL_REWRITE ")", sig);
        return 0;
    }
    stop_send(pid, out, cfg->to_group);
    return out;
}

void pid1_subreaper(void)
{
    /* A subreaper inherits the orphans of its descendants, as PID 1 does, so
     * "every zombie is reaped" holds when the agent runs under docker --init,
     * a shell or a test harness too. */
    if (!pid1_is_init() && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        log_warn("cannot become a child subreaper: %s; orphans go to our parent", strerror(errno));
}

int pid1_init(struct ev_loop *loop, sig_fn fn, void *ctx, char *err)
{
    pid1_subreaper();
    oom_protect();
    return sig_catch(loop, NULL, fn, ctx, err);
}

void pid1_stop(struct ev_loop *loop) { sig_release(loop); }
