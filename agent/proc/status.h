/*
 * status.h - how the end of a process is told (README "serve": processes),
 * the way envd tells it, which is Go's os/exec: "exit status N", or for a
 * death by signal exit code -1 and "signal: killed" (Go's signal names,
 * " (core dumped)" appended when it did); `error` is the same text whenever
 * the process did not exit 0, and for a command that could not be started,
 * exit code 127 or 126 and the command (or the working directory) and the
 * reason. A death by the
 * kernel's OOM killer says so in `error` (README "Why a process died").
 *
 * Owns only the texts (no I/O): unit-tested in tests/unit/test_proc_status.c.
 */
#ifndef SA_PROC_STATUS_H
#define SA_PROC_STATUS_H

#include "agent/core/err.h"

struct proc_end {
    int exited;              /* 1: it exited (exit_code is its status); 0: a signal ended it */
    int exit_code;           /* -1 for a signal death */
    char status[64];         /* "exit status 3", "signal: terminated" */
    char error[ERR_LEN];     /* "" when it exited 0 */
    int oom_killed;          /* the kernel's OOM killer ended it (proc_status_oom) */
};

/* From a wait status. */
void proc_status_from_wait(int wstatus, struct proc_end *e);
/* For a command that could not be started: exec_errno from its report
 * (core/spawn.h); cmd NULL when the step that failed was entering its
 * working directory (as the user it runs as). */
void proc_status_from_exec_error(const char *cmd, int exec_errno, struct proc_end *e);
/* The kernel's OOM killer ended it (agent/core/oom.h): oom_killed set, and
 * error "signal: killed (out of memory)"; status stays Go's text. */
void proc_status_oom(struct proc_end *e);
/* Go's name of a signal ("killed"), or NULL when it has none. */
const char *proc_status_signal_name(int sig);

#endif
