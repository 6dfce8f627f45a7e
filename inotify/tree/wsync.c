/*
 * wsync.c - the tree service's life and its events (see wsync.h): the inotify
 * fd and its reader on the loop, arming (ROOT, then the initial walk), the
 * rebuild after an overflow, and acting on each event as wevent.c maps it:
 * delivering it, following a directory that appeared or was renamed inside
 * the tree, forgetting one that left. Watches are added and dropped by
 * wwatch.c, directories listed by wlist.c.
 */
#include "inotify/tree/wsync_priv.h"
#include "agent/core/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- delivering ---------------------------------------------------------- */

void ws_emit(struct wsync *s, uint32_t mask, const char *path, size_t n, const char *error)
{
    s->ops->event(s->ctx, mask, path, n, error);
}

void ws_emit_at(struct wsync *s, uint32_t mask, const struct wnode *n, const char *name, size_t len,
                const char *error)
{
    buf_reset(&s->path);
    if (wtree_path(&s->t, n, name, len, &s->path) < 0) {
        s->ops->lost(s->ctx);
        return;
    }
    ws_emit(s, mask, s->path.data, s->path.len, error);
}

static void end(struct wsync *s, enum wsync_end why, const char *msg)
{
    s->halted = 1;
    s->ops->end(s->ctx, why, msg);
}

void ws_root_gone(struct wsync *s, const char *why)
{
    ws_emit(s, IN_Q_OVERFLOW, s->root, s->root_len, why);
    end(s, WSYNC_ROOT_GONE, why);
}

/* ---- arming -------------------------------------------------------------- */

/* A fresh inotify fd watching ROOT, and (recursive) every directory below.
 * Returns 0, or -1 with errno from watching ROOT itself. */
static int arm(struct wsync *s)
{
    s->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->fd < 0) return -1;
    s->wextra = s->extra | (s->admit ? IN_ATTRIB : 0);
    int wd = inotify_add_watch(s->fd, s->root, WSYNC_ROOT_FLAGS | s->wextra);
    if (wd < 0) {
        int e = errno;
        close(s->fd);
        s->fd = -1;
        errno = e;
        return -1;
    }
    if (wtree_init(&s->t, s->root, s->root_len, WSYNC_MAX_NODES) < 0 || !wtree_add(&s->t, NULL, "", 0, wd)) {
        wtree_free(&s->t);
        close(s->fd);
        s->fd = -1;
        errno = ENOMEM;
        return -1;
    }
    s->have_tree = 1;
    s->t.extra = s->wextra;
    s->relist_marks = 0;
    s->mover_next = 0;
    memset(s->movers, 0, sizeof s->movers);
    ws_bar_arm(s);
    if (s->recursive) ws_scan(s, s->t.root, -1, 0);
    ws_bar_flush(s); /* behind the walk: its directories are in step once read */
    return 0;
}

static void disarm(struct wsync *s)
{
    if (s->fd >= 0) {
        if (s->loop) ev_io_stop(s->loop, &s->io);
        close(s->fd);
        s->fd = -1;
    }
    if (s->have_tree) {
        wtree_free(&s->t);
        s->have_tree = 0;
    }
}

static void listen_fd(struct wsync *s)
{
    ev_io_set(&s->io, s->fd, EV_READ);
    ev_io_start(s->loop, &s->io);
}

/* After an overflow our picture of the tree may be wrong (missed creations,
 * renames, IN_IGNOREDs), and the client re-lists anyway: start over rather
 * than patch. The front-end holds the overflow back until the new watches
 * are in place, so the client's re-listing cannot miss what changes meanwhile. */
static void rebuild(struct wsync *s)
{
    disarm(s);
    s->ops->settling(s->ctx, 1);
    int r = arm(s);
    s->ops->settling(s->ctx, 0);
    if (r < 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "ROOT cannot be watched again after an overflow: %s", strerror(errno));
        ws_root_gone(s, msg);
        return;
    }
    listen_fd(s);
}

/* ---- events -------------------------------------------------------------- */

static struct wnode *mover_claim(struct wsync *s, uint32_t cookie)
{
    for (unsigned i = 0; i < WSYNC_MOVERS; i++) {
        if (!s->movers[i].cookie || s->movers[i].cookie != cookie) continue;
        struct wnode *n = wtree_by_wd(&s->t, s->movers[i].wd);
        s->movers[i].cookie = 0;
        if (n && n->moving && n->cookie == cookie) return n;
    }
    return NULL;
}

/* The subdirectory `name` of n was renamed away: its IN_MOVED_TO may follow. */
static void mover_mark(struct wsync *s, struct wnode *n, const char *name, size_t len, uint32_t cookie)
{
    struct wnode *c = wtree_child(&s->t, n, name, len);
    if (!c) return;
    c->moving = 1;
    c->cookie = cookie;
    c->move_sure = (unsigned char)ws_bar_sure(s, c);
    s->movers[s->mover_next].cookie = cookie;
    s->movers[s->mover_next].wd = c->wd;
    s->mover_next = (s->mover_next + 1) % WSYNC_MOVERS;
}

static void new_dir(struct wsync *s, struct wnode *parent, const char *name, size_t len)
{
    int is_new, fd;
    struct wnode *c = ws_add_dir(s, parent, -1, name, len, &is_new, &fd);
    if (c && is_new) ws_scan(s, c, fd, 1); /* listed through the fd watched */
    else if (c) ws_relist_renamed(s, c); /* found again under a new name */
}

/* IN_MOVED_TO of a directory `name` in n (watch wd). */
static void moved_in(struct wsync *s, int wd, struct wnode *n, const char *name, size_t len, uint32_t cookie)
{
    struct wnode *m = cookie ? mover_claim(s, cookie) : NULL;
    if (m) {
        /* A rename inside the tree: the subtree keeps its watches; its
         * events carry the new path from here on. */
        if (ws_follow_move(s, m, n, name, len)) {
            ws_relist_renamed(s, m);
            return;
        }
        if (!(n = wtree_by_wd(&s->t, wd))) return;
    }
    new_dir(s, n, name, len); /* moved in from outside, or not m after all */
}

/* IN_ATTRIB of the subdirectory `name` of n: is it still admitted? One
 * refused now, or that cannot be asked, is forgotten with its subtree: gone,
 * or its path stale (it or a parent renamed: the rename's events, or n's
 * listing again once they are read, find it and ask again). One not
 * watched is asked as a new one. */
static void readmit(struct wsync *s, struct wnode *n, const char *name, size_t len)
{
    struct wnode *c = wtree_child(&s->t, n, name, len);
    if (!c) {
        new_dir(s, n, name, len);
        return;
    }
    struct stat st;
    int fd = ws_open_node(s, c);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && s->admit(s->ctx, fd, &st);
    if (fd >= 0) close(fd);
    if (ok) return;
    if (fd == WS_STALE) ws_mark_relist(s, n);
    ws_drop(s, c, -1, 0);
}

/* A reported event: deliver it (unless it is watched for admit's sake
 * only), then follow a directory entry. */
static void report(struct wsync *s, int wd, const struct wev *e)
{
    if (e->mask & (WEV_REPORTED | s->extra)) ws_emit_at(s, e->mask, e->n, e->name, e->name_len, NULL);
    if (!e->subdir) return;
    if (e->mask & IN_MOVED_FROM) mover_mark(s, e->n, e->name, e->name_len, e->cookie);
    else if (e->mask & IN_MOVED_TO) moved_in(s, wd, e->n, e->name, e->name_len, e->cookie);
    else if (e->mask & IN_CREATE) new_dir(s, e->n, e->name, e->name_len);
    else if ((e->mask & IN_ATTRIB) && s->admit) readmit(s, e->n, e->name, e->name_len);
}

static void on_event(struct wsync *s, const struct inotify_event *ev)
{
    if (ws_bar_event(s, ev)) return;
    struct wev e;
    switch (wev_map(&s->t, ev, s->recursive, &e)) {
    case WEV_SKIP:
        return;
    case WEV_OVERFLOW:
        ws_emit(s, IN_Q_OVERFLOW, s->root, s->root_len, NULL);
        s->rebuild = 1;
        return;
    case WEV_ROOT_GONE:
        ws_root_gone(s, e.why);
        return;
    case WEV_FORGET:
        ws_drop(s, e.n, ev->wd, 1);
        return;
    case WEV_UNMOUNT:
        ws_emit_at(s, IN_Q_OVERFLOW, e.n, NULL, 0, "file system unmounted");
        return;
    case WEV_MOVED_OUT:
        ws_drop(s, e.n, -1, 0);
        return;
    case WEV_REPORT:
        report(s, ev->wd, &e);
        return;
    }
}

/* Handle one buffer of events. Returns 1 when an overflow has rebuilt the
 * tree: what follows it belongs to the old fd and is covered by the client's
 * re-listing. */
static int handle(struct wsync *s, ssize_t got)
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
    ws_bar_flush(s);
    return 0;
}

/* Read and handle what the kernel has queued, up to WSYNC_READS_PER_WAKE
 * reads (the fd is level-triggered: the rest wakes us again). */
void wsync_drain(struct wsync *s)
{
    for (int i = 0; i < WSYNC_READS_PER_WAKE && !s->halted && s->fd >= 0; i++) {
        ssize_t got = read(s->fd, s->rbuf, WSYNC_READ_BUF);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return;
            char msg[ERR_LEN];
            err_set(msg, "cannot read inotify events: %s", strerror(errno));
            end(s, WSYNC_FAILED, msg);
            return;
        }
        if (got == 0 || handle(s, got)) return;
    }
}

static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct wsync *s = io->data;
    wsync_drain(s);
    s->ops->drained(s->ctx);
}

/* ---- the front-end's calls ----------------------------------------------- */

struct wsync *wsync_new(const char *root, int recursive, const struct wsync_ops *ops, void *ctx, char *err)
{
    struct wsync *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->fd = -1;
    s->bar[0] = s->bar[1] = s->bar_wd = -1;
    s->root_len = strlen(root);
    s->root = malloc(s->root_len + 1);
    s->rbuf = malloc(WSYNC_READ_BUF);
    s->dents = malloc(WSYNC_DENTS_BUF);
    if (!s->root || !s->rbuf || !s->dents) goto oom;
    memcpy(s->root, root, s->root_len + 1);
    s->recursive = recursive;
    s->mask_create = 1;
    struct stat st;
    s->no_proc = stat("/proc/self/fd", &st) < 0; /* then watches go by path */
    ws_bar_init(s);
    s->ops = ops;
    s->ctx = ctx;
    buf_init(&s->path, WSYNC_PATH_MAX);
    ev_io_init(&s->io, on_readable, -1, EV_READ);
    s->io.data = s;
    return s;
oom:
    wsync_free(s);
    err_set(err, "out of memory");
    return NULL;
}

int wsync_start(struct wsync *s, struct ev_loop *loop, char *err)
{
    s->loop = loop;
    if (arm(s) < 0) {
        err_set(err, "%s", strerror(errno));
        return -1;
    }
    listen_fd(s);
    return 0;
}

void wsync_halt(struct wsync *s) { s->halted = 1; }

void wsync_set_extra(struct wsync *s, uint32_t events) { s->extra = events & WEV_OPTIONAL; }

void wsync_set_admit(struct wsync *s, wsync_admit_fn admit) { s->admit = admit; }

void wsync_free(struct wsync *s)
{
    if (!s) return;
    disarm(s);
    ws_bar_close(s);
    buf_free(&s->path);
    free(s->root);
    free(s->rbuf);
    free(s->dents);
    free(s->stack);
    free(s->relist);
    free(s);
}
