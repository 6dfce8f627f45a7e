/*
 * cgtree.h - a cgroup and every group below it, as one (README "sandbox-agent
 * serve": what a process started goes with it): a root workload may make
 * groups inside its own and move processes into them, so a signal goes to
 * the members of the whole subtree, and a group is removed bottom-up.
 *
 * Owns one walk, depth first, that lists the members of every group it
 * visits and/or removes each group once the groups below it are done. It is
 * bounded by the number of groups it visits and by time, never by depth: it
 * holds two directory fds whatever the depth and builds no path (a tree
 * deeper than PATH_MAX is walked as any other), and it enters nothing but
 * directories of the top's own mount (no symlink, no mount point: a bind
 * mount of another group is not entered). A walk cut at a bound says so;
 * what it did so far stands, so the next walk goes on from fewer groups.
 * Each call is reads, opens and rmdirs of local kernel files, never a wait:
 * the caller decides when to walk again (agent/proc/group.c).
 */
#ifndef SA_CORE_CGTREE_H
#define SA_CORE_CGTREE_H

#include "agent/core/descendants.h"

#include <stddef.h>

/* The bounds of one walk unless the caller sets its own: groups visited
 * below the top, and seconds. Measured on a loaded 2-core VM (Linux 6.18):
 * listing the members of 4096 groups takes 150 to 300 ms, removing them
 * 270 to 520 ms (an rmdir of a cgroup is the kernel's slowest step), so a
 * walk of a tree that large is cut by time, and the next goes on. */
#define CGTREE_MAX 4096
#define CGTREE_SECONDS 0.25

/* What a walk does (flags of cgtree_walk). */
#define CGTREE_MEMBERS 1 /* append every visited group's members to a pid list */
#define CGTREE_REMOVE 2  /* rmdir every group, the deepest first, the top last */
#define CGTREE_THAW 4    /* write THAWED to every group's v1 freezer.state (a root
                          * member may freeze a group below: its members would
                          * hold a SIGKILL until thawed) */

/* Which bound cut a walk short: the groups, the time, the names kept. */
enum { CGTREE_CUT_COUNT = 1, CGTREE_CUT_TIME, CGTREE_CUT_NAMES };

/* One walk: its bounds (0: the defaults) in, what it saw out. */
struct cgtree {
    size_t max;      /* in: groups to visit below the top */
    double seconds;  /* in: time to take */
    size_t groups;   /* groups visited below the top */
    size_t removed;  /* groups removed, the top included */
    size_t busy;     /* groups not removed: members, or groups left below */
    int cut;         /* it stopped at a bound before the end: CGTREE_CUT_* */
    int err;         /* an errno that stopped it (the top unreadable, memory) */
    double took;     /* seconds it took */
};

/* Walk the group at path and every group below it as flags ask: members
 * appended to l (CGTREE_MEMBERS; l may be NULL otherwise), groups removed
 * (CGTREE_REMOVE). A top that does not exist is an empty walk. Returns 0
 * when the walk was whole (and, with CGTREE_REMOVE, the top is gone), else
 * -1 with w saying why (cgtree_why). */
int cgtree_walk(const char *path, int flags, struct pid_list *l, struct cgtree *w);

/* Why a walk that returned -1 fell short, as one line for a log: members
 * left, a bound reached, an error. */
const char *cgtree_why(const struct cgtree *w, char *out, size_t cap);

#endif
