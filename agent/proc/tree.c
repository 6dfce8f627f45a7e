/*
 * tree.c - a leader's descendants through /proc, for a table without
 * cgroups (see group.h; README "sandbox-agent serve": what a process
 * started goes with it).
 *
 * Each walk reads the children files of the leader and of every process
 * below it (descendants.h) and remembers each one by pid and start time,
 * so that one whose parent died since (reparented to the agent) is still
 * reached by the next signal, and a pid the kernel gave to another process
 * meanwhile is not. What a walk cannot see is a process whose parent had
 * already exited before the first walk: it belongs to the agent, nothing
 * links it to its origin any more.
 */
#include "agent/proc/group.h"
#include "agent/core/descendants.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

/* Processes remembered per leader (a fork bomb cannot grow it further). */
#define PROC_TREE_MAX 4096

static int seen(const struct proc_tree *tr, pid_t pid, unsigned long long start)
{
    for (size_t i = 0; i < tr->n; i++)
        if (tr->pid[i] == pid && tr->start[i] == start) return 1;
    return 0;
}

static void remember(struct proc_tree *tr, pid_t pid)
{
    char state;
    unsigned long long start;
    if (tr->n >= PROC_TREE_MAX || descendants_stat(pid, &state, &start) < 0 || seen(tr, pid, start)) return;
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? tr->cap * 2 : 16;
        pid_t *np = realloc(tr->pid, cap * sizeof *np);
        if (np) tr->pid = np;
        unsigned long long *ns = np ? realloc(tr->start, cap * sizeof *ns) : NULL;
        if (!ns) return;
        tr->start = ns;
        tr->cap = cap;
    }
    tr->pid[tr->n] = pid;
    tr->start[tr->n++] = start;
}

void proc_tree_walk(struct proc_tree *tr, pid_t leader)
{
    struct pid_list l = {NULL, 0, 0};
    descendants_children(leader, &l);
    for (size_t i = 0; i < l.n && i < PROC_TREE_MAX; i++) {
        descendants_children(l.pid[i], &l);
        remember(tr, l.pid[i]);
    }
    descendants_list_free(&l);
}

/* 1 when entry i is still the process seen, and not a zombie. */
static int same_alive(const struct proc_tree *tr, size_t i)
{
    char state;
    unsigned long long start;
    return descendants_stat(tr->pid[i], &state, &start) == 0 && start == tr->start[i] && state != 'Z';
}

size_t proc_tree_signal(struct proc_tree *tr, pid_t skip, int sig)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->n; i++) {
        if (!same_alive(tr, i) || (skip > 0 && getpgid(tr->pid[i]) == skip)) continue;
        kill(tr->pid[i], sig);
        n++;
    }
    return n;
}

int proc_tree_gone(struct proc_tree *tr)
{
    for (size_t i = 0; i < tr->n; i++)
        if (same_alive(tr, i)) return 0;
    return 1;
}

void proc_tree_free(struct proc_tree *tr)
{
    free(tr->pid);
    free(tr->start);
    tr->pid = NULL;
    tr->start = NULL;
    tr->n = tr->cap = 0;
}
