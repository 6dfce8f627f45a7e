/*
 * proc.c - the process table (see proc.h): starting, finding, listing,
 * signalling, keeping and dropping records, shutting down. The child's
 * making is launch.c's, its fds and end io.c's.
 *
 * Finished records are kept in the order they finished: until keep_sent
 * seconds after their last end event went out (a timer each, on the
 * loop's monotonic clock), and while more than keep_finished are kept or
 * they hold more than keep_bytes the oldest one without a subscriber goes
 * first (the newest is never dropped for the bytes).
 */
#include "agent/proc/proc_priv.h"
#include "agent/core/list.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/num.h"
#include "agent/core/protocol.h"
#include "agent/core/stop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int proc_table_opts_env(struct proc_table_opts *o, char *err)
{
    memset(o, 0, sizeof *o);
    o->retain = DEFAULT_RETAIN_BYTES;
    o->keep_finished = DEFAULT_KEEP_FINISHED;
    o->grace = DEFAULT_GRACE_SECONDS;
    o->stall = DEFAULT_STALL_SECONDS;
    o->keep_bytes = DEFAULT_KEEP_FINISHED_BYTES;
    o->keep_sent = DEFAULT_KEEP_FINISHED_SECONDS;
    const char *v = getenv(ENV_RETAIN_BYTES);
    uint64_t n;
    if (v && *v) {
        if (num_count(v, PROC_RETAIN_MAX, &n) < 0) {
            err_set(err, "%s '%s' is not a byte count (at most %llu)", ENV_RETAIN_BYTES, v,
                    (unsigned long long)PROC_RETAIN_MAX);
            return -1;
        }
        o->retain = (size_t)n;
    }
    v = getenv(ENV_KEEP_FINISHED_BYTES);
    if (v && *v) {
        if (num_count(v, PROC_KEEP_BYTES_MAX, &n) < 0 || n == 0) {
            err_set(err, "%s '%.40s' is not a byte count (1 to %llu)", ENV_KEEP_FINISHED_BYTES, v,
                    (unsigned long long)PROC_KEEP_BYTES_MAX);
            return -1;
        }
        o->keep_bytes = (size_t)n;
    }
    v = getenv(ENV_KEEP_FINISHED_SECONDS);
    if (v && *v && num_seconds(v, NUM_MAX_SECONDS, &o->keep_sent) < 0) {
        err_set(err, "%s '%.40s' is not a number of seconds (0 to %.0f)", ENV_KEEP_FINISHED_SECONDS, v,
                NUM_MAX_SECONDS);
        return -1;
    }
    v = getenv(ENV_STALL_SECONDS);
    if (v && *v && num_seconds(v, NUM_MAX_SECONDS, &o->stall) < 0) {
        err_set(err, "%s '%s' is not a number of seconds (0 to %.0f)", ENV_STALL_SECONDS, v, NUM_MAX_SECONDS);
        return -1;
    }
    v = getenv(ENV_CGROUPS);
    if (cgroup_want_parse(v, &o->cgroups) < 0) {
        err_set(err, "%s must be 0, 1, v1 or v2, not '%.40s'", ENV_CGROUPS, v);
        return -1;
    }
    return 0;
}

/* The processes' cgroups, when asked for and allowed (logged either way). */
static void cgroups_open(struct proc_table *t)
{
    char why[ERR_LEN];
    if (t->o.cgroups == CGROUP_WANT_OFF) return;
    if (cgroup_base_open(&t->cg, t->o.cgroups, why) == 0) {
        log_info("proc: each process gets a cgroup of its own (%s) in %s", cgroup_kind_name(t->cg.kind), t->cg.dir);
        return;
    }
    if (t->o.cgroups == CGROUP_WANT_AUTO)
        log_info("proc: no cgroups for the processes (%s): their descendants are found through /proc", why);
    else
        log_warn("proc: %s asks for cgroups, but %s: descendants are found through /proc", ENV_CGROUPS, why);
}

struct proc_table *proc_table_new(struct ev_loop *loop, const struct proc_table_opts *o, char *err)
{
    struct proc_table *t = calloc(1, sizeof *t);
    if (!t || hash_init(&t->pids, 64, 1) < 0 || hash_init(&t->tags, 16, 1) < 0) {
        if (t) hash_free(&t->pids);
        free(t);
        err_set(err, "out of memory");
        return NULL;
    }
    t->loop = loop;
    t->o = *o;
    cgroups_open(t);
    return t;
}

static uint64_t tag_hash(const char *tag) { return hash_bytes(HASH_SEED, tag, strlen(tag)); }

static char **strv_dup(char *const *v)
{
    size_t n = 0;
    while (v && v[n]) n++;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        if (!(out[i] = strdup(v[i]))) {
            while (i--) free(out[i]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

/* The bytes of a NULL-terminated array of strings, the array included. */
static size_t strv_bytes(char *const *v)
{
    size_t n = sizeof *v;
    for (size_t i = 0; v && v[i]; i++) n += sizeof *v + strlen(v[i]) + 1;
    return n;
}

/* What a finished record holds: itself, its rings (shrunk), its config. */
static size_t rec_bytes(const struct proc *p)
{
    size_t n = sizeof *p + strv_bytes(p->argv) + strv_bytes(p->envs);
    for (int i = 0; i < PROC_CHANS; i++) n += p->ch[i].ring.cap;
    if (p->cwd) n += strlen(p->cwd) + 1;
    if (p->tag) n += strlen(p->tag) + 1;
    return n;
}

/* Unlink p from everything that holds it and free it. */
static void rec_free(struct proc *p)
{
    struct proc_table *t = p->t;
    ev_timer_stop(t->loop, &p->keep);
    proc_io_release(p);
    proc_group_release(p->g);
    if (p->pid_indexed) hash_del(&t->pids, &p->by_pid);
    if (p->tag && p->seq) hash_del(&t->tags, &p->by_tag);
    if (p->seq) {
        if (p->prev) p->prev->next = p->next;
        else t->first = p->next;
        if (p->next) p->next->prev = p->prev;
        else t->last = p->prev;
    }
    if (p->kept) {
        if (p->fprev) p->fprev->fnext = p->fnext;
        else t->ffirst = p->fnext;
        if (p->fnext) p->fnext->fprev = p->fprev;
        else t->flast = p->fprev;
        t->nfinished--;
        t->fbytes -= p->bytes;
    }
    strv_free(p->argv);
    strv_free(p->envs);
    free(p->cwd);
    free(p->tag);
    buf_free(&p->inq);
    free(p);
}

void proc_table_free(struct proc_table *t)
{
    if (!t) return;
    while (t->first) rec_free(t->first);
    proc_group_free_all(t);
    cgroup_base_close(&t->cg);
    hash_free(&t->pids);
    hash_free(&t->tags);
    free(t);
}

static void on_keep_over(struct ev_loop *loop, ev_timer *w, int revents);

/* A record holding a copy of the config, with nothing open. */
static struct proc *rec_new(struct proc_table *t, const struct proc_start *s)
{
    struct proc *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->t = t;
    ev_timer_init(&p->keep, on_keep_over, 0., 0.);
    p->keep.data = p;
    p->in_fd = -1;
    p->pty = s->pty;
    for (int i = 0; i < PROC_CHANS; i++) {
        p->ch[i].fd = -1;
        ring_init(&p->ch[i].ring, t->o.retain);
    }
    buf_init_budget(&p->inq, PROC_INPUT_MAX);
    p->argv = strv_dup(s->argv);
    p->envs = strv_dup(s->envs);
    int bad = !p->argv || !p->envs;
    if (s->cwd && !(p->cwd = strdup(s->cwd))) bad = 1;
    if (s->tag && !(p->tag = strdup(s->tag))) bad = 1;
    if (bad) {
        rec_free(p);
        return NULL;
    }
    return p;
}

static struct proc *running_tagged(struct proc_table *t, const char *tag)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->tags, tag_hash(tag), it) {
        struct proc *p = HASH_ENTRY(it, struct proc, by_tag);
        if (!p->ended && !strcmp(p->tag, tag)) return p;
    }
    return NULL;
}

/* Link a started record: by pid (taking the pid over from an older record
 * of the same pid), by tag, in start order. */
static void rec_link(struct proc_table *t, struct proc *p)
{
    struct proc *old = proc_by_pid(t, p->pid);
    if (old) {
        hash_del(&t->pids, &old->by_pid);
        old->pid_indexed = 0;
    }
    hash_add(&t->pids, &p->by_pid, hash_u64((uint64_t)p->pid));
    p->pid_indexed = 1;
    p->seq = ++t->seq;
    if (p->tag) hash_add(&t->tags, &p->by_tag, tag_hash(p->tag));
    p->prev = t->last;
    if (t->last) t->last->next = p;
    else t->first = p;
    t->last = p;
    t->nrunning++;
}

static int start_check(struct proc_table *t, const struct proc_start *s, char *err)
{
    if (t->shutting) {
        err_set(err, "shutting down");
        errno = ESHUTDOWN;
        return -1;
    }
    if (!s->argv || !s->argv[0] || !s->argv[0][0]) {
        err_set(err, "no command");
        errno = EINVAL;
        return -1;
    }
    if (s->tag && running_tagged(t, s->tag)) {
        err_set(err, "a process tagged '%s' is already running", s->tag);
        errno = EEXIST;
        return -1;
    }
    return 0;
}

struct proc *proc_start(struct proc_table *t, const struct proc_start *s, char *err)
{
    if (start_check(t, s, err) < 0) return NULL;
    struct proc *p = rec_new(t, s);
    if (!p) {
        err_set(err, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    if (proc_launch(p, s, err) < 0) {
        int e = errno;
        rec_free(p);
        errno = e;
        return NULL;
    }
    proc_io_start(p, s->timeout);
    rec_link(t, p);
    log_debug("process %d started: %s", (int)p->pid, p->argv[0]);
    return p;
}

struct proc *proc_by_pid(struct proc_table *t, pid_t pid)
{
    struct hnode *it;
    HASH_FOR_EACH(&t->pids, hash_u64((uint64_t)pid), it) {
        struct proc *p = HASH_ENTRY(it, struct proc, by_pid);
        if (p->pid == pid) return p;
    }
    return NULL;
}

struct proc *proc_by_tag(struct proc_table *t, const char *tag)
{
    struct proc *best = NULL;
    struct hnode *it;
    HASH_FOR_EACH(&t->tags, tag_hash(tag), it) {
        struct proc *p = HASH_ENTRY(it, struct proc, by_tag);
        if (strcmp(p->tag, tag)) continue;
        if (!p->ended) return p;
        if (!best || p->seq > best->seq) best = p;
    }
    return best;
}

struct proc *proc_first(struct proc_table *t) { return t->first; }
struct proc *proc_next(struct proc *p) { return p->next; }
size_t proc_table_running(const struct proc_table *t) { return t->nrunning; }
const struct cgroup_base *proc_table_cgroups(const struct proc_table *t) { return &t->cg; }
pid_t proc_pid(const struct proc *p) { return p->pid; }
const char *proc_tag(const struct proc *p) { return p->tag; }
char *const *proc_argv(const struct proc *p) { return p->argv; }
char *const *proc_envs(const struct proc *p) { return p->envs; }
const char *proc_cwd(const struct proc *p) { return p->cwd; }
int proc_has_pty(const struct proc *p) { return p->pty; }
int proc_running(const struct proc *p) { return !p->ended; }
const struct proc_end *proc_end(const struct proc *p) { return p->ended ? &p->end : NULL; }

int proc_has_chan(const struct proc *p, enum proc_chan ch) { return ch >= 0 && ch < PROC_CHANS && p->ch[ch].used; }

size_t proc_read(const struct proc *p, enum proc_chan ch, uint64_t *offset, char *dst, size_t max,
                 uint64_t *skipped)
{
    if (skipped) *skipped = 0;
    if (!proc_has_chan(p, ch)) return 0;
    return ring_read(&p->ch[ch].ring, offset, dst, max, skipped);
}

const char *proc_peek(const struct proc *p, enum proc_chan ch, uint64_t *offset, size_t max, size_t *n,
                      uint64_t *skipped)
{
    *n = 0;
    if (skipped) *skipped = 0;
    if (!proc_has_chan(p, ch)) return NULL;
    return ring_peek(&p->ch[ch].ring, offset, max, n, skipped);
}

uint64_t proc_read_end(const struct proc *p, enum proc_chan ch)
{
    return proc_has_chan(p, ch) ? p->ch[ch].ring.end : 0;
}

/* The leader is still there to act on: input, signals, resizes. */
static int alive(const struct proc *p, char *err)
{
    if (!p->leader_exited) return 0;
    err_set(err, "process %d is not running", (int)p->pid);
    errno = ESRCH;
    return -1;
}

int proc_send_input(struct proc *p, int to_pty, const void *data, size_t n, char *err)
{
    if (alive(p, err) < 0) return -1;
    if (to_pty != p->pty) {
        err_set(err, to_pty ? "process %d has no pty: input goes to its stdin"
                            : "process %d has a pty: input goes to the pty", (int)p->pid);
        errno = to_pty ? ENOTTY : EINVAL;
        return -1;
    }
    return proc_io_input(p, data, n, err);
}

int proc_close_stdin(struct proc *p, char *err)
{
    if (alive(p, err) < 0) return -1;
    if (p->pty) {
        err_set(err, "process %d has a pty: send Ctrl-D (0x04) to it instead", (int)p->pid);
        errno = EINVAL;
        return -1;
    }
    return proc_io_close_input(p);
}

int proc_signal(struct proc *p, int sig, char *err)
{
    if (alive(p, err) < 0) return -1;
    proc_group_signal(p->g, sig);
    return 0;
}

void proc_stop(struct proc *p)
{
    if (p->leader_exited || p->timed_out) return;
    p->timed_out = 1;
    ev_timer_stop(p->t->loop, &p->deadline); /* this is it */
    log_debug("process %d: timeout; stopping it and what it started", (int)p->pid);
    proc_group_stop(p->g, SIGTERM, p->t->o.grace);
}

const char *proc_cgroup(const struct proc *p) { return proc_group_cgroup(p->g); }

int proc_resize(struct proc *p, unsigned short cols, unsigned short rows, char *err)
{
    if (!p->pty) {
        err_set(err, "process %d has no pty", (int)p->pid);
        errno = ENOTTY;
        return -1;
    }
    if (alive(p, err) < 0) return -1;
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    if (p->in_fd < 0 || ioctl(p->in_fd, TIOCSWINSZ, &ws) < 0) {
        int e = p->in_fd < 0 ? EBADF : errno;
        err_set(err, "process %d: cannot resize its pty: %s", (int)p->pid, strerror(e));
        errno = e;
        return -1;
    }
    stop_send(p->pid, SIGWINCH, 1);
    return 0;
}

void proc_subscribe(struct proc *p, struct proc_sub *s, proc_ready_fn fn, void *ctx)
{
    s->p = p;
    s->fn = fn;
    s->ctx = ctx;
    s->pos = NULL;
    s->stalled = 0;
    LIST_PUSH(p->subs, s);
}

/* More finished records kept than the count, or the bytes, allow; the
 * newest one is never over the bytes alone. */
static int over_caps(const struct proc_table *t, const struct proc *oldest)
{
    if (t->nfinished > t->o.keep_finished) return 1;
    return t->o.keep_bytes && t->fbytes > t->o.keep_bytes && oldest != t->flast;
}

/* Drop the oldest finished records nobody is reading while over a cap. */
static void evict(struct proc_table *t)
{
    for (struct proc *p = t->ffirst, *next; p && over_caps(t, p); p = next) {
        next = p->fnext;
        if (!p->subs) rec_free(p);
    }
}

void proc_unsubscribe(struct proc_sub *s)
{
    struct proc *p = s->p;
    if (!p) return;
    LIST_UNLINK(p->subs, s);
    s->p = NULL;
    if (!p->kept) {
        proc_pace_check(p); /* what waited for s flows again */
        return;
    }
    if (p->forget && !p->subs) rec_free(p);
    else evict(p->t);
}

/* Its time after the end went out is over: it goes, now or with its last
 * subscriber. */
static void forget(struct proc *p)
{
    p->forget = 1;
    if (p->kept && !p->subs) rec_free(p);
}

static void on_keep_over(struct ev_loop *loop, ev_timer *w, int revents)
{
    forget(w->data);
}

void proc_end_sent(struct proc *p)
{
    if (!p->ended) return;
    if (p->t->o.keep_sent <= 0) {
        forget(p);
        return;
    }
    p->forget = 0; /* the time runs again from now */
    ev_timer_stop(p->t->loop, &p->keep);
    ev_timer_set(&p->keep, p->t->o.keep_sent, 0.);
    ev_timer_start(p->t->loop, &p->keep);
}

void proc_finished(struct proc *p)
{
    struct proc_table *t = p->t;
    t->nrunning--;
    /* Before it joins the finished list: on_end cannot drop it. */
    if (t->o.on_end) t->o.on_end(p, t->o.ctx);
    if (p->forget && !p->subs) { /* read while it ended: nothing to keep */
        rec_free(p);
        return;
    }
    p->kept = 1;
    p->fprev = t->flast;
    if (t->flast) t->flast->fnext = p;
    else t->ffirst = p;
    t->flast = p;
    t->nfinished++;
    p->bytes = rec_bytes(p);
    t->fbytes += p->bytes;
    evict(t);
}

void proc_table_shutdown(struct proc_table *t, double grace)
{
    t->shutting = 1;
    for (struct proc *p = t->first; p; p = p->next) {
        proc_pace_check(p); /* nothing waits for a reader any more */
        ev_timer_stop(t->loop, &p->deadline);
    }
    /* Every running process, and what finished ones left in their cgroups. */
    proc_group_shutdown_all(t, grace);
}
