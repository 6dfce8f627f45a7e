/*
 * group.h - inside the process table (agent/proc only): what one process
 * started, as one thing to signal and stop (README "sandbox-agent serve":
 * what a process started goes with it). That is its process group, plus
 * its cgroup where the table has cgroups (agent/core/cgroup.h), else the
 * descendants of its leader as /proc shows them (tree.c).
 *
 * group.c owns the signals (the group's as before, then every other
 * member: frozen while signalled, without fork races, where the kind can
 * freeze), the stop (TERM and SIGCONT, KILL after the grace), the KILL
 * passes until a cgroup without cgroup.kill is empty, and the cgroup's
 * removal once empty, with the groups a root member made below it
 * (tried at the leader's exit, then again with a backoff
 * while members are left: a `server &` runs on), and the OOM-kill count
 * read before the spawn and at the leader's exit, before the removal. A group outlives its
 * record while something is left to do, and everything ends with the table.
 */
#ifndef SA_PROC_GROUP_H
#define SA_PROC_GROUP_H

#include <ev.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_table;

/* The descendants seen below a leader, each by pid and start time (so a
 * pid reused meanwhile is never signalled). */
struct proc_tree {
    pid_t *pid;
    unsigned long long *start;
    size_t n, cap;
};

/* Signals waiting for a freeze to complete. */
#define PROC_GROUP_QUEUE 8

struct proc_group {
    struct proc_group *prev, *next; /* the table's groups */
    struct proc_table *t;
    pid_t pid;                  /* the leader, and so the process group's id */
    int leader_alive;           /* not reaped yet: its pid is still its own */
    int attached;               /* its record holds it */
    char *cg;                   /* its cgroup directory; NULL: none (the tree instead) */
    int armed, killed;          /* the stop: grace timer running; KILL sent */
    ev_timer grace_w;
    ev_timer freeze_w;          /* a freeze under way */
    ev_timer kill_w;            /* KILL passes until the cgroup is empty */
    ev_timer remove_w;          /* removal retries while members are left */
    ev_tstamp since;            /* the freeze's or the KILL passes' start */
    int sigq[PROC_GROUP_QUEUE];
    int nsig;
    struct proc_tree tree;
    int sent_kill;              /* the agent sent it SIGKILL (SendSignal, the stop) */
    int cut_told;               /* a walk of its cgroup was cut short: logged once */
    long long oom_before, oom_after; /* OOM kills counted before the spawn and at the leader's exit */
};

/* tree.c */
/* Add the leader's descendants as /proc shows them now (the leader's own
 * children first: before it is signalled, while they are still its). */
void proc_tree_walk(struct proc_tree *tr, pid_t leader);
/* sig to every process seen that is still the same process and alive,
 * except the members of process group skip (0: none), who had it already.
 * Returns how many were signalled. */
size_t proc_tree_signal(struct proc_tree *tr, pid_t skip, int sig);
/* 1 when none of those seen is alive any more. */
int proc_tree_gone(struct proc_tree *tr);
void proc_tree_free(struct proc_tree *tr);

/* group.c */
/* A group for a process about to be started, on the table's list; with a
 * cgroup made for it when the table has cgroups (*procs_fd is then the fd
 * its child writes to join, else -1). NULL when out of memory. */
struct proc_group *proc_group_new(struct proc_table *t, int *procs_fd);
/* The leader is pid (spawned); cgroup_errno as spawn_opts tells it: a
 * failed join gives up cgroups for this and later processes (logged). */
void proc_group_started(struct proc_group *g, pid_t pid, int cgroup_errno);
/* sig to the process group (as stop_send does) and to every other member. */
void proc_group_signal(struct proc_group *g, int sig);
/* Stop all of it: sig and SIGCONT now, SIGKILL after grace unless the clock
 * already runs (a second stop sends again and keeps the first deadline). */
void proc_group_stop(struct proc_group *g, int sig, double grace);
/* The leader was reaped: its background children run on; the cgroup goes
 * once empty. */
void proc_group_leader_exited(struct proc_group *g);
/* The record is dropped: the group goes now, or once nothing is left to do. */
void proc_group_release(struct proc_group *g);
/* 1 when the kernel's OOM killer ended the leader (its wait status
 * wstatus; agent/core/oom.h): SIGKILL the agent did not send, and the
 * count of its memory cgroup rose while it lived. 0 for a NULL g. */
int proc_group_oom_killed(const struct proc_group *g, int wstatus);
/* The cgroup directory, NULL when none (for a later "the cgroup it ran in"). */
const char *proc_group_cgroup(const struct proc_group *g);

/* The table shuts down: stop every group that has anything left, TERM now,
 * KILL after grace. */
void proc_group_shutdown_all(struct proc_table *t, double grace);
/* The table goes: what is left in a cgroup is killed, and every cgroup is
 * removed, waiting (outside the loop) at most PROC_GROUP_FREE_WAIT seconds for
 * the killed to be gone. */
void proc_group_free_all(struct proc_table *t);
#define PROC_GROUP_FREE_WAIT 2.0

#endif
