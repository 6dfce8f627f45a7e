/*
 * watch.c - `sandbox-agent watch ROOT RECURSIVE01 [TIMEOUT_SECONDS]`: report
 * file-system events under ROOT, one sentinel line each (PROTOCOL.md §4).
 *
 * A drop-in for the Python watcher program: same argv, same READY line, same
 * JSON lines byte for byte. Unlike it, nothing is lost silently: READY comes
 * only once every directory is watched; a directory that appears (created or
 * moved in) is watched at once and what it already holds is reported as
 * IN_CREATE; a queue overflow or a directory that cannot be watched is
 * reported; a renamed directory's events carry its new path, a directory that
 * left the tree is forgotten.
 *
 * Owns the inotify fd, the decisions of when a watch is added, moved or
 * dropped, and stdout. The tree bookkeeping is inotify/wtree.c, the line
 * format inotify/wline.c. Never forks, never touches anything under ROOT.
 *
 * Exit status: 0 at TIMEOUT, on SIGTERM/SIGINT or when stdout's reader has
 * gone; 2 usage; 3 ROOT cannot be watched (at start, or it was deleted or
 * moved away while watched); 1 stdout or the inotify fd failed otherwise.
 */
#include "inotify/watch/watch.h"
#include "inotify/watch/wline.h"
#include "inotify/tree/wtree.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <ev.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The events a client sees (PROTOCOL.md §4). */
#define WATCH_REPORTED (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_MODIFY | IN_CLOSE_WRITE)
/* Plus what the bookkeeping needs: a watched directory renamed or deleted.
 * IN_EXCL_UNLINK: a file written through an fd after its unlink would
 * otherwise be reported under the name it no longer has. */
#define WATCH_ROOT_FLAGS (WATCH_REPORTED | IN_MOVE_SELF | IN_DELETE_SELF | IN_EXCL_UNLINK)
/* Subdirectories: never through a symlink, never a non-directory. */
#define WATCH_SUB_FLAGS (WATCH_ROOT_FLAGS | IN_ONLYDIR | IN_DONT_FOLLOW)
#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE 0x10000000
#endif

/* Bounds. One read takes up to WATCH_READ_BUF bytes of events (about 8,000
 * small ones); a wake-up reads at most WATCH_READS_PER_WAKE times, so timers
 * and signals are not starved by a busy tree. Output is written once the
 * inotify fd is drained or WATCH_FLUSH_AT bytes are pending; it never holds
 * more than WATCH_OUT_MAX (only the initial walk, before READY, can approach
 * it; past it, one overflow line tells the client to re-list). The tree holds
 * at most WATCH_MAX_NODES directories, far above the kernel's default watch
 * limit. A directory listing is read WATCH_DENTS_BUF bytes at a time. */
#define WATCH_READ_BUF (256 * 1024)
#define WATCH_READS_PER_WAKE 16
#define WATCH_FLUSH_AT (64 * 1024)
#define WATCH_OUT_MAX (16u * 1024 * 1024)
#define WATCH_MAX_NODES (1u << 22)
#define WATCH_DENTS_BUF (64 * 1024)
/* Directory renames whose IN_MOVED_TO may still come: it follows its
 * IN_MOVED_FROM closely in the queue, so a short ring suffices; a rename that
 * falls off it is treated as a move out then in (re-watched and re-listed). */
#define WATCH_MOVERS 64
/* How often to check whether stdout's reader has gone when nothing happens. */
#define WATCH_STDOUT_CHECK 0.5

static const char watch_usage[] =
    "usage: " SA_NAME " watch ROOT RECURSIVE01 [TIMEOUT_SECONDS]\n"
    "\n"
    "Watch ROOT (and every directory below it when RECURSIVE01 is 1) with\n"
    "inotify. Prints " SENTINEL_WATCH_READY " once every directory is watched,\n"
    "then one " SENTINEL_WATCH "{\"mask\": M, \"path\": P} line per event.\n"
    "A line with mask 16384 (IN_Q_OVERFLOW) means events were lost: re-list;\n"
    "with an \"error\" key it names a directory that could not be watched.\n"
    "\n"
    "TIMEOUT_SECONDS empty or absent: watch until stdout closes, SIGTERM or SIGINT.\n"
    "\n"
    "exit status: 0 done, 2 usage, 3 ROOT cannot be watched (or was deleted or\n"
    "moved away), 1 stdout or inotify failed.\n";

struct watch {
    struct ev_loop *loop;
    int fd;
    int recursive;
    int mask_create;       /* kernel knows IN_MASK_CREATE (Linux 4.18) */
    const char *root;
    size_t root_len;
    struct wtree t;
    int have_tree;
    struct buf out;        /* pending stdout, bounded by WATCH_OUT_MAX */
    struct buf path;       /* scratch for one path */
    char *rbuf;            /* WATCH_READ_BUF */
    char *dents;           /* WATCH_DENTS_BUF */
    int *stack;            /* directories still to list, by wd */
    size_t stack_len, stack_cap;
    unsigned long removals;
    size_t relist_marks;   /* nodes with `relist` set */
    int *relist;           /* scratch: the marked nodes of a renamed subtree */
    size_t relist_cap;
    struct {
        uint32_t cookie;
        int wd;
    } movers[WATCH_MOVERS];
    unsigned mover_next;
    int ready;             /* READY is out: lines may be flushed as they come */
    int lost;              /* a line did not fit WATCH_OUT_MAX */
    int out_dead;          /* stdout failed: write nothing more */
    int rebuild;           /* an overflow: start over with a fresh inotify fd */
    int done;
    int rc;
    ev_io io;
    ev_timer timeout;
    ev_timer stdout_check;
    ev_signal sigterm, sigint;
};

static void finish(struct watch *w, int rc)
{
    if (!w->done) {
        w->done = 1;
        w->rc = rc;
    }
    ev_break(w->loop, EVBREAK_ALL);
}

static int write_out(struct watch *w)
{
    if (w->out.len == 0 || w->out_dead) {
        buf_reset(&w->out);
        return w->out_dead ? -1 : 0;
    }
    int r = io_write_all(STDOUT_FILENO, w->out.data, w->out.len);
    buf_reset(&w->out);
    if (r == 0) return 0;
    w->out_dead = 1;
    /* The client closing its end is how an untimed watch normally ends. */
    if (errno == EPIPE) {
        finish(w, 0);
    } else {
        log_error("watch: cannot write to stdout: %s", strerror(errno));
        finish(w, 1);
    }
    return -1;
}

static int flush_out(struct watch *w)
{
    if (write_out(w) < 0) return -1;
    if (w->lost) {
        /* Lines were dropped for want of buffer: the client must re-list. */
        w->lost = 0;
        wline_event(&w->out, IN_Q_OVERFLOW, w->root, w->root_len, "too many lines to buffer");
        return write_out(w);
    }
    return 0;
}

static void emit(struct watch *w, uint32_t mask, const char *path, size_t n, const char *error)
{
    if (w->out_dead) return;
    if (wline_event(&w->out, mask, path, n, error) < 0) w->lost = 1;
    if (w->ready && w->out.len >= WATCH_FLUSH_AT) flush_out(w);
}

static void emit_at(struct watch *w, uint32_t mask, const struct wnode *n, const char *name, size_t len,
                    const char *error)
{
    buf_reset(&w->path);
    if (wtree_path(&w->t, n, name, len, &w->path) < 0) {
        w->lost = 1;
        return;
    }
    emit(w, mask, w->path.data, w->path.len, error);
}

/* ---- dropping watches ---------------------------------------------------- */

struct drop_ctx {
    struct watch *w;
    int skip_wd;     /* this wd's watch is already gone in the kernel */
    int skip_pend;   /* ... and its IN_IGNORED has been read already */
};

static void drop_one(const struct wnode *n, void *p)
{
    struct drop_ctx *c = p;
    int wd = n->wd;
    c->w->removals++;
    if (n->relist) c->w->relist_marks--;
    if (wd == c->skip_wd) {
        if (c->skip_pend) return;
    } else {
        /* EINVAL when the kernel removed it first: its IN_IGNORED is then
         * still due all the same, exactly one either way. */
        inotify_rm_watch(c->w->fd, wd);
    }
    if (wtree_pend_add(&c->w->t, wd) < 0) log_warn("watch: out of memory tracking removed watches");
}

/* Forget n and everything below it. Their events still queued are recognised
 * by the IN_IGNORED due for each wd and dropped. */
static void drop(struct watch *w, struct wnode *n, int skip_wd, int skip_pend)
{
    struct drop_ctx c = {w, skip_wd, skip_pend};
    wtree_remove(&w->t, n, drop_one, &c);
}

static void root_gone(struct watch *w, const char *why)
{
    emit(w, IN_Q_OVERFLOW, w->root, w->root_len, why);
    log_error("watch: %s: %s", why, w->root);
    finish(w, EXIT_WATCH_ROOT);
}

/* ---- adding watches ------------------------------------------------------ */

/* Give node n the name (parent, name), making room for it. Returns 0, or -1
 * when that is impossible (a loop: the caller then forgets n). */
static int place(struct watch *w, struct wnode *n, struct wnode *parent, const char *name, size_t len)
{
    struct wnode *there = wtree_child(&w->t, parent, name, len);
    if (there == n) return 0;
    if (there) {
        if (wtree_is_ancestor(there, n)) return -1;
        /* Replaced (rename over an empty directory): the old one is gone. */
        drop(w, there, -1, 0);
    }
    return wtree_move(&w->t, n, parent, name, len);
}

/* Watch the directory `name` in parent. Returns its node and *is_new = 1 when
 * it was not watched before (the caller lists it), the existing node when the
 * kernel says the directory is watched already (found again under a new name:
 * it is moved there), or NULL: vanished (its parent reports that), not a
 * directory, or not watchable (reported, with the reason). */
static struct wnode *add_dir(struct watch *w, struct wnode *parent, const char *name, size_t len, int *is_new)
{
    *is_new = 0;
    buf_reset(&w->path);
    if (wtree_path(&w->t, parent, name, len, &w->path) < 0 || !buf_cstr(&w->path)) {
        w->lost = 1;
        return NULL;
    }
    const char *p = w->path.data;
    int existing = 0;
    int wd = inotify_add_watch(w->fd, p, WATCH_SUB_FLAGS | (w->mask_create ? IN_MASK_CREATE : 0));
    if (wd < 0 && errno == EINVAL && w->mask_create) {
        w->mask_create = 0; /* older kernel: cannot tell new from existing */
        wd = inotify_add_watch(w->fd, p, WATCH_SUB_FLAGS);
    }
    if (wd < 0 && errno == EEXIST) {
        existing = 1;
        wd = inotify_add_watch(w->fd, p, WATCH_SUB_FLAGS);
    }
    if (wd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            /* Gone already, or the path is stale: a directory above was
             * renamed after this event and before we got to it. Then the
             * parent's own path is gone too, and once the rename's events
             * give it its new name the parent must be listed again. */
            buf_reset(&w->path);
            struct stat st;
            if (!parent->relist && wtree_path(&w->t, parent, NULL, 0, &w->path) == 0 && buf_cstr(&w->path) &&
                lstat(w->path.data, &st) < 0 && parent != w->t.root) {
                parent->relist = 1;
                w->relist_marks++;
            }
            return NULL;
        }
        if (e == ELOOP) return NULL;
        char msg[160];
        snprintf(msg, sizeof msg, "cannot watch: %s%s", strerror(e),
                 e == ENOSPC ? " (inotify watch limit reached)" : "");
        emit(w, IN_Q_OVERFLOW, w->path.data, w->path.len, msg);
        return NULL;
    }
    struct wnode *old = wtree_by_wd(&w->t, wd);
    if (old && (existing || !w->mask_create)) {
        /* The same directory, already watched: under this name already (its
         * parent's listing and its IN_CREATE both found it), or renamed
         * without our seeing the pair of events. Never a loop (bind mounts). */
        if (old == w->t.root || wtree_is_ancestor(old, parent)) return NULL;
        if (place(w, old, parent, name, len) < 0) return NULL;
        old->moving = 0;
        return old;
    }
    if (old) {
        /* A fresh watch reusing the number of one the kernel has dropped (its
         * directory was deleted; the IN_IGNORED is still queued). */
        if (old == w->t.root) {
            inotify_rm_watch(w->fd, wd);
            root_gone(w, "ROOT was deleted");
            return NULL;
        }
        if (wtree_is_ancestor(old, parent)) {
            /* The parent itself is the dead one: nothing to attach to. */
            drop(w, old, wd, 0);
            inotify_rm_watch(w->fd, wd);
            wtree_pend_add(&w->t, wd);
            return NULL;
        }
        drop(w, old, wd, 0);
    }
    struct wnode *there = wtree_child(&w->t, parent, name, len);
    if (there) drop(w, there, -1, 0); /* a stale entry under the same name */
    struct wnode *n = wtree_add(&w->t, parent, name, len, wd);
    if (!n) {
        int e = errno;
        inotify_rm_watch(w->fd, wd);
        wtree_pend_add(&w->t, wd);
        char msg[160];
        if (e == ENOSPC)
            snprintf(msg, sizeof msg, "cannot watch: more than %u directories", (unsigned)WATCH_MAX_NODES);
        else
            snprintf(msg, sizeof msg, "cannot watch: out of memory");
        buf_reset(&w->path);
        if (wtree_path(&w->t, parent, name, len, &w->path) == 0)
            emit(w, IN_Q_OVERFLOW, w->path.data, w->path.len, msg);
        else
            w->lost = 1;
        return NULL;
    }
    *is_new = 1;
    return n;
}

static int push(struct watch *w, int wd)
{
    if (w->stack_len == w->stack_cap) {
        size_t cap = w->stack_cap ? w->stack_cap * 2 : 256;
        int *s = realloc(w->stack, cap * sizeof *s);
        if (!s) return -1;
        w->stack = s;
        w->stack_cap = cap;
    }
    w->stack[w->stack_len++] = wd;
    return 0;
}

struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* List one directory: report each entry as IN_CREATE when `report`, and (when
 * recursive) watch each subdirectory and queue it for listing in turn. The
 * watch is added before the listing, so whatever is created meanwhile is
 * either listed or reported by the watch: duplicates, never a gap. */
static int list_dir(struct watch *w, int wd, int report)
{
    struct wnode *n = wtree_by_wd(&w->t, wd);
    if (!n) return 0;
    buf_reset(&w->path);
    if (wtree_path(&w->t, n, NULL, 0, &w->path) < 0 || !buf_cstr(&w->path)) {
        w->lost = 1;
        return 0;
    }
    /* ROOT itself may be a symlink (followed, as the Python program did);
     * anything below is never followed. */
    /* The raw system call: musl's open() follows O_CLOEXEC with an fcntl
     * for kernels that predate it, one wasted call per directory. */
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, w->path.data,
                           O_RDONLY | O_DIRECTORY | O_CLOEXEC | (n == w->t.root ? 0 : O_NOFOLLOW));
    if (dfd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR || e == ELOOP) return -1;
        char msg[160];
        snprintf(msg, sizeof msg, "cannot list: %s", strerror(e));
        emit(w, IN_Q_OVERFLOW, w->path.data, w->path.len, msg);
        return 0;
    }
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, w->dents, WATCH_DENTS_BUF);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got < 0) {
                int e = errno;
                char msg[160];
                snprintf(msg, sizeof msg, "cannot list: %s", strerror(e));
                emit_at(w, IN_Q_OVERFLOW, n, NULL, 0, msg);
            }
            break;
        }
        for (long off = 0; off < got;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(w->dents + off);
            off += d->d_reclen;
            const char *name = d->d_name;
            if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
            size_t len = strlen(name);
            int isdir = d->d_type == DT_DIR;
            if (d->d_type == DT_UNKNOWN) {
                struct stat st;
                isdir = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
            }
            if (report) emit_at(w, IN_CREATE | (isdir ? IN_ISDIR : 0), n, name, len, NULL);
            if (!isdir || !w->recursive) continue;
            unsigned long before = w->removals;
            int is_new;
            struct wnode *c = add_dir(w, n, name, len, &is_new);
            if (c && is_new && push(w, c->wd) < 0) {
                emit_at(w, IN_Q_OVERFLOW, c, NULL, 0, "cannot list: out of memory");
            }
            if (w->removals != before && !(n = wtree_by_wd(&w->t, wd))) {
                close(dfd);
                return 0;
            }
            if (w->done) break;
        }
        if (w->done) break;
    }
    close(dfd);
    return 0;
}

/* Watch everything below `top` (already watched), listing depth-first with an
 * explicit stack: a deep tree cannot overflow the C stack. */
static void scan(struct watch *w, struct wnode *top, int report)
{
    size_t base = w->stack_len;
    if (push(w, top->wd) < 0) {
        emit_at(w, IN_Q_OVERFLOW, top, NULL, 0, "cannot list: out of memory");
        return;
    }
    while (w->stack_len > base && !w->done) list_dir(w, w->stack[--w->stack_len], report);
    w->stack_len = base;
}

/* After a rename inside the tree: list again, reporting what they hold, the
 * directories of the moved subtree where a subdirectory was missed because
 * its path went stale before the rename's events were read. */
static void relist_renamed(struct watch *w, struct wnode *top)
{
    if (!w->relist_marks) return;
    size_t k = 0;
    for (struct wnode *n = top; n;) {
        if (n->relist) {
            if (k == w->relist_cap) {
                size_t cap = w->relist_cap ? w->relist_cap * 2 : 16;
                int *r = realloc(w->relist, cap * sizeof *r);
                if (!r) break;
                w->relist = r;
                w->relist_cap = cap;
            }
            w->relist[k++] = n->wd;
        }
        /* Pre-order walk of top's subtree without recursion. */
        if (n->child) {
            n = n->child;
            continue;
        }
        while (n != top && !n->next) n = n->parent;
        n = n == top ? NULL : n->next;
    }
    for (size_t i = 0; i < k && !w->done; i++) {
        struct wnode *n = wtree_by_wd(&w->t, w->relist[i]);
        if (!n || !n->relist) continue;
        n->relist = 0;
        w->relist_marks--;
        size_t base = w->stack_len;
        if (list_dir(w, n->wd, 1) < 0) {
            /* Still stale: renamed again; the next rename's events retry. */
            if ((n = wtree_by_wd(&w->t, w->relist[i])) && !n->relist) {
                n->relist = 1;
                w->relist_marks++;
            }
            continue;
        }
        /* list_dir queued the new subdirectories: list them too. */
        while (w->stack_len > base && !w->done) list_dir(w, w->stack[--w->stack_len], 1);
        w->stack_len = base;
    }
}

/* A fresh inotify fd watching ROOT, and (recursive) every directory below.
 * Returns 0, or -1 with errno from watching ROOT itself. */
static int arm(struct watch *w, int before_ready)
{
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) return -1;
    int wd = inotify_add_watch(w->fd, w->root, WATCH_ROOT_FLAGS);
    if (wd < 0) {
        int e = errno;
        close(w->fd);
        w->fd = -1;
        errno = e;
        return -1;
    }
    if (wtree_init(&w->t, w->root, w->root_len, WATCH_MAX_NODES) < 0 || !wtree_add(&w->t, NULL, "", 0, wd)) {
        if (w->t.by_wd) wtree_free(&w->t);
        close(w->fd);
        w->fd = -1;
        errno = ENOMEM;
        return -1;
    }
    w->have_tree = 1;
    w->relist_marks = 0;
    w->mover_next = 0;
    memset(w->movers, 0, sizeof w->movers);
    if (before_ready && wline_ready(&w->out) < 0) w->lost = 1;
    if (w->recursive) scan(w, w->t.root, 0);
    return 0;
}

static void disarm(struct watch *w)
{
    if (w->fd >= 0) {
        ev_io_stop(w->loop, &w->io);
        close(w->fd);
        w->fd = -1;
    }
    if (w->have_tree) {
        wtree_free(&w->t);
        w->have_tree = 0;
    }
}

/* After an overflow our picture of the tree may be wrong (missed creations,
 * renames, IN_IGNOREDs), and the client re-lists anyway: start over rather
 * than patch. The overflow line is written after the new watches are in
 * place, so the client's re-listing cannot miss what changes meanwhile. */
static void rebuild(struct watch *w)
{
    disarm(w);
    /* Hold the overflow line back until every watch is in place. */
    w->ready = 0;
    int r = arm(w, 0);
    w->ready = 1;
    if (r < 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "ROOT cannot be watched again after an overflow: %s", strerror(errno));
        root_gone(w, msg);
        return;
    }
    ev_io_set(&w->io, w->fd, EV_READ);
    ev_io_start(w->loop, &w->io);
}

/* ---- events -------------------------------------------------------------- */

static struct wnode *mover_claim(struct watch *w, uint32_t cookie)
{
    for (unsigned i = 0; i < WATCH_MOVERS; i++) {
        if (!w->movers[i].cookie || w->movers[i].cookie != cookie) continue;
        struct wnode *n = wtree_by_wd(&w->t, w->movers[i].wd);
        w->movers[i].cookie = 0;
        if (n && n->moving && n->cookie == cookie) return n;
    }
    return NULL;
}

static void new_dir(struct watch *w, struct wnode *parent, const char *name, size_t len)
{
    int is_new;
    struct wnode *c = add_dir(w, parent, name, len, &is_new);
    if (c && is_new) scan(w, c, 1);
    else if (c) relist_renamed(w, c); /* found again under a new name */
}

static void on_event(struct watch *w, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW) {
        emit(w, IN_Q_OVERFLOW, w->root, w->root_len, NULL);
        w->rebuild = 1;
        return;
    }
    if (ev->mask & IN_IGNORED) {
        if (wtree_pend_take(&w->t, ev->wd)) return; /* a watch we removed */
        struct wnode *n = wtree_by_wd(&w->t, ev->wd);
        if (!n) return;
        if (n == w->t.root) {
            root_gone(w, "ROOT was deleted");
            return;
        }
        /* Deleted (empty by then) or unmounted: forget it and, after an
         * unmount, whatever was below it. */
        drop(w, n, ev->wd, 1);
        return;
    }
    /* Events of a removed watch still in the queue: its path is stale. */
    if (wtree_pend_due(&w->t, ev->wd)) return;
    struct wnode *n = wtree_by_wd(&w->t, ev->wd);
    if (!n) return;
    size_t len = ev->len ? strnlen(ev->name, ev->len) : 0;
    if (ev->mask & IN_UNMOUNT) {
        emit_at(w, IN_Q_OVERFLOW, n, NULL, 0, "file system unmounted");
        return;
    }
    if (ev->mask & IN_MOVE_SELF) {
        if (n == w->t.root) {
            root_gone(w, "ROOT was moved");
            return;
        }
        /* The kernel queues IN_MOVE_SELF after the rename's IN_MOVED_TO: still
         * marked moving, the directory went somewhere we do not watch. */
        if (n->moving) drop(w, n, -1, 0);
        return;
    }
    if (!(ev->mask & WATCH_REPORTED)) return;
    emit_at(w, ev->mask, n, ev->name, len, NULL);
    if (!w->recursive || !(ev->mask & IN_ISDIR) || !len) return;
    if (ev->mask & IN_MOVED_FROM) {
        struct wnode *c = wtree_child(&w->t, n, ev->name, len);
        if (c) {
            c->moving = 1;
            c->cookie = ev->cookie;
            w->movers[w->mover_next].cookie = ev->cookie;
            w->movers[w->mover_next].wd = c->wd;
            w->mover_next = (w->mover_next + 1) % WATCH_MOVERS;
        }
    } else if (ev->mask & IN_MOVED_TO) {
        struct wnode *m = ev->cookie ? mover_claim(w, ev->cookie) : NULL;
        if (m) {
            /* A rename inside the tree: the subtree keeps its watches; its
             * events carry the new path from here on. */
            if (place(w, m, n, ev->name, len) == 0) {
                m->moving = 0;
                relist_renamed(w, m);
                return;
            }
            drop(w, m, -1, 0);
            if (!(n = wtree_by_wd(&w->t, ev->wd))) return;
        }
        new_dir(w, n, ev->name, len); /* moved in from outside */
    } else if (ev->mask & IN_CREATE) {
        new_dir(w, n, ev->name, len);
    }
}

/* Read and handle what the kernel has queued, up to WATCH_READS_PER_WAKE
 * reads (the fd is level-triggered: the rest wakes us again). */
static void drain(struct watch *w)
{
    for (int i = 0; i < WATCH_READS_PER_WAKE && !w->done && w->fd >= 0; i++) {
        ssize_t got = read(w->fd, w->rbuf, WATCH_READ_BUF);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return;
            log_error("watch: cannot read inotify events: %s", strerror(errno));
            finish(w, 1);
            return;
        }
        if (got == 0) return;
        for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= got && !w->done;) {
            const struct inotify_event *ev = (const struct inotify_event *)(w->rbuf + off);
            off += (ssize_t)sizeof *ev + ev->len;
            on_event(w, ev);
            if (w->rebuild) {
                /* What follows the overflow in this buffer belongs to the old
                 * fd and is covered by the client's re-listing. */
                w->rebuild = 0;
                rebuild(w);
                return;
            }
        }
    }
}

static void on_inotify(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = io->data;
    drain(w);
    flush_out(w);
}

static void on_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = t->data;
    /* What happened before the deadline is still reported. */
    drain(w);
    flush_out(w);
    finish(w, w->done ? w->rc : 0);
}

static void on_stop_signal(struct ev_loop *loop, ev_signal *s, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = s->data;
    flush_out(w);
    finish(w, 0);
}

/* An idle untimed watch would never write, so never learn that its reader has
 * gone: ask the pipe directly. poll() with no events still reports POLLERR on
 * a pipe without readers and POLLHUP on a socket whose peer closed. */
static void on_stdout_check(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct watch *w = t->data;
    struct pollfd pf = {STDOUT_FILENO, 0, 0};
    if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP))) {
        w->out_dead = 1;
        finish(w, 0);
    }
}

/* ---- command line -------------------------------------------------------- */

/* Python's float(): surrounding whitespace allowed, "inf" and "nan" too. A
 * deadline already past (zero, negative, nan) ends the watch right after
 * READY, as the Python program's loop did. *forever for an infinite one. */
static int parse_timeout(const char *s, double *out, int *forever)
{
    char *end;
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    if (!*s) return -1;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s) return -1;
    while (*end == ' ' || (*end >= '\t' && *end <= '\r')) end++;
    if (*end) return -1;
    *forever = 0;
    if (isnan(d) || d < 0) d = 0;
    if (d > 1e9) *forever = 1; /* ~31 years, and libev's timers need finite */
    *out = d;
    return 0;
}

int watch_main(int argc, char **argv)
{
    const char *cerr = NULL;
    if (log_init(&cerr) < 0) {
        log_error("%s", cerr);
        return EXIT_USAGE;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(watch_usage, stdout);
        return 0;
    }
    if (argc < 3 || argc > 4) {
        log_error("watch: expected ROOT RECURSIVE01 [TIMEOUT_SECONDS] (see watch --help)");
        return EXIT_USAGE;
    }
    if (strcmp(argv[2], "0") && strcmp(argv[2], "1")) {
        log_error("watch: RECURSIVE01 must be 0 or 1, not '%s'", argv[2]);
        return EXIT_USAGE;
    }
    double timeout = 0;
    int forever = 1;
    if (argc == 4 && argv[3][0] && parse_timeout(argv[3], &timeout, &forever) < 0) {
        log_error("watch: TIMEOUT_SECONDS must be a number of seconds or empty, not '%s'", argv[3]);
        return EXIT_USAGE;
    }

    /* A closed stdout must be an EPIPE we end on cleanly, not our death. */
    signal(SIGPIPE, SIG_IGN);

    static struct watch w; /* static: large and single; zeroed */
    memset(&w, 0, sizeof w);
    w.fd = -1;
    w.root = argv[1];
    w.root_len = strlen(argv[1]);
    w.recursive = argv[2][0] == '1';
    w.mask_create = 1;
    buf_init(&w.out, WATCH_OUT_MAX);
    buf_init(&w.path, WATCH_OUT_MAX);
    w.rbuf = malloc(WATCH_READ_BUF);
    w.dents = malloc(WATCH_DENTS_BUF);
    w.loop = ev_default_loop(EVFLAG_AUTO);
    int rc;
    if (!w.rbuf || !w.dents || !w.loop) {
        log_error("watch: out of memory");
        rc = 1;
        goto out;
    }
    if (arm(&w, 1) < 0) {
        log_error("watch: cannot watch %s: %s", w.root, strerror(errno));
        rc = EXIT_WATCH_ROOT;
        goto out;
    }
    /* Only now is every directory watched: READY (already first in the
     * buffer) and whatever could not be watched go out together. */
    w.ready = 1;
    if (flush_out(&w) < 0 || w.done) {
        rc = w.rc;
        goto out;
    }

    ev_io_init(&w.io, on_inotify, w.fd, EV_READ);
    w.io.data = &w;
    ev_io_start(w.loop, &w.io);
    if (!forever) {
        ev_timer_init(&w.timeout, on_timeout, timeout, 0);
        w.timeout.data = &w;
        ev_timer_start(w.loop, &w.timeout);
    }
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        ev_timer_init(&w.stdout_check, on_stdout_check, WATCH_STDOUT_CHECK, WATCH_STDOUT_CHECK);
        w.stdout_check.data = &w;
        ev_timer_start(w.loop, &w.stdout_check);
    }
    ev_signal_init(&w.sigterm, on_stop_signal, SIGTERM);
    ev_signal_init(&w.sigint, on_stop_signal, SIGINT);
    w.sigterm.data = w.sigint.data = &w;
    ev_signal_start(w.loop, &w.sigterm);
    ev_signal_start(w.loop, &w.sigint);

    ev_run(w.loop, 0);
    flush_out(&w);
    rc = w.done ? w.rc : 0;

    ev_signal_stop(w.loop, &w.sigterm);
    ev_signal_stop(w.loop, &w.sigint);
    ev_timer_stop(w.loop, &w.stdout_check);
    if (!forever) ev_timer_stop(w.loop, &w.timeout);
out:
    disarm(&w);
    buf_free(&w.out);
    buf_free(&w.path);
    free(w.rbuf);
    free(w.dents);
    free(w.stack);
    free(w.relist);
    return rc;
}
