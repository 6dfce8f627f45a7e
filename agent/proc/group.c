/*
 * group.c - signalling and stopping all a process started (see group.h).
 *
 * A signal goes to the process group first, as before, then to the other
 * members, those of every group a root member made below the process's own
 * included (agent/core/cgtree.h): with a cgroup, SIGKILL through
 * cgroup.kill (all at once, forks and groups below included) or, without
 * it, by passes over the members of the subtree until none is left (v1
 * freezer groups thawed first: a frozen member holds a SIGKILL); any other
 * signal with the cgroup frozen (the groups below with it: no member can
 * fork while the lists are read and signalled; thawed right after), or in
 * one pass over the lists where the kind cannot freeze. Without a cgroup,
 * to the leader's descendants (tree.c), walked before the group is
 * signalled so that a leader dying of it cannot take its children's links
 * with it.
 *
 * Nothing here waits: a freeze that is not complete at once is looked at
 * again every FREEZE_TICK, for FREEZE_WAIT at most (a member in an
 * uninterruptible sleep; then it is signalled anyway); KILL passes every
 * KILL_TICK for KILL_WAIT; removal of a cgroup and the groups below it
 * with members left is tried again after REMOVE_FIRST, the interval
 * doubling up to REMOVE_MAX. Each pass or removal is one walk of the
 * subtree, within cgtree.h's bounds (4096 groups, 0.25 s).
 */
#include "agent/proc/proc_priv.h"
#include "agent/core/cgtree.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/pause.h"
#include "agent/core/oom.h"
#include "agent/core/stop.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FREEZE_TICK 0.002
#define FREEZE_WAIT 0.5
#define KILL_TICK 0.01
#define KILL_WAIT 2.0
#define REMOVE_FIRST 0.05
#define REMOVE_MAX 30.0

static struct ev_loop *loop_of(const struct proc_group *g) { return g->t->loop; }

/* Something is left to do: a stop under way, a freeze, KILL passes, a cgroup. */
static int busy(const struct proc_group *g)
{
    return g->armed || ev_is_active(&g->freeze_w) || ev_is_active(&g->kill_w) || g->cg;
}

static void group_free(struct proc_group *g)
{
    struct ev_loop *loop = loop_of(g);
    ev_timer_stop(loop, &g->grace_w);
    ev_timer_stop(loop, &g->freeze_w);
    ev_timer_stop(loop, &g->kill_w);
    ev_timer_stop(loop, &g->remove_w);
    if (g->prev) g->prev->next = g->next;
    else g->t->groups = g->next;
    if (g->next) g->next->prev = g->prev;
    proc_tree_free(&g->tree);
    free(g->cg);
    free(g);
}

/* A detached group with nothing left to do goes. Returns 1 when it went. */
static int settle(struct proc_group *g)
{
    if (g->attached || busy(g)) return 0;
    group_free(g);
    return 1;
}

/* A walk of the cgroup was cut at its bound: say so, once per group. */
static void tell_cut(struct proc_group *g, const struct cgtree *t, const char *what)
{
    char why[ERR_LEN];
    if (!t->cut || g->cut_told) return;
    g->cut_told = 1;
    log_warn("process %d: its cgroup %s: %s; %s", (int)g->pid, g->cg, cgtree_why(t, why, sizeof why), what);
}

/* Remove the cgroup, and every group a member made below it, if they are
 * empty. Returns 1 when it is gone (or none); else why in *t (may be NULL). */
static int try_remove(struct proc_group *g, struct cgtree *t)
{
    struct cgtree own = {0};
    if (!t) t = &own;
    memset(t, 0, sizeof *t);
    if (!g->cg) return 1;
    if (cgtree_walk(g->cg, CGTREE_REMOVE, NULL, t) < 0) {
        tell_cut(g, t, "each walk removes what it reaches");
        return 0;
    }
    log_debug("process %d: cgroup %s removed", (int)g->pid, g->cg);
    free(g->cg);
    g->cg = NULL;
    /* Empty and gone: nothing is left to freeze, signal or kill in it. */
    ev_timer_stop(loop_of(g), &g->remove_w);
    ev_timer_stop(loop_of(g), &g->freeze_w);
    ev_timer_stop(loop_of(g), &g->kill_w);
    g->nsig = 0;
    return 1;
}

/* Every member gone: no KILL is needed any more. */
static int all_gone(struct proc_group *g)
{
    if (g->leader_alive || !stop_group_gone(g->pid)) return 0;
    return g->cg ? try_remove(g, NULL) : proc_tree_gone(&g->tree);
}

/* ---- cgroup members ---- */

/* sig to every member of the cgroup and of the groups below it (a root
 * member may make some) outside the leader's group (which had it already
 * while the leader lives); for SIGKILL on a v1 freezer every group thawed
 * first (one a member froze would hold it). Returns how many were listed,
 * 1 at least when the walk was cut short at its bound (more may be left). */
static size_t members_signal(struct proc_group *g, const int *sigs, int n)
{
    struct pid_list l = {NULL, 0, 0};
    struct cgtree t = {0};
    int thaw = 0;
    if (!g->cg) return 0;
    for (int k = 0; k < n; k++) thaw |= sigs[k] == SIGKILL && g->t->cg.kind == CGROUP_V1_FREEZER;
    cgtree_walk(g->cg, CGTREE_MEMBERS | (thaw ? CGTREE_THAW : 0), &l, &t);
    tell_cut(g, &t, "members of the groups past it are not signalled");
    for (size_t i = 0; i < l.n; i++) {
        if (g->leader_alive && (l.pid[i] == g->pid || getpgid(l.pid[i]) == g->pid)) continue;
        for (int k = 0; k < n; k++) kill(l.pid[i], sigs[k]);
    }
    size_t listed = l.n ? l.n : t.cut != 0;
    descendants_list_free(&l);
    return listed;
}

/* The freeze is complete (or waited for long enough): signal, thaw. */
static void freeze_deliver(struct proc_group *g)
{
    ev_timer_stop(loop_of(g), &g->freeze_w);
    members_signal(g, g->sigq, g->nsig);
    g->nsig = 0;
    if (cgroup_freeze(&g->t->cg, g->cg, 0) < 0)
        log_warn("process %d: cannot thaw its cgroup %s: %s", (int)g->pid, g->cg, strerror(errno));
}

static void on_freeze_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct proc_group *g = w->data;
    int frozen = cgroup_frozen(&g->t->cg, g->cg);
    if (frozen == 0 && pause_now() - g->since < FREEZE_WAIT) return;
    if (frozen != 1) log_debug("process %d: its cgroup did not freeze; signalling anyway", (int)g->pid);
    freeze_deliver(g);
    settle(g);
}

/* Queue sig for the members and freeze, unless a freeze is under way. */
static void freeze_signal(struct proc_group *g, int sig)
{
    for (int i = 0; i < g->nsig; i++)
        if (g->sigq[i] == sig) return;
    if (g->nsig == PROC_GROUP_QUEUE) { /* cannot happen with the stop's two: best effort */
        members_signal(g, &sig, 1);
        return;
    }
    g->sigq[g->nsig++] = sig;
    if (ev_is_active(&g->freeze_w)) return;
    if (cgroup_freeze(&g->t->cg, g->cg, 1) < 0) {
        freeze_deliver(g);
        return;
    }
    if (cgroup_frozen(&g->t->cg, g->cg) == 1) {
        freeze_deliver(g);
        return;
    }
    g->since = pause_now();
    ev_timer_again(loop_of(g), &g->freeze_w);
}

static void on_kill_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct proc_group *g = w->data;
    struct cgtree t;
    char why[ERR_LEN];
    int sig = SIGKILL;
    size_t left = members_signal(g, &sig, 1);
    if (left && pause_now() - g->since < KILL_WAIT) return;
    ev_timer_stop(loop, w);
    if (!try_remove(g, &t)) /* tried again later (remove_w) */
        log_warn("process %d: its cgroup %s is left after %.3g s of SIGKILL: %s", (int)g->pid, g->cg, KILL_WAIT,
                 cgtree_why(&t, why, sizeof why));
    settle(g);
}

static void members_kill(struct proc_group *g)
{
    int sig = SIGKILL;
    /* A v1 freezer holds a frozen member's SIGKILL until the thaw. */
    if (ev_is_active(&g->freeze_w)) freeze_deliver(g);
    if (cgroup_kill(&g->t->cg, g->cg) == 0) return;
    if (!members_signal(g, &sig, 1) || ev_is_active(&g->kill_w)) return;
    g->since = pause_now();
    ev_timer_again(loop_of(g), &g->kill_w);
}

/* ---- every member ---- */

static void others(struct proc_group *g, int sig)
{
    if (!g->cg) proc_tree_signal(&g->tree, g->leader_alive ? g->pid : 0, sig);
    else if (sig == SIGKILL) members_kill(g);
    else if (g->t->cg.has_freeze) freeze_signal(g, sig);
    else members_signal(g, &sig, 1);
}

void proc_group_signal(struct proc_group *g, int sig)
{
    if (sig == SIGKILL) g->sent_kill = 1;
    if (!g->cg && g->leader_alive) proc_tree_walk(&g->tree, g->pid);
    if (g->leader_alive) stop_send(g->pid, sig, 1);
    others(g, sig);
}

static void on_grace(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct proc_group *g = w->data;
    g->armed = 0;
    g->killed = g->sent_kill = 1;
    /* A group that outlived its leader keeps its id while it has members. */
    if (g->leader_alive || !stop_group_gone(g->pid)) {
        if (!g->cg && g->leader_alive) proc_tree_walk(&g->tree, g->pid);
        stop_kill(g->pid);
    }
    others(g, SIGKILL);
    settle(g);
}

void proc_group_stop(struct proc_group *g, int sig, double grace)
{
    proc_group_signal(g, sig);
    if (g->leader_alive) stop_send(g->pid, SIGCONT, 1); /* a stopped group cannot act on sig */
    others(g, SIGCONT);
    if (g->armed || g->killed) return;
    g->armed = 1;
    ev_timer_set(&g->grace_w, grace, 0.);
    ev_timer_start(loop_of(g), &g->grace_w);
}

/* ---- life ---- */

static void on_remove_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct proc_group *g = w->data;
    if (!try_remove(g, NULL)) {
        w->repeat = w->repeat * 2 > REMOVE_MAX ? REMOVE_MAX : w->repeat * 2;
        ev_timer_again(loop, w);
        return;
    }
    if (g->armed && all_gone(g)) {
        ev_timer_stop(loop, &g->grace_w);
        g->armed = 0;
    }
    settle(g);
}

/* The v2 group whose memory cgroup counts its OOM kills; NULL: the agent's. */
static const char *oom_dir(const struct proc_group *g)
{
    return g->cg && g->t->cg.kind == CGROUP_V2 ? g->cg : NULL;
}

struct proc_group *proc_group_new(struct proc_table *t, int *procs_fd)
{
    char err[ERR_LEN], path[CGROUP_PATH_MAX], name[32];
    struct proc_group *g = calloc(1, sizeof *g);
    *procs_fd = -1;
    if (!g) return NULL;
    g->t = t;
    g->attached = 1;
    ev_timer_init(&g->grace_w, on_grace, 0., 0.);
    ev_timer_init(&g->freeze_w, on_freeze_tick, 0., FREEZE_TICK);
    ev_timer_init(&g->kill_w, on_kill_tick, 0., KILL_TICK);
    ev_timer_init(&g->remove_w, on_remove_tick, 0., REMOVE_FIRST);
    g->grace_w.data = g->freeze_w.data = g->kill_w.data = g->remove_w.data = g;
    g->next = t->groups;
    if (t->groups) t->groups->prev = g;
    t->groups = g;
    if (t->cg.kind == CGROUP_NONE || t->cg_lost) {
        g->oom_before = oom_kills(NULL);
        return g;
    }
    snprintf(name, sizeof name, "p%u", ++t->cg_seq);
    if ((*procs_fd = cgroup_make(&t->cg, name, path, sizeof path, err)) < 0 || !(g->cg = strdup(path))) {
        log_warn("proc: %s; this process's descendants are found through /proc", *procs_fd < 0 ? err : "out of memory");
        if (*procs_fd >= 0) {
            close(*procs_fd);
            *procs_fd = -1;
            rmdir(path); /* just made: empty */
        }
    }
    g->oom_before = oom_kills(oom_dir(g));
    return g;
}

void proc_group_started(struct proc_group *g, pid_t pid, int cgroup_errno)
{
    g->pid = pid;
    g->leader_alive = 1;
    if (!cgroup_errno || !g->cg) return;
    log_warn("proc: process %d cannot join its cgroup %s: %s; no more cgroups: descendants are found "
             "through /proc", (int)pid, g->cg, strerror(cgroup_errno));
    /* Told late (the child's report comes after its start, core/spawn.h): what
     * a stop began on the cgroup meanwhile is finished without it. */
    if (ev_is_active(&g->freeze_w)) freeze_deliver(g);
    int killing = ev_is_active(&g->kill_w);
    ev_timer_stop(loop_of(g), &g->kill_w);
    rmdir(g->cg); /* its child could not join: empty */
    free(g->cg);
    g->cg = NULL;
    g->t->cg_lost = 1;
    if (killing && g->leader_alive) {
        proc_tree_walk(&g->tree, g->pid);
        others(g, SIGKILL);
    }
}

void proc_group_leader_exited(struct proc_group *g)
{
    g->leader_alive = 0;
    g->oom_after = oom_kills(oom_dir(g)); /* before the cgroup goes */
    if (g->armed && all_gone(g)) {
        ev_timer_stop(loop_of(g), &g->grace_w);
        g->armed = 0;
    }
    if (!try_remove(g, NULL) && !ev_is_active(&g->remove_w)) {
        g->remove_w.repeat = REMOVE_FIRST;
        ev_timer_again(loop_of(g), &g->remove_w);
    }
}

void proc_group_release(struct proc_group *g)
{
    if (!g) return;
    g->attached = 0;
    if (g->pid <= 0) try_remove(g, NULL); /* never started: it is empty */
    settle(g);
}

const char *proc_group_cgroup(const struct proc_group *g) { return g ? g->cg : NULL; }

int proc_group_oom_killed(const struct proc_group *g, int wstatus)
{
    return g && oom_killed(wstatus, g->sent_kill, g->oom_before, g->oom_after);
}

void proc_group_shutdown_all(struct proc_table *t, double grace)
{
    for (struct proc_group *g = t->groups; g; g = g->next)
        if (g->leader_alive || g->cg) proc_group_stop(g, SIGTERM, grace);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* KILL what is left in every cgroup and remove them; the loop is not run
 * (it may be over): the dead leave a cgroup before they are reaped. */
static void remove_all(struct proc_table *t)
{
    double deadline = mono_now() + PROC_GROUP_FREE_WAIT;
    for (;;) {
        int left = 0, sig = SIGKILL;
        struct cgtree w, first = {0};
        const char *first_cg = NULL;
        for (struct proc_group *g = t->groups; g; g = g->next) {
            if (!g->cg || try_remove(g, &w)) continue;
            if (!left++) {
                first = w;
                first_cg = g->cg;
            }
            if (ev_is_active(&g->freeze_w)) freeze_deliver(g);
            if (cgroup_kill(&t->cg, g->cg) < 0) members_signal(g, &sig, 1);
        }
        if (!left) return;
        if (mono_now() >= deadline) {
            char why[ERR_LEN];
            log_warn("proc: %d cgroups left behind after %.3g s of SIGKILL (%s: %s)", left, PROC_GROUP_FREE_WAIT,
                     first_cg, cgtree_why(&first, why, sizeof why));
            return;
        }
        struct timespec tick = {0, 5000000};
        nanosleep(&tick, NULL);
    }
}

void proc_group_free_all(struct proc_table *t)
{
    remove_all(t);
    while (t->groups) group_free(t->groups);
}
