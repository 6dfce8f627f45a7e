/*
 * cgroup.c - finding a hierarchy, the agent's directory (named, locked,
 * and what earlier agents left reclaimed), making, freezing and killing
 * groups (see cgroup.h).
 */
#include "agent/core/cgroup.h"
#include "agent/core/buf.h"
#include "agent/core/cgtree.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* /proc/self/cgroup is a few lines; mountinfo of a busy host a few hundred. */
#define SELF_MAX (64u << 10)
#define MOUNTINFO_MAX (4u << 20)
/* Names tried for the agent's directory (only another agent's, running,
 * can hold one: see make_base). */
#define NAME_TRIES 1000
/* Entries of the agent's own group looked at for what earlier agents left
 * (the groups removed and the time are one walk's bounds for all of them). */
#define RECLAIM_SCAN 65536

int cgroup_want_parse(const char *v, enum cgroup_want *w)
{
    if (!v || !*v || !strcmp(v, "1")) *w = CGROUP_WANT_AUTO;
    else if (!strcmp(v, "0")) *w = CGROUP_WANT_OFF;
    else if (!strcmp(v, "v2")) *w = CGROUP_WANT_V2;
    else if (!strcmp(v, "v1")) *w = CGROUP_WANT_V1;
    else return -1;
    return 0;
}

const char *cgroup_kind_name(enum cgroup_kind k)
{
    return k == CGROUP_V2 ? "v2" : k == CGROUP_V1_FREEZER ? "v1 freezer" : k == CGROUP_V1_PIDS ? "v1 pids" : "none";
}

/* ---- parsers ---- */

/* The next line of [*p, end): its bounds, *p moved past it. 0 at the end. */
static int next_line(const char **p, const char *end, const char **s, const char **e)
{
    if (*p >= end) return 0;
    *s = *p;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    *e = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    return 1;
}

/* 1 when the comma-separated list [s, e) holds word. */
static int list_has(const char *s, const char *e, const char *word)
{
    size_t wl = strlen(word);
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *we = c ? c : e;
        if ((size_t)(we - s) == wl && !memcmp(s, word, wl)) return 1;
        s = we + 1;
    }
    return 0;
}

static int copy_out(const char *s, size_t n, char *out, size_t cap)
{
    if (n >= cap) return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

int cgroup_parse_self(const char *text, size_t len, const char *controller, char *path, size_t cap)
{
    const char *p = text, *end = text + len, *s, *e;
    while (next_line(&p, end, &s, &e)) {
        const char *c1 = memchr(s, ':', (size_t)(e - s));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
        if (!c2) continue;
        int v2 = c1 - s == 1 && s[0] == '0' && c2 == c1 + 1;
        if (controller ? !v2 && list_has(c1 + 1, c2, controller) : v2)
            return copy_out(c2 + 1, (size_t)(e - c2 - 1), path, cap);
    }
    return -1;
}

/* Copy the field [s, e) with mountinfo's octal escapes decoded. */
static int unescape(const char *s, const char *e, char *out, size_t cap)
{
    size_t n = 0;
    for (; s < e; n++) {
        if (n + 1 >= cap) return -1;
        if (*s == '\\' && e - s >= 4 && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            out[n] = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            out[n] = *s++;
        }
    }
    out[n] = '\0';
    return 0;
}

/* Split [s, e) at spaces into at most max fields. Returns the count. */
static int fields(const char *s, const char *e, const char **fs, const char **fe, int max)
{
    int n = 0;
    while (s < e && n < max) {
        while (s < e && *s == ' ') s++;
        if (s == e) break;
        fs[n] = s;
        while (s < e && *s != ' ') s++;
        fe[n++] = s;
    }
    return n;
}

static int field_is(const char *s, const char *e, const char *word)
{
    return (size_t)(e - s) == strlen(word) && !memcmp(s, word, (size_t)(e - s));
}

int cgroup_parse_mount(const char *text, size_t len, const char *controller, char *root, char *mnt,
                       size_t cap)
{
    const char *p = text, *end = text + len, *s, *e;
    while (next_line(&p, end, &s, &e)) {
        const char *fs[32], *fe[32];
        int n = fields(s, e, fs, fe, 32), dash = 6;
        while (dash < n && !field_is(fs[dash], fe[dash], "-")) dash++;
        if (dash + 3 >= n) continue; /* no fstype, source and options after the - */
        const char *type = fs[dash + 1], *type_e = fe[dash + 1];
        int ok = controller ? field_is(type, type_e, "cgroup") && list_has(fs[dash + 3], fe[dash + 3], controller)
                            : field_is(type, type_e, "cgroup2");
        if (ok && unescape(fs[3], fe[3], root, cap) == 0 && unescape(fs[4], fe[4], mnt, cap) == 0) return 0;
    }
    return -1;
}

int cgroup_dir_of(const char *mnt, const char *root, const char *path, char *out, size_t cap)
{
    size_t rl = strlen(root);
    if (!strcmp(root, "/")) rl = 0;
    else if (strncmp(path, root, rl) != 0 || (path[rl] != '\0' && path[rl] != '/')) return -1;
    const char *below = path + rl;
    if (!strcmp(below, "/")) below = "";
    int n = snprintf(out, cap, "%s%s", mnt, below);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- files ---- */

static int read_text(const char *path, struct buf *b, size_t max)
{
    char chunk[4096];
    buf_init(b, max);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || buf_append(b, chunk, (size_t)n) < 0) break;
    }
    close(fd);
    return 0;
}

static int write_text(const char *dir, const char *file, const char *text)
{
    char path[CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return io_write_text(path, text);
}

static int has_file(const char *dir, const char *file)
{
    char path[CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

/* ---- the agent's directory ---- */

/* The agent's own group of that hierarchy, as a directory (and the
 * hierarchy's mount point in mnt_out, when not NULL). Returns 0, 1 when the
 * group is the hierarchy's root, or -1 with why (cgroup_self_dir). */
static int own_dir(const struct buf *self, const struct buf *mi, const char *controller, char *dir,
                   char *mnt_out, char *why)
{
    char path[CGROUP_PATH_MAX], root[CGROUP_PATH_MAX], mnt[CGROUP_PATH_MAX];
    const char *name = controller ? controller : "cgroup v2";
    if (cgroup_parse_self(self->data ? self->data : "", self->len, controller, path, sizeof path) < 0) {
        err_set(why, "%s: the agent is in no such group", name);
        return -1;
    }
    if (cgroup_parse_mount(mi->data ? mi->data : "", mi->len, controller, root, mnt, sizeof root) < 0 ||
        cgroup_dir_of(mnt, root, path, dir, CGROUP_PATH_MAX - 64) < 0) {
        err_set(why, "%s: the agent's group %s is not mounted", name, path);
        return -1;
    }
    if (mnt_out) memcpy(mnt_out, mnt, CGROUP_PATH_MAX);
    return strcmp(path, "/") ? 0 : 1;
}

int cgroup_self_dir(const char *controller, char *dir, char *mnt, char *why)
{
    struct buf self, mi;
    int rc = -1;
    if (read_text("/proc/self/cgroup", &self, SELF_MAX) < 0 ||
        read_text("/proc/self/mountinfo", &mi, MOUNTINFO_MAX) < 0)
        err_set(why, "cannot read /proc/self: %s", strerror(errno));
    else
        rc = own_dir(&self, &mi, controller, dir, mnt, why);
    buf_free(&self);
    buf_free(&mi);
    return rc;
}

/* ---- the agent's directory: its name, its lock, what earlier agents left ---- */

/* The pid, and the start time (0: none), a name of an agent's directory
 * carries: SA_NAME-PID-START[.N] (this agent's scheme), or SA_NAME-PID[.N]
 * (agents before it). Returns 0, or -1 when name is no such name. */
static int parse_name(const char *name, long *pid, unsigned long long *start)
{
    const char *p = name + sizeof SA_NAME;
    char *e;
    if (strncmp(name, SA_NAME "-", sizeof SA_NAME) || *p < '1' || *p > '9') return -1;
    errno = 0;
    *pid = strtol(p, &e, 10);
    *start = 0;
    if (*e == '-' && e[1] >= '0' && e[1] <= '9') *start = strtoull(e + 1, &e, 10);
    if (*e == '.' && e[1] >= '1' && e[1] <= '9') strtoul(e + 1, &e, 10);
    return *e || errno ? -1 : 0;
}

/* 1 when the agent that made a directory named after pid and start may
 * still run: pid is a live process here, started then (any time, for a name
 * without the start: an agent before this one, which held no lock, in this
 * PID namespace or, with our own pid, in another's). */
static int maybe_running(long pid, unsigned long long start)
{
    char state;
    unsigned long long st;
    if (!start && pid == (long)getpid()) return 1;
    if (descendants_stat((pid_t)pid, &state, &st) < 0 || state == 'Z') return 0;
    return !start || st == start;
}

/* Open and lock dir/name. Returns the fd, or -1 when another process
 * holds the lock (a running agent, or one reclaiming it) or it is gone. */
static int lock_dir(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Remove the empty groups of the directories earlier agents left in dir
 * (theirs by name, unlocked, their maker gone), bottom-up, within one
 * walk's bounds for all of them; groups with members stay, and so do the
 * directories above them. */
static void reclaim(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[CGROUP_PATH_MAX + 256];
    double left = CGTREE_SECONDS;
    size_t seen = 0, groups = 0, removed = 0;
    for (struct dirent *e; left > 0 && groups < CGTREE_MAX && seen < RECLAIM_SCAN && (e = readdir(d)); seen++) {
        long pid;
        unsigned long long start;
        if (parse_name(e->d_name, &pid, &start) < 0) continue;
        int fd = lock_dir(dirfd(d), e->d_name);
        if (fd < 0) continue;
        if (!maybe_running(pid, start) && (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path) {
            struct cgtree w = {.max = CGTREE_MAX - groups, .seconds = left};
            cgtree_walk(path, CGTREE_REMOVE, NULL, &w);
            groups += w.groups + 1;
            removed += w.removed;
            left -= w.took;
        }
        close(fd); /* after the removal: a new agent never takes a name that is still being reclaimed */
    }
    closedir(d);
    if (removed) log_info("cgroup: %zu empty groups that earlier agents left in %s removed", removed, dir);
}

/* Make the agent's directory under dir, named after its pid and start time
 * (unique while it runs; ".N" after it should another agent's, in another
 * PID namespace, have the same), and lock it for as long as the agent runs
 * (b->fd), after what earlier agents left there is reclaimed. */
static int make_base(struct cgroup_base *b, const char *dir, char *why)
{
    char state;
    unsigned long long start = 0;
    descendants_stat(0, &state, &start);
    reclaim(dir);
    for (int i = 0; i < NAME_TRIES; i++) {
        int n = i ? snprintf(b->dir, sizeof b->dir, "%s/" SA_NAME "-%d-%llu.%d", dir, (int)getpid(), start, i)
                  : snprintf(b->dir, sizeof b->dir, "%s/" SA_NAME "-%d-%llu", dir, (int)getpid(), start);
        if (n < 0 || (size_t)n >= sizeof b->dir) break;
        if (mkdir(b->dir, 0755) < 0) {
            if (errno == EEXIST) continue;
            err_set(why, "cannot make a group in %s: %s", dir, strerror(errno));
            return -1;
        }
        /* Another agent reclaiming may lock it, or remove it, between the
         * mkdir and the lock: then it is not ours any more; it goes (by
         * whichever of us is first), and the next name is tried. */
        struct stat a, c;
        b->fd = lock_dir(AT_FDCWD, b->dir);
        if (b->fd >= 0 && fstat(b->fd, &a) == 0 && stat(b->dir, &c) == 0 && a.st_ino == c.st_ino && a.st_dev == c.st_dev)
            return 0;
        if (b->fd >= 0) close(b->fd);
        else rmdir(b->dir);
        b->fd = -1;
    }
    err_set(why, "cannot make a group in %s", dir);
    return -1;
}

static int try_kind(struct cgroup_base *b, enum cgroup_kind k, const struct buf *self, const struct buf *mi,
                    char *why)
{
    char dir[CGROUP_PATH_MAX];
    const char *ctl = k == CGROUP_V2 ? NULL : k == CGROUP_V1_FREEZER ? "freezer" : "pids";
    if (own_dir(self, mi, ctl, dir, NULL, why) < 0 || make_base(b, dir, why) < 0) return -1;
    b->kind = k;
    b->has_kill = k == CGROUP_V2 && has_file(b->dir, "cgroup.kill");
    b->has_freeze = k == CGROUP_V2 ? has_file(b->dir, "cgroup.freeze") : k == CGROUP_V1_FREEZER;
    return 0;
}

int cgroup_base_open(struct cgroup_base *b, enum cgroup_want w, char *err)
{
    static const enum cgroup_kind order[] = {CGROUP_V2, CGROUP_V1_FREEZER, CGROUP_V1_PIDS};
    struct buf self, mi;
    char why[ERR_LEN] = "";
    int rc = -1;
    memset(b, 0, sizeof *b);
    b->fd = -1;
    if (w == CGROUP_WANT_OFF) {
        err_set(err, "turned off (" ENV_CGROUPS "=0)");
        return -1;
    }
    if (read_text("/proc/self/cgroup", &self, SELF_MAX) < 0 ||
        read_text("/proc/self/mountinfo", &mi, MOUNTINFO_MAX) < 0) {
        err_set(why, "cannot read /proc/self: %s", strerror(errno));
    } else {
        for (size_t i = 0; i < sizeof order / sizeof order[0] && rc < 0; i++) {
            if ((w == CGROUP_WANT_V2 && order[i] != CGROUP_V2) || (w == CGROUP_WANT_V1 && order[i] == CGROUP_V2))
                continue;
            char one[ERR_LEN];
            rc = try_kind(b, order[i], &self, &mi, one);
            if (rc < 0 && strlen(why) + strlen(one) + 3 < sizeof why) {
                if (*why) strcat(why, "; ");
                strcat(why, one);
            }
        }
    }
    buf_free(&self);
    buf_free(&mi);
    if (rc < 0) err_set(err, "%s", why);
    return rc;
}

void cgroup_base_close(struct cgroup_base *b)
{
    struct cgtree w = {0};
    char why[ERR_LEN];
    if (b->kind == CGROUP_NONE) return;
    /* Members left are the process table's to tell (agent/proc/group.c). */
    if (cgtree_walk(b->dir, CGTREE_REMOVE, NULL, &w) < 0)
        log_info("cgroup: %s left behind: %s", b->dir, cgtree_why(&w, why, sizeof why));
    close(b->fd); /* unlocked once removed: what is left, a later agent reclaims */
    b->fd = -1;
    b->kind = CGROUP_NONE;
}

/* ---- one group ---- */

int cgroup_make(const struct cgroup_base *b, const char *name, char *path, size_t cap, char *err)
{
    char procs[CGROUP_PATH_MAX + 32];
    int n = snprintf(path, cap, "%s/%s", b->dir, name);
    if (n < 0 || (size_t)n >= cap) {
        err_set(err, "cgroup path too long");
        errno = ENAMETOOLONG;
        return -1;
    }
    if (mkdir(path, 0755) < 0) {
        err_set(err, "cannot make the cgroup %s: %s", path, strerror(errno));
        return -1;
    }
    snprintf(procs, sizeof procs, "%s/cgroup.procs", path);
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        err_set(err, "cannot open %s: %s", procs, strerror(e));
        rmdir(path);
        errno = e;
    }
    return fd;
}

int cgroup_kill(const struct cgroup_base *b, const char *path)
{
    return b->has_kill ? write_text(path, "cgroup.kill", "1") : -1;
}

int cgroup_freeze(const struct cgroup_base *b, const char *path, int on)
{
    if (!b->has_freeze) return -1;
    if (b->kind == CGROUP_V2) return write_text(path, "cgroup.freeze", on ? "1" : "0");
    return write_text(path, "freezer.state", on ? "FROZEN" : "THAWED");
}

int cgroup_frozen(const struct cgroup_base *b, const char *path)
{
    char file[CGROUP_PATH_MAX + 32];
    struct buf t;
    if (!b->has_freeze) return -1;
    snprintf(file, sizeof file, "%s/%s", path, b->kind == CGROUP_V2 ? "cgroup.events" : "freezer.state");
    if (read_text(file, &t, 4096) < 0) return -1;
    int r = 0;
    if (t.data && b->kind == CGROUP_V2) r = memmem(t.data, t.len, "frozen 1", 8) != NULL;
    else if (t.data) r = t.len >= 6 && !memcmp(t.data, "FROZEN", 6);
    buf_free(&t);
    return r;
}
