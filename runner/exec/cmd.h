/*
 * cmd.h - the lifetime of exec's one command (README, "`sandbox-agent
 * exec`"): it is started leading its own process group, with its stdout and
 * stderr on pipes (stream.h); a timeout sends the group SIGTERM and SIGCONT,
 * then SIGKILL after kill-after (agent/core/stop.h); a stop signal sent to
 * the agent is passed on to the group. The call ends when the command exits,
 * except after a timeout, when it also waits for the rest of the group until
 * the SIGKILL has gone out.
 *
 * Owns the command's pid, its exit status and times, its two streams and the
 * timers. Reaping goes through agent/core/spawn.h; nothing here calls wait*().
 */
#ifndef SA_RUNNER_EXEC_CMD_H
#define SA_RUNNER_EXEC_CMD_H

#include "agent/core/spawn.h"
#include "agent/core/stop.h"
#include "runner/exec/stream.h"

#include <ev.h>
#include <time.h>

struct exec_spec {
    char **argv;        /* argv[0] is searched in PATH */
    const char *cwd;    /* NULL: the agent's */
    double timeout;     /* seconds; 0: none */
    double kill_after;  /* seconds from the timeout's SIGTERM to SIGKILL */
    size_t max_output;  /* bytes kept per stream */
};

struct exec_cmd {
    pid_t pid;
    int exited, status; /* status: as waitpid reports it */
    int timed_out;
    long long oom_before, oom_after; /* OOM kills counted at the start and the exit (agent/core/oom.h) */
    double kill_after;
    struct timespec start, end;
    struct exec_stream out, err;
    ev_timer timeout, poll;
    struct stop stop;
    struct reaper_watch rw;
};

/* Ready to start (nothing open yet): exec_cmd_free is safe from here on. */
void exec_cmd_init(struct exec_cmd *c, const struct exec_spec *spec);
/* Start the command. Returns 0 once it runs, or ran and could not exec (the
 * reason is then in its stderr, as a shell would put it), or -1 with err when
 * no child could be made. The loop ends once the command is done. */
int exec_cmd_start(struct ev_loop *loop, struct exec_cmd *c, const struct exec_spec *spec, char *err);
/* Pass a signal the agent caught on to the command's group. */
void exec_cmd_signal(struct exec_cmd *c, int sig);
/* 1 when the kernel's OOM killer ended the command (oom.h). */
int exec_cmd_oom_killed(const struct exec_cmd *c);
/* Milliseconds from the start to the exit, >= 0. */
long long exec_cmd_duration_ms(const struct exec_cmd *c);
/* Stop the timers, close the pipes, free the rings. */
void exec_cmd_free(struct ev_loop *loop, struct exec_cmd *c);

#endif
