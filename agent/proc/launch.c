/*
 * launch.c - making the child of a Start (see proc_priv.h): its working
 * directory (resolved by the caller, checked to be one), its environment
 * (a login's PATH unless the base has one, the base, then HOME, USER,
 * LOGNAME, SHELL and PWD as a login sets them, then POST /init's defaults,
 * then the request's; the last of a name wins) and the room execve leaves
 * for it, its identity (uid, gid, groups; only root may switch), and its
 * fds: pipes for stdout and stderr and stdin (or /dev/null), or a new pty
 * whose slave is fds 0-2 and the controlling terminal of a new session.
 */
#include "agent/proc/proc_priv.h"
#include "agent/core/err.h"
#include "agent/core/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* The fds of a child being made: ours ([0]) and its ([1]). */
struct pfds {
    int out[2], err[2], in[2];
    int master, slave;
};

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static void pfds_close_all(struct pfds *f)
{
    int *all[] = {&f->out[0], &f->out[1], &f->err[0], &f->err[1], &f->in[0], &f->in[1], &f->master, &f->slave};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) close_fd(all[i]);
}

static char *join3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* The directory to start in is there, as the agent sees it (as envd
 * checks it); whether the user may enter it is told by the child's chdir,
 * after the id switch (spawn.h). */
static int check_dir(const char *dir, char *err)
{
    struct stat st;
    if (!dir) return 0;
    int missing = stat(dir, &st) < 0;
    if (!missing && S_ISDIR(st.st_mode)) return 0;
    err_set(err, "cwd '%s' %s", dir, missing ? "does not exist" : "is not a directory");
    errno = EINVAL;
    return -1;
}

struct env_node {
    struct hnode h;
    const char *s;
    size_t namelen;
};

static size_t count(char *const *v)
{
    size_t n = 0;
    while (v && v[n]) n++;
    return n;
}

/* Keep the last entry of each name, in the order of those last entries. */
static char **env_dedup(const char **all, size_t n)
{
    struct env_node *nodes = calloc(n ? n : 1, sizeof *nodes);
    char **out = calloc(n + 1, sizeof *out);
    struct htab seen;
    if (!nodes || !out || hash_init(&seen, n, 0) < 0) {
        free(nodes);
        free(out);
        return NULL;
    }
    size_t kept = n;
    for (size_t i = n; i-- > 0;) {
        const char *s = all[i], *eq = strchr(s, '=');
        if (!eq || eq == s) continue;
        size_t nl = (size_t)(eq - s);
        uint64_t h = hash_bytes(HASH_SEED, s, nl);
        struct hnode *it;
        int dup = 0;
        HASH_FOR_EACH(&seen, h, it) {
            struct env_node *e = HASH_ENTRY(it, struct env_node, h);
            if (e->namelen == nl && !memcmp(e->s, s, nl)) dup = 1;
        }
        if (dup) continue;
        nodes[i].s = s;
        nodes[i].namelen = nl;
        hash_add(&seen, &nodes[i].h, h);
        out[--kept] = (char *)s;
    }
    /* Shift the kept entries to the front, still in order. */
    memmove(out, out + kept, (n - kept) * sizeof *out);
    out[n - kept] = NULL;
    hash_free(&seen);
    free(nodes);
    return out;
}

/* A login's PATH, for an agent started without one. */
#define LOGIN_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static void strv_free_all(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

/* The login variables of u in cwd, malloc'd, into login[0..*n): no more
 * than LOGIN_VARS, none longer than login_room counts them. */
#define LOGIN_VARS 6
static int login_vars(const struct user_info *u, const char *cwd, char *login[LOGIN_VARS], size_t *n)
{
    *n = 0;
    login[(*n)++] = strdup("PATH=" LOGIN_PATH); /* before the base: the base's wins */
    if (u) {
        login[(*n)++] = join3("HOME", "=", u->home);
        login[(*n)++] = join3("USER", "=", u->name);
        login[(*n)++] = join3("LOGNAME", "=", u->name);
        login[(*n)++] = join3("SHELL", "=", u->shell);
    }
    if (cwd) login[(*n)++] = join3("PWD", "=", cwd);
    for (size_t i = 0; i < *n; i++)
        if (!login[i]) return -1;
    return 0;
}

/* The most the login variables take (login_vars): "PATH=" LOGIN_PATH,
 * then HOME, SHELL and PWD paths and USER and LOGNAME names at their
 * longest (core/user.h), each at SPAWN_ARG_COST. */
static size_t login_room(void)
{
    return SPAWN_ARG_COST(sizeof "PATH=" LOGIN_PATH - 1) + 3 * SPAWN_ARG_COST(sizeof "SHELL=" + USER_PATH_MAX) +
           2 * SPAWN_ARG_COST(sizeof "LOGNAME=" + USER_NAME_MAX);
}

size_t proc_launch_env_room(const struct proc_table *t)
{
    char *const *base = t->o.base_env ? t->o.base_env : environ;
    size_t max = spawn_arg_max(), used = PROC_START_ROOM(max) + login_room();
    for (size_t i = 0; base[i]; i++) used += SPAWN_ARG_COST(strlen(base[i]));
    return used < max ? max - used : 0;
}

char **proc_launch_env(const struct proc_table *t, const struct user_info *u, const char *cwd,
                char *const *defaults, char *const *req)
{
    char *const *base = t->o.base_env ? t->o.base_env : environ;
    char *login[LOGIN_VARS] = {NULL}, **env = NULL, **kept = NULL;
    size_t nb = count(base), nd = count(defaults), nr = count(req), nl = 0, n = 0;
    const char **all = malloc((nb + LOGIN_VARS + nd + nr + 1) * sizeof *all);
    if (!all || login_vars(u, cwd, login, &nl) < 0) goto out;
    all[n++] = login[0];
    for (size_t i = 0; i < nb; i++) all[n++] = base[i];
    for (size_t i = 1; i < nl; i++) all[n++] = login[i];
    for (size_t i = 0; i < nd; i++) all[n++] = defaults[i];
    for (size_t i = 0; i < nr; i++) all[n++] = req[i];
    if (!(kept = env_dedup(all, n))) goto out;
    size_t k = count(kept);
    if (!(env = calloc(k + 1, sizeof *env))) goto out;
    for (size_t i = 0; i < k; i++) {
        if (!(env[i] = strdup(kept[i]))) {
            strv_free_all(env);
            env = NULL;
            break;
        }
    }
out:
    free(kept);
    free(all);
    for (size_t i = 0; i < LOGIN_VARS; i++) free(login[i]);
    return env;
}

void proc_launch_env_free(char **env) { strv_free_all(env); }

static int open_pty(struct pfds *f, unsigned short cols, unsigned short rows, char *err)
{
    char name[128];
    f->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (f->master < 0 || grantpt(f->master) < 0 || unlockpt(f->master) < 0 ||
        ptsname_r(f->master, name, sizeof name) != 0) {
        err_set(err, "cannot open a pty: %s", strerror(errno));
        return -1;
    }
    f->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (f->slave < 0) {
        err_set(err, "cannot open %s: %s", name, strerror(errno));
        return -1;
    }
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    if (ioctl(f->master, TIOCSWINSZ, &ws) < 0) {
        err_set(err, "cannot set the pty size: %s", strerror(errno));
        return -1;
    }
    /* Input has its own fd (and watcher) on the master. */
    f->in[0] = fcntl(f->master, F_DUPFD_CLOEXEC, 3);
    if (f->in[0] < 0) {
        err_set(err, "dup: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int open_fds(struct pfds *f, const struct proc_start *s, char *err)
{
    if (s->pty) return open_pty(f, s->cols, s->rows, err);
    if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0) {
        err_set(err, "pipe: %s", strerror(errno));
        return -1;
    }
    if (s->stdin_pipe) {
        int in[2];
        if (pipe2(in, O_CLOEXEC) < 0) {
            err_set(err, "pipe: %s", strerror(errno));
            return -1;
        }
        f->in[0] = in[1]; /* ours writes */
        f->in[1] = in[0];
    } else if ((f->in[1] = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC)) < 0) { /* musl's open adds an F_SETFD */
        err_set(err, "/dev/null: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Give p our ends of the fds, non-blocking. */
static void adopt_fds(struct proc *p, struct pfds *f)
{
    if (p->pty) {
        p->ch[PROC_PTY].fd = f->master;
        p->ch[PROC_PTY].used = 1;
        f->master = -1;
    } else {
        p->ch[PROC_STDOUT].fd = f->out[0];
        p->ch[PROC_STDERR].fd = f->err[0];
        p->ch[PROC_STDOUT].used = p->ch[PROC_STDERR].used = 1;
        f->out[0] = f->err[0] = -1;
    }
    p->in_fd = f->in[0];
    f->in[0] = -1;
    /* Fresh pipe ends and pty fds carry no other status flag to keep: one
     * F_SETFL each, no F_GETFL first. */
    for (int i = 0; i < PROC_CHANS; i++)
        if (p->ch[i].fd >= 0) fcntl(p->ch[i].fd, F_SETFL, O_NONBLOCK);
    if (p->in_fd >= 0) fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
}

static int check_user(const struct user_info *u, uid_t euid, char *err)
{
    if (!u || euid == 0 || u->uid == euid) return 0;
    err_set(err, "running as user '%s' needs the agent to run as root", u->name);
    errno = EPERM;
    return -1;
}

/* The child, started without waiting for its exec (core/spawn.h): its
 * report (exec's errno, the cgroup join's) comes later, to io.c. */
static pid_t spawn(struct pfds *f, const struct proc_start *s, uid_t euid, char **env,
                   int cgroup_fd, struct spawn_report **r, char *err)
{
    const struct user_info *u = s->user;
    int child_in = s->pty ? f->slave : f->in[1];
    int child_out = s->pty ? f->slave : f->out[1];
    int child_err = s->pty ? f->slave : f->err[1];
    struct spawn_opts so = {.argv = s->argv, .new_pgrp = 1, .tty_fd = -1, .stdin_fd = child_in,
                            .stdout_fd = child_out, .stderr_fd = child_err, .cwd = s->dir, .envp = env,
                            .new_session = s->pty, .ctty = s->pty, .set_ids = u && euid == 0,
                            .uid = u ? u->uid : 0, .gid = u ? u->gid : 0, .groups = u ? u->groups : NULL,
                            .ngroups = u ? u->ngroups : 0, .cgroup_fd = cgroup_fd};
    return spawn_start(&so, SPAWN_NOWAIT, r, err);
}

int proc_launch(struct proc *p, const struct proc_start *s, char *err)
{
    struct pfds f = {{-1, -1}, {-1, -1}, {-1, -1}, -1, -1};
    char **env = NULL;
    int rc = -1, e = 0, cg_fd = -1;

    uid_t euid = geteuid(); /* once a start */
    if (check_user(s->user, euid, err) < 0 || check_dir(s->dir, err) < 0) return -1;
    env = proc_launch_env(p->t, s->user, s->dir, s->defaults, s->envs);
    if (!env || !(p->g = proc_group_new(p->t, &cg_fd))) {
        err_set(err, "out of memory");
        e = ENOMEM;
    } else if (open_fds(&f, s, err) < 0) {
        e = errno;
    } else if ((p->pid = spawn(&f, s, euid, env, cg_fd, &p->report, err)) < 0) {
        e = errno;
    } else {
        proc_group_started(p->g, p->pid, 0); /* a failed join is told later (io.c) */
        adopt_fds(p, &f);
        rc = 0;
    }
    if (cg_fd >= 0) close(cg_fd);
    pfds_close_all(&f);
    proc_launch_env_free(env);
    if (e) errno = e;
    return rc;
}
