/*
 * spawn.h - starting a child the way every mode needs it (vfork/exec with
 * reliable exec errors); its exit status comes through the one reaper
 * (reaper.h). serve's Start does not wait for the exec: agent/proc/clone.h.
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
                         * thing in the child, so it and all it forks are members (cgroup.h) */
    int *cgroup_errno;  /* NULL, or set to 0, or to the errno of a join that failed (the
                         * child then goes on outside the group) */
};

/*
 * Start a child and wait until it has exec'd (clone(CLONE_VM | CLONE_VFORK):
 * the agent's page tables are not copied; see spawn.c). Returns the pid
 * (> 0) when the child started, whether or not
 * exec succeeded: *exec_errno is 0 when it did, else the errno of execvp, and
 * the child has then exited with 127 (ENOENT) or 126 (anything else), as a
 * shell would. A failed chdir, setgroups/setgid/setuid or TIOCSCTTY is
 * reported the same way (its errno, exit 126 or 127). Returns -1 with a
 * message in err (ERR_LEN bytes) and errno set (EAGAIN: no process slot
 * free) when no child could be made.
 */
pid_t spawn_child(const struct spawn_opts *o, int *exec_errno, char *err);

/* fork() for a helper that runs our own code (no exec): the child starts
 * with default signal dispositions and an empty mask (a spawn_child child
 * gets the agent's start-up signal state instead: sig_child_restore).
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

/* A stack for a child that shares the caller's memory until its exec:
 * size bytes above a guard page (SPAWN_GUARD, no access); the mapping's
 * base (size + SPAWN_GUARD bytes long), or NULL with errno. */
#define SPAWN_GUARD 4096u
char *spawn_stack_map(size_t size);

#endif
