/*
 * jobctl.h - the job and the controlling terminal: job control through the
 * agent (README "PID 1 duties", Terminal and Job control).
 *
 * Owns the terminal's foreground as the agent hands it around, and the
 * agent's own stop: a job stopped from the terminal (Ctrl-Z) or by a
 * SIGTSTP/SIGTTIN/SIGTTOU sent to the agent stops the agent too, so the shell
 * it runs under gets its prompt back; SIGCONT (`fg`) gives the job the
 * foreground again. Forwarding the signals themselves is run.c's.
 */
#ifndef SA_RUNNER_RUN_JOBCTL_H
#define SA_RUNNER_RUN_JOBCTL_H

#include <sys/types.h>

struct jobctl {
    int tty;        /* the terminal whose foreground the job got, or -1 */
    pid_t job;      /* the job's process group */
    int stopped;    /* the agent stopped itself; the next SIGCONT resumes the job */
};

/* Before the job starts: the terminal to hand it (stdin, when it is a
 * terminal whose foreground is our group), or -1. */
int jobctl_init(struct jobctl *jc);

/* 1 when the agent has no controlling terminal at all (the usual container,
 * `docker run` without -t): the job then leads a session of its own, as
 * under dumb-init, since no terminal's job control needs it in ours. The
 * scheduler then gives the job an autogroup of its own
 * (sched_autogroup_enabled): the agent's and the job's CPU time are shared
 * fairly as two sessions, and a forwarded signal wakes the job sooner.
 * 0 with a terminal, or when that cannot be told (nothing changes then). */
int jobctl_no_terminal(void);

/* The job's process group, once it started. */
void jobctl_started(struct jobctl *jc, pid_t job);

/* The job stopped (a traced reaper status): stop the agent too, when the
 * job had the terminal and the agent is not PID 1. */
void jobctl_job_stopped(struct jobctl *jc);

/* SIGTSTP, SIGTTIN or SIGTTOU came to the agent and was forwarded: stop the
 * agent itself, unless PID 1 (as dumb-init does). */
void jobctl_signal_stop(struct jobctl *jc);

/* SIGCONT came, before it is forwarded: after the agent's own stop, give
 * the job the foreground again if `fg` gave it to the agent's group. */
void jobctl_continued(struct jobctl *jc);

/* Output flow back on, on whichever of stdout and stderr is a terminal:
 * tcflow(TCOOFF) by the job would make every write of the agent block. */
void jobctl_flow_on(void);

/* The job is over, before the report: the foreground back to the agent's
 * group (when the job's group still has it) and the output flow on. */
void jobctl_reclaim(struct jobctl *jc);

#endif
