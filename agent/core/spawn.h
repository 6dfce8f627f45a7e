/*
 * spawn.h - the one way every mode starts a child: a clone that shares the
 * agent's memory until its exec, with its exec error (and its cgroup
 * join's) reported reliably; its exit status comes through the one reaper
 * (reaper.h). Two modes of the same child (spawn.c): waiting until it has
 * exec'd (run, exec, session) or not (serve's Start).
 */
#ifndef SA_CORE_SPAWN_H
#define SA_CORE_SPAWN_H

#include "agent/core/reaper.h"

#include <ev.h>
#include <stddef.h>
#include <sys/types.h>

/* Callers use designated initialisers: every field left out is 0 (off), but
 * the fd fields mean "inherit" only at -1, so name those. */
struct spawn_opts {
    char *const *argv;  /* argv[0] is searched in PATH as execvp does */
    int new_pgrp;       /* child leads a new process group */
    int tty_fd;         /* >= 0: give this terminal's foreground to the child's group */
    int stdin_fd;       /* >= 0: becomes the child's fd 0; -1 inherits */
    int stdout_fd;      /* >= 0: becomes the child's fd 1; -1 inherits */
    int stderr_fd;      /* >= 0: becomes the child's fd 2; -1 inherits */
    const char *cwd;    /* NULL: the agent's */
    char *const *envp;  /* NULL: the agent's environment (PATH search uses the agent's either way) */
    int new_session;    /* child leads a new session (and so a new group; new_pgrp is then moot) */
    int ctty;           /* with new_session: the child's fd 0, a terminal, becomes its controlling one */
    int set_ids;        /* switch to uid/gid/groups before exec (needs privilege) */
    uid_t uid;
    gid_t gid;
    const gid_t *groups; /* supplementary groups, ngroups of them */
    size_t ngroups;
    int cgroup_fd;      /* > 0 (never a standard fd): a group's cgroup.procs, written "0" first
                         * thing in the child, so it and all it forks are members (cgroup.h);
                         * a join that fails is reported and lived with */
};

/* How long spawn_start keeps the caller. */
enum spawn_mode {
    SPAWN_WAIT,   /* until the child has exec'd or exited: the report is complete at once */
    SPAWN_NOWAIT, /* not at all: the report comes later (x86-64, and only while the agent's
                   * OOM score is not protected, oom.h; elsewhere SPAWN_WAIT is used) */
};

/* What the child tells before its exec (or its exit), until it is read. */
struct spawn_report;

/*
 * Start the child of o (nothing of o is needed once this returns). Returns
 * its pid (> 0) when the child started, whether or not its exec will
 * succeed, *r the handle of its report; or -1 with a message in err
 * (ERR_LEN bytes) and errno set (EAGAIN: no process slot or stack free)
 * when no child could be made. The child runs, in this order: the cgroup
 * join, its session or group, the terminal's foreground, the signal state
 * the agent was started with (sig.h) and its OOM score (oom.h), fds 0-2,
 * the controlling terminal, groups/gid/uid, cwd, execvp. A failure of a
 * step after the join is reported as its errno, and the child exits 127
 * (ENOENT, ENOTDIR) or 126 (anything else), as a shell would.
 */
pid_t spawn_start(const struct spawn_opts *o, enum spawn_mode mode, struct spawn_report **r, char *err);
/* The report's fd to watch for reading; -1 once the report is complete. */
int spawn_report_fd(const struct spawn_report *r);
/* What a complete report says. */
struct spawn_result {
    int exec_errno;   /* 0: it exec'd; else the errno of the step that failed */
    int cwd_failed;   /* 1: that step was the chdir into cwd (after the id switch) */
    int cgroup_errno; /* 0: joined, or no cgroup; else the join's errno (it ran on outside) */
};
/* Read what the report holds. Returns 1 once it is complete (the child is
 * past its exec or has exited; always so after its exit), with *res set;
 * 0 when the child is not there yet. */
int spawn_report_poll(struct spawn_report *r, struct spawn_result *res);
/* Drop the handle (a child not yet past its exec keeps what it reads). */
void spawn_report_free(struct spawn_report *r);

/* spawn_start(o, SPAWN_WAIT) with its report read: *exec_errno 0 when the
 * exec succeeded, else its errno (or chdir's, setuid's, ...). Returns as
 * spawn_start does. For callers without a cgroup (its join is not told). */
pid_t spawn_child(const struct spawn_opts *o, int *exec_errno, char *err);

/* fork() for a helper that runs our own code (no exec): the child starts
 * with default signal dispositions and an empty mask (a spawn_start child
 * gets the agent's start-up signal state instead: sig_initial).
 * Returns as fork() does. */
pid_t spawn_fork(int new_pgrp);

/* The exit code a shell reports for an exec error. */
int spawn_exec_exit_code(int exec_errno);
/* Why an exec failed, as every mode says it: "command not found" for a
 * missing command, else strerror's text. */
const char *spawn_exec_reason(int exec_errno);

/* What execve takes of argv and envp for a child of this process, the
 * kernel's bound (fs/exec.c, bprm_stack_limits): a quarter of the stack's
 * soft limit (RLIMIT_STACK), at most three quarters of the kernel's 8 MiB
 * _STK_LIM (6 MiB: an unlimited stack too), at least ARG_MAX (128 KiB);
 * each string counted with its NUL and its pointer (SPAWN_ARG_COST). A
 * child inherits the limit it is measured by. Past it exec fails with
 * E2BIG, as past SPAWN_ARG_STRLEN in one string. */
size_t spawn_arg_max(void);
#define SPAWN_ARG_COST(len) ((size_t)(len) + 1 + sizeof(char *))
/* One argument or "NAME=VALUE" with its NUL, at most (MAX_ARG_STRLEN: 32
 * pages; 4 KiB pages, the smallest Linux has, give 128 KiB). */
#define SPAWN_ARG_STRLEN (32u * 4096u)

/* Exit code of a wait status: the status, or 128+N for death by signal N. */
int spawn_exit_code(int status);

#endif
