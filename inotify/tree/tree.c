/*
 * tree.c - the tree service's life and its events (see tree.h): the inotify
 * fd and its reader on the loop, arming (ROOT, then the initial walk), the
 * rebuild after an overflow, and acting on each event as event.c maps it:
 * delivering it, following a directory that appeared or was renamed inside
 * the tree, forgetting one that left. Watches are added and dropped by
 * watch.c, directories listed by list.c.
 */
#include "inotify/tree/tree_priv.h"
#include "agent/core/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- delivering ---------------------------------------------------------- */

void tree_emit(struct tree *s, uint32_t mask, const char *path, size_t n, const char *error)
{
    s->ops->event(s->ctx, mask, path, n, error);
}

void tree_emit_at(struct tree *s, uint32_t mask, const struct tree_node *n, const char *name, size_t len,
                const char *error)
{
    buf_reset(&s->path);
    if (tree_model_path(&s->t, n, name, len, &s->path) < 0) {
        s->ops->lost(s->ctx);
        return;
    }
    tree_emit(s, mask, s->path.data, s->path.len, error);
}

static void end(struct tree *s, enum tree_end why, const char *msg)
{
    s->halted = 1;
    s->ops->end(s->ctx, why, msg);
}

void tree_root_gone(struct tree *s, const char *why)
{
    tree_emit(s, IN_Q_OVERFLOW, s->root, s->root_len, why);
    end(s, TREE_ROOT_GONE, why);
}

/* ---- arming -------------------------------------------------------------- */

/* A fresh inotify fd watching ROOT, and (recursive) every directory below.
 * Returns 0, or -1 with errno from watching ROOT itself. */
static int arm(struct tree *s)
{
    s->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->fd < 0) return -1;
    s->wextra = s->extra | (s->admit ? IN_ATTRIB : 0);
    int wd = inotify_add_watch(s->fd, s->root, TREE_ROOT_FLAGS | s->wextra);
    if (wd < 0) {
        int e = errno;
        close(s->fd);
        s->fd = -1;
        errno = e;
        return -1;
    }
    if (tree_model_init(&s->t, s->root, s->root_len, TREE_MAX_NODES) < 0 || !tree_model_add(&s->t, NULL, "", 0, wd)) {
        tree_model_free(&s->t);
        close(s->fd);
        s->fd = -1;
        errno = ENOMEM;
        return -1;
    }
    s->have_tree = 1;
    s->t.extra = s->wextra;
    s->relist_marks = 0;
    s->stack_len = 0; /* listings the old fd's events asked for: the walk does them */
    s->mover_next = 0;
    memset(s->movers, 0, sizeof s->movers);
    tree_mark_arm(s);
    if (s->recursive) tree_list_scan(s, s->t.root, -1, 0);
    tree_mark_flush(s); /* behind the walk: its directories are in step once read */
    return 0;
}

static void disarm(struct tree *s)
{
    if (s->fd >= 0) {
        if (s->loop) ev_io_stop(s->loop, &s->io);
        close(s->fd);
        s->fd = -1;
    }
    if (s->have_tree) {
        tree_model_free(&s->t);
        s->have_tree = 0;
    }
}

static void listen_fd(struct tree *s)
{
    ev_io_set(&s->io, s->fd, EV_READ);
    ev_io_start(s->loop, &s->io);
}

/* After an overflow our picture of the tree may be wrong (missed creations,
 * renames, IN_IGNOREDs), and the client re-lists anyway: start over rather
 * than patch. The front-end holds the overflow back until the new watches
 * are in place, so the client's re-listing cannot miss what changes meanwhile. */
static void rebuild(struct tree *s)
{
    disarm(s);
    s->ops->settling(s->ctx, 1);
    int r = arm(s);
    s->ops->settling(s->ctx, 0);
    if (r < 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "ROOT cannot be watched again after an overflow: %s", strerror(errno));
        tree_root_gone(s, msg);
        return;
    }
    listen_fd(s);
}

/* ---- events -------------------------------------------------------------- */

static struct tree_node *mover_claim(struct tree *s, uint32_t cookie)
{
    for (unsigned i = 0; i < TREE_MOVERS; i++) {
        if (!s->movers[i].cookie || s->movers[i].cookie != cookie) continue;
        struct tree_node *n = tree_model_by_wd(&s->t, s->movers[i].wd);
        s->movers[i].cookie = 0;
        if (n && n->moving && n->cookie == cookie) return n;
    }
    return NULL;
}

/* The subdirectory `name` of n was renamed away: its IN_MOVED_TO may follow. */
static void mover_mark(struct tree *s, struct tree_node *n, const char *name, size_t len, uint32_t cookie)
{
    struct tree_node *c = tree_model_child(&s->t, n, name, len);
    if (!c) return;
    c->moving = 1;
    c->cookie = cookie;
    c->move_sure = (unsigned char)tree_mark_sure(s, c);
    s->movers[s->mover_next].cookie = cookie;
    s->movers[s->mover_next].wd = c->wd;
    s->mover_next = (s->mover_next + 1) % TREE_MOVERS;
}

static void new_dir(struct tree *s, struct tree_node *parent, const char *name, size_t len)
{
    int is_new;
    struct tree_node *c = tree_watch_add_dir(s, parent, -1, name, len, &is_new, NULL);
    if (c && is_new) tree_list_later(s, c); /* once its siblings are watched: tree_drain */
    else if (c) tree_list_renamed(s, c); /* found again under a new name */
}

/* IN_MOVED_TO of a directory `name` in n (watch wd). */
static void moved_in(struct tree *s, int wd, struct tree_node *n, const char *name, size_t len, uint32_t cookie)
{
    struct tree_node *m = cookie ? mover_claim(s, cookie) : NULL;
    if (m) {
        /* A rename inside the tree: the subtree keeps its watches; its
         * events carry the new path from here on. */
        if (tree_watch_follow_move(s, m, n, name, len)) {
            tree_list_renamed(s, m);
            return;
        }
        if (!(n = tree_model_by_wd(&s->t, wd))) return;
    }
    new_dir(s, n, name, len); /* moved in from outside, or not m after all */
}

/* IN_ATTRIB of the subdirectory `name` of n: is it still admitted? One
 * refused now, or that cannot be asked, is forgotten with its subtree: gone,
 * or its path stale (it or a parent renamed: the rename's events, or n's
 * listing again once they are read, find it and ask again). One not
 * watched is asked as a new one. */
static void readmit(struct tree *s, struct tree_node *n, const char *name, size_t len)
{
    struct tree_node *c = tree_model_child(&s->t, n, name, len);
    if (!c) {
        new_dir(s, n, name, len);
        return;
    }
    struct stat st;
    int fd = tree_probe_open_node(s, c);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && s->admit(s->ctx, fd, &st);
    if (fd >= 0) close(fd);
    if (ok) return;
    if (fd == TREE_PROBE_STALE) tree_probe_mark_relist(s, n);
    tree_watch_drop(s, c, -1, 0);
}

/* A reported event: deliver it (unless it is watched for admit's sake
 * only), then follow a directory entry. */
static void report(struct tree *s, int wd, const struct tree_event *e)
{
    if (e->mask & (TREE_EVENT_REPORTED | s->extra)) tree_emit_at(s, e->mask, e->n, e->name, e->name_len, NULL);
    if (!e->subdir) return;
    if (e->mask & IN_MOVED_FROM) mover_mark(s, e->n, e->name, e->name_len, e->cookie);
    else if (e->mask & IN_MOVED_TO) moved_in(s, wd, e->n, e->name, e->name_len, e->cookie);
    else if (e->mask & IN_CREATE) new_dir(s, e->n, e->name, e->name_len);
    else if ((e->mask & IN_ATTRIB) && s->admit) readmit(s, e->n, e->name, e->name_len);
}

static void on_event(struct tree *s, const struct inotify_event *ev)
{
    if (tree_mark_event(s, ev)) return;
    struct tree_event e;
    switch (tree_event_map(&s->t, ev, s->recursive, &e)) {
    case TREE_EVENT_SKIP:
        return;
    case TREE_EVENT_OVERFLOW:
        tree_emit(s, IN_Q_OVERFLOW, s->root, s->root_len, NULL);
        s->rebuild = 1;
        return;
    case TREE_EVENT_ROOT_GONE:
        tree_root_gone(s, e.why);
        return;
    case TREE_EVENT_FORGET:
        tree_watch_drop(s, e.n, ev->wd, 1);
        return;
    case TREE_EVENT_UNMOUNT:
        tree_emit_at(s, IN_Q_OVERFLOW, e.n, NULL, 0, "file system unmounted");
        return;
    case TREE_EVENT_MOVED_OUT:
        tree_watch_drop(s, e.n, -1, 0);
        return;
    case TREE_EVENT_REPORT:
        report(s, ev->wd, &e);
        return;
    }
}

/* Handle one buffer of events. Returns 1 when an overflow has rebuilt the
 * tree: what follows it belongs to the old fd and is covered by the client's
 * re-listing. */
static int handle(struct tree *s, ssize_t got)
{
    for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= got && !s->halted;) {
        const struct inotify_event *ev = (const struct inotify_event *)(s->rbuf + off);
        off += (ssize_t)sizeof *ev + ev->len;
        on_event(s, ev);
        if (s->rebuild) {
            s->rebuild = 0;
            rebuild(s);
            return 1;
        }
    }
    tree_mark_flush(s);
    return 0;
}

/* Read and handle what the kernel has queued, up to TREE_READS_PER_WAKE
 * reads (the fd is level-triggered: the rest wakes us again); then list the
 * directories those events announced, every one of them watched by now. */
void tree_drain(struct tree *s)
{
    for (int i = 0; i < TREE_READS_PER_WAKE && !s->halted && s->fd >= 0; i++) {
        ssize_t got = read(s->fd, s->rbuf, TREE_READ_BUF);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) break;
            char msg[ERR_LEN];
            err_set(msg, "cannot read inotify events: %s", strerror(errno));
            end(s, TREE_FAILED, msg);
            return;
        }
        if (got == 0 || handle(s, got)) break;
    }
    tree_list_announced(s);
    tree_mark_flush(s); /* behind what the listings placed */
}

static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct tree *s = io->data;
    tree_drain(s);
    s->ops->drained(s->ctx);
}

/* ---- the front-end's calls ----------------------------------------------- */

struct tree *tree_new(const char *root, int recursive, const struct tree_ops *ops, void *ctx, char *err)
{
    struct tree *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->fd = -1;
    s->bar[0] = s->bar[1] = s->bar_wd = -1;
    s->root_len = strlen(root);
    s->root = malloc(s->root_len + 1);
    s->rbuf = malloc(TREE_READ_BUF);
    s->dents = malloc(TREE_DENTS_BUF);
    if (!s->root || !s->rbuf || !s->dents) goto oom;
    memcpy(s->root, root, s->root_len + 1);
    s->recursive = recursive;
    s->mask_create = 1;
    struct stat st;
    s->no_proc = stat("/proc/self/fd", &st) < 0; /* then watches go by path */
    tree_mark_init(s);
    s->ops = ops;
    s->ctx = ctx;
    buf_init(&s->path, TREE_PATH_MAX);
    ev_io_init(&s->io, on_readable, -1, EV_READ);
    s->io.data = s;
    return s;
oom:
    tree_free(s);
    err_set(err, "out of memory");
    return NULL;
}

int tree_start(struct tree *s, struct ev_loop *loop, char *err)
{
    s->loop = loop;
    if (arm(s) < 0) {
        err_set(err, "%s", strerror(errno));
        return -1;
    }
    listen_fd(s);
    return 0;
}

void tree_halt(struct tree *s) { s->halted = 1; }

void tree_set_extra(struct tree *s, uint32_t events) { s->extra = events & TREE_EVENT_OPTIONAL; }

void tree_set_admit(struct tree *s, tree_admit_fn admit) { s->admit = admit; }

void tree_free(struct tree *s)
{
    if (!s) return;
    disarm(s);
    tree_mark_close(s);
    buf_free(&s->path);
    free(s->root);
    free(s->rbuf);
    free(s->dents);
    free(s->stack);
    free(s->relist);
    free(s);
}
