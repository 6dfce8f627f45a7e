/*
 * clone.h - starting a Start's child without waiting for its exec: the
 * agent's loop goes on at once, and the child's report (the errno of a
 * failed exec, chdir, setuid...; of a failed cgroup join) is read from a
 * pipe once the child is past its exec (or dead). See clone.c for how, and
 * why spawn_child (agent/core/spawn.h), which waits, is not used here.
 */
#ifndef SA_PROC_CLONE_H
#define SA_PROC_CLONE_H

#include "agent/core/spawn.h"

#include <sys/types.h>

struct proc_clone;

/* Start the child of o (spawn_opts, as spawn_child takes them; nothing of
 * o is needed afterwards). Returns its pid, *k the handle of its report;
 * or -1 with err (ERR_LEN) and errno when no child could be made. */
pid_t proc_clone_start(const struct spawn_opts *o, struct proc_clone **k, char *err);
/* The report's fd to watch for reading; -1 once the report is complete. */
int proc_clone_fd(const struct proc_clone *k);
/* Read what the report holds. Returns 1 once it is complete (the child is
 * past its exec or has exited; always so after its exit), with *exec_errno
 * (0: exec'd) and *cgroup_errno (0: joined, or no cgroup) set; 0 when the
 * child is not there yet. */
int proc_clone_poll(struct proc_clone *k, int *exec_errno, int *cgroup_errno);
/* Drop the handle (a child not yet past its exec keeps what it reads). */
void proc_clone_free(struct proc_clone *k);

#endif
