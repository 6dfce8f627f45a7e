/*
 * freeze.h - freezing the workload for a pause (README "Orchestrator
 * routes": POST /freeze), and thawing exactly what was frozen.
 *
 * Two sweeps, as envd's modes:
 *   legacy     every group the agent made for its processes (the
 *              directories below its cgroup_base);
 *   hierarchy  that, and every group of the hierarchy that is not the
 *              agent's own group or one of its ancestors: the children of
 *              each group on the chain from the hierarchy's root down to
 *              the agent's own, each frozen whole (a frozen group freezes
 *              what is below it), at most max_visit looked at.
 * A group frozen before the sweep (v2 cgroup.freeze 1, v1
 * freezer.self_freezing 1: the guest's own freeze) is not written and
 * stays frozen at the thaw. The hierarchy is the one of the agent's groups
 * when it can freeze (cgroup v2 with cgroup.freeze, v1 freezer), else v2,
 * else the v1 freezer, as /proc/self/cgroup and mountinfo show them.
 *
 * Where no group can be frozen (cgroups off, v1 without the freezer, v2
 * without cgroup.freeze), the sweep stops every descendant of the agent
 * with SIGSTOP instead, walking /proc until a pass finds none new; the thaw
 * sends SIGCONT to each of them still the same process (pid and start
 * time). A process already stopped is left as it was.
 *
 * Each call is reads and writes of local pseudo-files, never a wait: the
 * caller polls freeze_poll. The agent's own group is never written, so the
 * agent answers while everything else is frozen.
 */
#ifndef SA_CORE_FREEZE_H
#define SA_CORE_FREEZE_H

#include "agent/core/cgroup.h"

#include <stddef.h>
#include <sys/types.h>

/* A hierarchy sweep looks at this many groups when asked for none, and at
 * most FREEZE_VISIT_MAX whatever it is asked. */
#define FREEZE_VISIT_DEFAULT 512
#define FREEZE_VISIT_MAX 8192

enum freeze_mode { FREEZE_LEGACY = 0, FREEZE_HIERARCHY };

/* What one sweep saw (FreezeResult's counts). */
struct freeze_stats {
    int visited, allowlisted, truncated, prefrozen;
    int requested, frozen, not_frozen, failed, unobservable;
    int lost;      /* frozen by the agent, then gone (a group removed, a process ended) */
    int signalled; /* 1: SIGSTOP, the counts are processes, not groups */
};

/* What the agent froze and has not thawed: groups, or stopped processes. */
struct freeze_set {
    enum cgroup_kind kind; /* of the groups: CGROUP_V2 or CGROUP_V1_FREEZER */
    char **path;
    size_t n, cap;
    pid_t *pid;
    unsigned long long *start;
    size_t np, pcap;
};

/* "legacy" / "hierarchy" (NULL or "" legacy). Returns 0, or -1. */
int freeze_mode_parse(const char *s, enum freeze_mode *m);
const char *freeze_mode_name(enum freeze_mode m);

/* The chain of groups from a hierarchy's root (mnt) down to self (a
 * directory below mnt, or mnt itself): writes the directories, root
 * first, into chain (each CGROUP_PATH_MAX bytes) and returns how many, or
 * -1 when self is not below mnt or the chain is longer than max. Pure. */
int freeze_chain(const char *mnt, const char *self, char (*chain)[CGROUP_PATH_MAX], int max);

/* Freeze as mode says; base is the agent's groups (kind CGROUP_NONE when
 * it has none), max_visit the hierarchy's bound (<= 0: the default).
 * What was written joins set; st gets the counts (frozen and not_frozen
 * are freeze_poll's). Returns 0, or -1 when memory ran short. */
int freeze_sweep(struct freeze_set *set, const struct cgroup_base *base, enum freeze_mode mode,
                 int max_visit, struct freeze_stats *st);
/* Count the set's members frozen now into st (frozen, not_frozen, lost,
 * unobservable). Returns 1 when none is left to wait for. */
int freeze_poll(const struct freeze_set *set, struct freeze_stats *st);
/* Thaw every group of the set and SIGCONT every process, then empty it.
 * Returns how many could not be thawed. */
int freeze_thaw(struct freeze_set *set);
/* 1 when the set holds anything. */
int freeze_held(const struct freeze_set *set);
void freeze_set_free(struct freeze_set *set);

#endif
