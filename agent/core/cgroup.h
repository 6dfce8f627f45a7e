/*
 * cgroup.h - control groups for what a process starts (README "sandbox-agent
 * serve": what a process started goes with it): finding a hierarchy the
 * agent may make groups in, making a group per process under the agent's
 * own, joining it between fork and exec (spawn.h), freezing, thawing and
 * killing its members (listing them and removing it, with every group a
 * member made below it: cgtree.h); the agent's own directory of groups,
 * and reclaiming those of earlier agents that were killed.
 *
 * Owns the paths and the pseudo-file I/O only: each call is a few reads or
 * writes of local kernel files, never a wait. When to look again and what a
 * signal means is the caller's (agent/proc/group.c). The parsers of
 * /proc/self/cgroup and /proc/self/mountinfo are pure (no I/O), unit-tested
 * in tests/unit/test_cgroup.c.
 *
 * Kinds, in the order they are tried: cgroup v2 (the unified hierarchy,
 * where the agent may write its own group: delegated to the container, or
 * root on the host; cgroup.kill since Linux 5.14, cgroup.freeze since 5.2),
 * then a writable v1 freezer hierarchy, then a writable v1 pids hierarchy
 * (neither freeze nor kill: members are signalled one by one).
 */
#ifndef SA_CORE_CGROUP_H
#define SA_CORE_CGROUP_H

#include <stddef.h>

#define CGROUP_PATH_MAX 512

enum cgroup_kind { CGROUP_NONE = 0, CGROUP_V2, CGROUP_V1_FREEZER, CGROUP_V1_PIDS };
/* What SANDBOX_AGENT_CGROUPS asks for: unset, "" or "1" any kind, "0"
 * none, "v2" or "v1" only that one. */
enum cgroup_want { CGROUP_WANT_OFF = 0, CGROUP_WANT_AUTO, CGROUP_WANT_V2, CGROUP_WANT_V1 };

/* Parse a SANDBOX_AGENT_CGROUPS value (NULL: unset). Returns 0, or -1. */
int cgroup_want_parse(const char *v, enum cgroup_want *w);
/* "v2", "v1 freezer", "v1 pids" or "none". */
const char *cgroup_kind_name(enum cgroup_kind k);

/* The agent's directory for its processes' groups: made under its own
 * group by cgroup_base_open, removed by cgroup_base_close. Its name is
 * SA_NAME-PID-START (the agent's pid and start time, clock ticks since
 * boot: no other process has both while it runs, and no name is ever
 * used up), ".N" after it should another agent's in another PID namespace
 * have the same. The agent holds an exclusive flock(2) on it while it runs;
 * the kernel drops it when the agent dies, however it dies. */
struct cgroup_base {
    enum cgroup_kind kind;
    int has_kill;       /* v2's cgroup.kill */
    int has_freeze;     /* v2's cgroup.freeze or v1's freezer.state */
    int fd;             /* dir, open and locked; -1: none */
    char dir[CGROUP_PATH_MAX];
};

/* ---- pure parsers ---- */

/* The group path of the hierarchy that controller names (NULL: the v2
 * line, "0::PATH") in the text of /proc/self/cgroup. Returns 0, or -1 when
 * there is none or it does not fit in cap bytes. */
int cgroup_parse_self(const char *text, size_t len, const char *controller, char *path, size_t cap);
/* The first mount of that hierarchy (controller NULL: a cgroup2 mount; else
 * a cgroup mount whose options list controller) in the text of
 * /proc/self/mountinfo: its root within the hierarchy and its mount point,
 * octal escapes (\040) decoded. Returns 0, or -1. */
int cgroup_parse_mount(const char *text, size_t len, const char *controller, char *root, char *mnt,
                       size_t cap);
/* The directory of group path under a mount of root at mnt: mnt followed
 * by what path has below root. Returns 0, or -1 when path is not below root
 * (the mount cannot reach it) or the result does not fit. */
int cgroup_dir_of(const char *mnt, const char *root, const char *path, char *out, size_t cap);

/* ---- the agent's groups ---- */

/* The directory of the agent's own group of the hierarchy that controller
 * names (NULL: cgroup v2) into dir, and that hierarchy's mount point into
 * mnt (may be NULL), both CGROUP_PATH_MAX bytes, as /proc/self/cgroup and
 * /proc/self/mountinfo show them now. Returns 0; 1 when that group is the
 * hierarchy's root ("/" in /proc/self/cgroup: the host's, unless a cgroup
 * namespace starts there), whose figures are the machine's; or -1 with
 * why. A container's v1 mount shows its own group at the mount point: dir
 * is then mnt, and the return 0. */
int cgroup_self_dir(const char *controller, char *dir, char *mnt, char *why);

/* Find a hierarchy as w allows and make b->dir, a new directory named
 * after the agent under its own group, locked. First the directories that
 * earlier agents left there are reclaimed: those named as an agent's
 * (either scheme), that no one holds locked, whose maker is not running
 * (an agent before this scheme, which held no lock: its pid is no process
 * here, and not ours), lose their empty groups bottom-up, themselves too
 * when empty; within one walk's bounds (cgtree.h) for all of them.
 * Returns 0, or -1 with err saying why none may be used (b->kind is then
 * CGROUP_NONE). */
int cgroup_base_open(struct cgroup_base *b, enum cgroup_want w, char *err);
/* Remove b->dir and whatever is left below it (logged when some stays),
 * then unlock it; b->kind becomes CGROUP_NONE. */
void cgroup_base_close(struct cgroup_base *b);

/* Make the group b->dir/name into path (cap bytes) and open its
 * cgroup.procs for writing (close-on-exec): the fd a child writes "0" to
 * join it (spawn_opts.cgroup_fd). Returns the fd, or -1 with err. */
int cgroup_make(const struct cgroup_base *b, const char *name, char *path, size_t cap, char *err);
/* A group's members and its removal: those of the whole subtree, for a
 * root workload may make groups inside its own (cgtree.h). */
/* SIGKILL every member at once, those of the groups below included (v2's
 * cgroup.kill). Returns 0, or -1 when the kind has no such file: kill the
 * members one by one. */
int cgroup_kill(const struct cgroup_base *b, const char *path);
/* Freeze (on 1) or thaw (on 0), the groups below included (both kinds'
 * freezers are hierarchical). Returns 0, or -1. */
int cgroup_freeze(const struct cgroup_base *b, const char *path, int on);
/* 1 once every member is frozen (below too), 0 while freezing, -1 when it
 * cannot tell. */
int cgroup_frozen(const struct cgroup_base *b, const char *path);

#endif
