/*
 * pgroup.h - inside the process table (agent/proc only): what one process
 * started, as one thing to signal and stop (README "sandbox-agent serve":
 * what a process started goes with it). That is its process group, plus
 * its cgroup where the table has cgroups (agent/core/cgroup.h), else the
 * descendants of its leader as /proc shows them (ptree.c).
 *
 * pgroup.c owns the signals (the group's as before, then every other
 * member: frozen while signalled, without fork races, where the kind can
 * freeze), the stop (TERM and SIGCONT, KILL after the grace), the KILL
 * passes until a cgroup without cgroup.kill is empty, and the cgroup's
 * removal once empty (tried at the leader's exit, then again with a backoff
 * while members are left: a `server &` runs on). A group outlives its
 * record while something is left to do, and everything ends with the table.
 */
#ifndef SA_PROC_PGROUP_H
#define SA_PROC_PGROUP_H

#include <ev.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_table;

/* The descendants seen below a leader, each by pid and start time (so a
 * pid reused meanwhile is never signalled). */
struct ptree {
    pid_t *pid;
    unsigned long long *start;
    size_t n, cap;
};

/* Signals waiting for a freeze to complete. */
#define PGROUP_QUEUE 8

struct pgroup {
    struct pgroup *prev, *next; /* the table's groups */
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
    int sigq[PGROUP_QUEUE];
    int nsig;
    struct ptree tree;
};

/* ptree.c */
/* Add the leader's descendants as /proc shows them now (the leader's own
 * children first: before it is signalled, while they are still its). */
void ptree_walk(struct ptree *tr, pid_t leader);
/* sig to every process seen that is still the same process and alive,
 * except the members of process group skip (0: none), who had it already.
 * Returns how many were signalled. */
size_t ptree_signal(struct ptree *tr, pid_t skip, int sig);
/* 1 when none of those seen is alive any more. */
int ptree_gone(struct ptree *tr);
void ptree_free(struct ptree *tr);

/* pgroup.c */
/* A group for a process about to be started, on the table's list; with a
 * cgroup made for it when the table has cgroups (*procs_fd is then the fd
 * its child writes to join, else -1). NULL when out of memory. */
struct pgroup *pgroup_new(struct proc_table *t, int *procs_fd);
/* The leader is pid (spawned); cgroup_errno as spawn_opts tells it: a
 * failed join gives up cgroups for this and later processes (logged). */
void pgroup_started(struct pgroup *g, pid_t pid, int cgroup_errno);
/* sig to the process group (as stop_send does) and to every other member. */
void pgroup_signal(struct pgroup *g, int sig);
/* Stop all of it: sig and SIGCONT now, SIGKILL after grace unless the clock
 * already runs (a second stop sends again and keeps the first deadline). */
void pgroup_stop(struct pgroup *g, int sig, double grace);
/* The leader was reaped: its background children run on; the cgroup goes
 * once empty. */
void pgroup_leader_exited(struct pgroup *g);
/* The record is dropped: the group goes now, or once nothing is left to do. */
void pgroup_release(struct pgroup *g);
/* The cgroup directory, NULL when none (for a later "the cgroup it ran in"). */
const char *pgroup_cgroup(const struct pgroup *g);

/* The table shuts down: stop every group that has anything left, TERM now,
 * KILL after grace. */
void pgroup_shutdown_all(struct proc_table *t, double grace);
/* The table goes: what is left in a cgroup is killed, and every cgroup is
 * removed, waiting (outside the loop) at most PGROUP_FREE_WAIT seconds for
 * the killed to be gone. */
void pgroup_free_all(struct proc_table *t);
#define PGROUP_FREE_WAIT 2.0

#endif
