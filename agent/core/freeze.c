/*
 * freeze.c - the freeze sweeps, their poll and the thaw (see freeze.h).
 */
#include "agent/core/freeze.h"
#include "agent/core/descendants.h"
#include "agent/core/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The deepest chain from a hierarchy's root to the agent's group. */
#define CHAIN_MAX 32
/* /proc passes of the SIGSTOP sweep: each finds what forked during the
 * one before; a pass that finds nothing new ends it. */
#define STOP_PASSES 16

int freeze_mode_parse(const char *s, enum freeze_mode *m)
{
    if (!s || !*s || !strcmp(s, "legacy")) *m = FREEZE_LEGACY;
    else if (!strcmp(s, "hierarchy")) *m = FREEZE_HIERARCHY;
    else return -1;
    return 0;
}

const char *freeze_mode_name(enum freeze_mode m) { return m == FREEZE_HIERARCHY ? "hierarchy" : "legacy"; }

int freeze_chain(const char *mnt, const char *self, char (*chain)[CGROUP_PATH_MAX], int max)
{
    size_t ml = strlen(mnt), sl = strlen(self);
    while (ml > 1 && mnt[ml - 1] == '/') ml--;
    if (sl >= CGROUP_PATH_MAX || strncmp(self, mnt, ml) != 0 || (self[ml] && self[ml] != '/') || max < 1)
        return -1;
    int n = 0;
    memcpy(chain[n], self, ml);
    chain[n++][ml] = '\0';
    for (size_t i = ml + 1; i <= sl; i++) {
        if (i < sl && self[i] != '/') continue;
        if (self[i - 1] == '/') continue; /* "//" or a trailing '/' */
        if (n >= max) return -1;
        memcpy(chain[n], self, i);
        chain[n++][i] = '\0';
    }
    return n;
}

/* ---- one group ---- */

static int read_small(const char *dir, const char *file, char *out, size_t cap)
{
    char path[CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do n = read(fd, out, cap - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0) return -1;
    out[n] = '\0';
    return 0;
}

/* 1 when the group itself asked to be frozen (not only through a parent). */
static int self_frozen(enum cgroup_kind k, const char *dir)
{
    char t[32];
    if (read_small(dir, k == CGROUP_V2 ? "cgroup.freeze" : "freezer.self_freezing", t, sizeof t) < 0) return 0;
    return t[0] == '1';
}

static struct cgroup_base as_base(enum cgroup_kind k)
{
    struct cgroup_base b = {.kind = k, .has_freeze = 1, .fd = -1};
    return b;
}

/* ---- the set ---- */

static int set_has(const struct freeze_set *set, const char *dir)
{
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->path[i], dir)) return 1;
    return 0;
}

static int set_add(struct freeze_set *set, const char *dir)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        char **p = realloc(set->path, cap * sizeof *p);
        if (!p) return -1;
        set->path = p;
        set->cap = cap;
    }
    if (!(set->path[set->n] = strdup(dir))) return -1;
    set->n++;
    return 0;
}

/* Freeze dir unless the guest froze it (counted as pre-frozen). */
static int freeze_one(struct freeze_set *set, const char *dir, struct freeze_stats *st)
{
    struct cgroup_base b = as_base(set->kind);
    int ours = set_has(set, dir);
    if (!ours && self_frozen(set->kind, dir)) {
        st->prefrozen++;
        return 0;
    }
    if (cgroup_freeze(&b, dir, 1) < 0) {
        st->failed++;
        return 0;
    }
    st->requested++;
    return ours ? 0 : set_add(set, dir);
}

/* The subdirectories of dir, each to fn. Returns -1 when memory ran short
 * (fn's), 1 when the bound stopped it, else 0. */
static int each_child(const char *dir, int (*fn)(const char *sub, void *ctx), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d) return 0; /* gone meanwhile */
    char sub[CGROUP_PATH_MAX];
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        int n = snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < sizeof sub) rc = fn(sub, ctx);
    }
    closedir(d);
    return rc;
}

struct sweep {
    struct freeze_set *set;
    struct freeze_stats *st;
    char (*chain)[CGROUP_PATH_MAX];
    int nchain, max_visit;
    const char *base; /* the agent's groups' directory: the legacy sweep's */
};

static int legacy_child(const char *sub, void *ctx)
{
    struct sweep *w = ctx;
    return freeze_one(w->set, sub, w->st);
}

static int hierarchy_child(const char *sub, void *ctx)
{
    struct sweep *w = ctx;
    if (w->st->visited >= w->max_visit) {
        w->st->truncated = 1;
        return 1;
    }
    w->st->visited++;
    for (int i = 0; i < w->nchain; i++)
        if (!strcmp(w->chain[i], sub)) return 0; /* the agent's own, or an ancestor */
    if (w->base && !strcmp(w->base, sub)) return 0; /* the legacy sweep's */
    return freeze_one(w->set, sub, w->st);
}

/* The hierarchy to freeze in: the agent's groups', else v2, else the v1
 * freezer, where the agent's own group is found and can freeze. */
static enum cgroup_kind pick(const struct cgroup_base *base, char *self, char *mnt)
{
    static const enum cgroup_kind order[] = {CGROUP_V2, CGROUP_V1_FREEZER};
    char why[ERR_LEN];
    if (base->kind == CGROUP_V2 && base->has_freeze && cgroup_self_dir(NULL, self, mnt, why) >= 0) return CGROUP_V2;
    if (base->kind == CGROUP_V1_FREEZER && cgroup_self_dir("freezer", self, mnt, why) >= 0)
        return CGROUP_V1_FREEZER;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        char probe[CGROUP_PATH_MAX + 32];
        if (cgroup_self_dir(order[i] == CGROUP_V2 ? NULL : "freezer", self, mnt, why) < 0) continue;
        if (order[i] == CGROUP_V1_FREEZER) return order[i];
        /* v2: cgroup.freeze is in every group but the root; the root's
         * children tell whether this kernel has it. */
        snprintf(probe, sizeof probe, "%s/cgroup.freeze", self);
        if (access(probe, F_OK) == 0 || strcmp(self, mnt) == 0) return CGROUP_V2;
    }
    return CGROUP_NONE;
}

static int sweep_hierarchy(struct freeze_set *set, const struct cgroup_base *base, int max_visit,
                           struct freeze_stats *st)
{
    char self[CGROUP_PATH_MAX], mnt[CGROUP_PATH_MAX];
    static char chain[CHAIN_MAX][CGROUP_PATH_MAX];
    enum cgroup_kind k = pick(base, self, mnt);
    if (k == CGROUP_NONE || (set->n && set->kind != k)) return 1;
    set->kind = k;
    struct sweep w = {.set = set, .st = st, .chain = chain, .max_visit = max_visit,
                      .base = base->kind == k ? base->dir : NULL};
    if ((w.nchain = freeze_chain(mnt, self, chain, CHAIN_MAX)) < 0) return 1;
    if (w.base && each_child(w.base, legacy_child, &w) < 0) return -1;
    for (int i = 0; i < w.nchain; i++) {
        int rc = each_child(chain[i], hierarchy_child, &w);
        if (rc < 0) return -1;
        if (rc > 0) break;
    }
    return 0;
}

/* ---- SIGSTOP, where no group can freeze ---- */

static int stopped_has(const struct freeze_set *set, pid_t pid)
{
    for (size_t i = 0; i < set->np; i++)
        if (set->pid[i] == pid) return 1;
    return 0;
}

static int stop_one(struct freeze_set *set, pid_t pid, struct freeze_stats *st)
{
    char state;
    unsigned long long start;
    if (pid == getpid() || stopped_has(set, pid) || descendants_stat(pid, &state, &start) < 0) return 0;
    if (state == 'T' || state == 't' || state == 'Z') {
        if (state != 'Z') st->prefrozen++;
        return 1; /* left as it is; its children are still walked */
    }
    if (set->np == set->pcap) {
        size_t cap = set->pcap ? set->pcap * 2 : 64;
        pid_t *p = realloc(set->pid, cap * sizeof *p);
        if (p) set->pid = p;
        unsigned long long *s = p ? realloc(set->start, cap * sizeof *s) : NULL;
        if (!s) return -1;
        set->start = s;
        set->pcap = cap;
    }
    if (kill(pid, SIGSTOP) < 0) {
        st->failed++;
        return 0;
    }
    set->pid[set->np] = pid;
    set->start[set->np++] = start;
    st->requested++;
    return 1;
}

/* Stop every descendant, walking /proc again until a pass finds none new. */
static int sweep_signals(struct freeze_set *set, struct freeze_stats *st)
{
    st->signalled = 1;
    for (int pass = 0; pass < STOP_PASSES; pass++) {
        struct pid_list l = {0};
        size_t before = set->np;
        int rc = 0;
        st->prefrozen = st->failed = 0; /* each pass counts them again */
        descendants_children(0, &l);
        for (size_t i = 0; i < l.n && rc >= 0; i++) { /* l grows: the walk goes down */
            if (stop_one(set, l.pid[i], st) < 0) rc = -1;
            else descendants_children(l.pid[i], &l);
        }
        descendants_list_free(&l);
        if (rc < 0) return -1;
        if (set->np == before) break;
    }
    return 0;
}

int freeze_sweep(struct freeze_set *set, const struct cgroup_base *base, enum freeze_mode mode, int max_visit,
                 struct freeze_stats *st)
{
    memset(st, 0, sizeof *st);
    if (max_visit <= 0) max_visit = FREEZE_VISIT_DEFAULT;
    if (max_visit > FREEZE_VISIT_MAX) max_visit = FREEZE_VISIT_MAX;
    if (set->np == 0) {
        if (mode == FREEZE_HIERARCHY) {
            int rc = sweep_hierarchy(set, base, max_visit, st);
            if (rc <= 0) return rc;
        } else if (base->kind != CGROUP_NONE && base->has_freeze && (!set->n || set->kind == base->kind)) {
            struct sweep w = {.set = set, .st = st};
            set->kind = base->kind;
            return each_child(base->dir, legacy_child, &w) < 0 ? -1 : 0;
        }
        if (set->n) return 0; /* groups frozen before: nothing to stop */
    }
    return sweep_signals(set, st);
}

int freeze_poll(const struct freeze_set *set, struct freeze_stats *st)
{
    struct cgroup_base b = as_base(set->kind);
    int frozen = 0, lost = 0, unobservable = 0;
    for (size_t i = 0; i < set->n; i++) {
        int f = cgroup_frozen(&b, set->path[i]);
        if (f == 1) frozen++;
        else if (f < 0 && errno == ENOENT && access(set->path[i], F_OK) == 0) unobservable++;
        else if (f < 0) lost++;
    }
    for (size_t i = 0; i < set->np; i++) {
        char state;
        unsigned long long start;
        if (descendants_stat(set->pid[i], &state, &start) < 0 || start != set->start[i]) lost++;
        else if (state == 'T' || state == 't') frozen++;
    }
    size_t all = set->n + set->np;
    st->frozen = frozen;
    st->unobservable = unobservable;
    st->not_frozen = (int)all - frozen - lost - unobservable;
    st->lost = lost;
    return st->not_frozen == 0;
}

int freeze_thaw(struct freeze_set *set)
{
    struct cgroup_base b = as_base(set->kind);
    int failed = 0;
    for (size_t i = set->n; i-- > 0;) {
        if (cgroup_freeze(&b, set->path[i], 0) < 0 && errno != ENOENT) failed++;
        free(set->path[i]);
    }
    set->n = 0;
    for (size_t i = 0; i < set->np; i++) {
        char state;
        unsigned long long start;
        if (descendants_stat(set->pid[i], &state, &start) == 0 && start == set->start[i] &&
            kill(set->pid[i], SIGCONT) < 0)
            failed++;
    }
    set->np = 0;
    return failed;
}

int freeze_held(const struct freeze_set *set) { return set->n > 0 || set->np > 0; }

void freeze_set_free(struct freeze_set *set)
{
    freeze_thaw(set);
    free(set->path);
    free(set->pid);
    free(set->start);
    memset(set, 0, sizeof *set);
}
