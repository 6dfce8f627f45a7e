/*
 * oom.h - the kernel's OOM killer and the agent (README "Why a process
 * died" and "The agent and the OOM killer"): telling a process it killed
 * from one killed otherwise, and keeping the agent itself out of its way.
 *
 * A death is the OOM killer's when the process died of SIGKILL the agent
 * did not send and the OOM-kill count of the memory cgroup it ran in rose
 * while it lived: v2's memory.events oom_kill (of its own v2 group or the
 * nearest ancestor with one: counted up the tree), v1's memory.oom_control
 * oom_kill, and /proc/vmstat's oom_kill where no memory cgroup is visible
 * (agent/core/memcg.h). The callers read the count at the start and at the
 * leader's exit (run, exec, serve's process table).
 *
 * oom_protect sets the agent's /proc/self/oom_score_adj to -1000 where it
 * may (CAP_SYS_RESOURCE), logged once where it may not; every child
 * spawn_start makes writes back the agent's start value (0 for a start
 * value of -1000, oom_child_adj) before its exec, before it drops
 * privileges, so the workload can never claim -1000 later. The agent's own helper processes
 * (forks that run its code) keep -1000.
 */
#ifndef SA_CORE_OOM_H
#define SA_CORE_OOM_H

#include <stddef.h>

/* Counts above this are taken for garbage. */
#define OOM_KILLS_MAX (1ll << 62)

/* The OOM kills counted so far for the memory cgroup of v2dir (a v2 group
 * below the agent's: serve's per-process groups; NULL: the agent's own),
 * or -1 when it cannot be read. A few small reads, no allocation. */
long long oom_kills(const char *v2dir);

/* 1 when a death with wait status wstatus was the OOM killer's: SIGKILL,
 * not sent by the agent (sent_kill 0), and the count went from before to
 * a higher after (both known, >= 0). Pure. */
int oom_killed(int wstatus, int sent_kill, long long before, long long after);

/* -1000 for the agent where it may (once; later calls do nothing). Before
 * anything is spawned. */
void oom_protect(void);

/* The file a process's score is in (its own: /proc/self). */
#define OOM_SCORE_ADJ "/proc/self/oom_score_adj"

/* What a child writes to OOM_SCORE_ADJ before its exec: the value the
 * agent started with (static text, *len bytes), or NULL when the agent is
 * not protected (the child inherits that value). Only a child the kernel
 * does not count as sharing the agent's memory may write it (a vfork
 * child, spawn.c's wait mode): the kernel sets every other process of a
 * shared mm, the agent too, to the same score. */
const char *oom_child_adj(size_t *len);

/* 1 when oom_protect lowered the agent's score (oom_child_adj is not NULL). */
int oom_protected(void);

#endif
