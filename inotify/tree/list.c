/*
 * list.c - the tree service's listings (see tree.h): what a directory that
 * appeared already holds, reported as IN_CREATE, each subdirectory watched
 * before it is listed in turn; the initial walk (which reports nothing); and
 * re-listing the parts of a renamed subtree whose paths went stale.
 *
 * The watch is added before the listing, so whatever is created meanwhile is
 * either listed or reported by the watch: duplicates, never a gap. Depth-first
 * with an explicit stack: a deep tree cannot overflow the C stack.
 *
 * A listing is reported under the directory's path only while that path
 * still names it (checked before each batch of entries is reported): the
 * events that rename it may still be unread, and its entries must not be
 * reported under a name it no longer has. A listing cut short that way is
 * marked, and done again once the rename's events give it its new name.
 *
 * A directory that appeared is listed once the events of the drain that
 * announced it are handled (tree_list_later): its siblings are watched
 * first. One that cannot be watched is named, and so is every directory
 * below it, found by listing it without watches (tree_list_unwatched).
 */
#include "inotify/tree/tree_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int push(struct tree *s, int wd)
{
    if (s->stack_len == s->stack_cap) {
        size_t cap = s->stack_cap ? s->stack_cap * 2 : 256;
        int *st = realloc(s->stack, cap * sizeof *st);
        if (!st) return -1;
        s->stack = st;
        s->stack_cap = cap;
    }
    s->stack[s->stack_len++] = wd;
    return 0;
}

static void cannot_list(struct tree *s, const struct tree_node *n, int e)
{
    char msg[160];
    snprintf(msg, sizeof msg, "cannot list: %s", strerror(e));
    tree_emit_at(s, IN_Q_OVERFLOW, n, NULL, 0, msg);
}

/* Open n for listing (ROOT may be a symlink, followed as the Python program
 * did; anything below never is). Returns the fd, -1 (reported), or TREE_PROBE_STALE:
 * the path is gone or names another directory now (marked for listing again). */
static int open_dir(struct tree *s, struct tree_node *n)
{
    int dfd = tree_probe_open_node(s, n);
    if (dfd == TREE_PROBE_STALE) tree_probe_mark_relist(s, n);
    else if (dfd < 0 && errno == ENAMETOOLONG) s->ops->lost(s->ctx);
    else if (dfd < 0) cannot_list(s, n, errno);
    return dfd;
}

/* One entry `name` of the directory wd (*n, open as dfd). Returns 0 to go on,
 * 1 when wd itself has been dropped meanwhile (*n is then gone). */
static int list_entry(struct tree *s, int dfd, int wd, struct tree_node **n, const struct linux_dirent64 *d,
                      int report)
{
    const char *name = d->d_name;
    size_t len = strlen(name);
    int isdir = d->d_type == DT_DIR;
    if (d->d_type == DT_UNKNOWN) {
        struct stat st;
        isdir = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (report) tree_emit_at(s, IN_CREATE | (isdir ? IN_ISDIR : 0), *n, name, len, NULL);
    if (!isdir || !s->recursive) return 0;
    unsigned long before = s->removals;
    int is_new;
    struct tree_node *c = tree_watch_add_dir(s, *n, dfd, name, len, &is_new, NULL);
    if (c && is_new && push(s, c->wd) < 0) tree_emit_at(s, IN_Q_OVERFLOW, c, NULL, 0, "cannot list: out of memory");
    return s->removals != before && !(*n = tree_model_by_wd(&s->t, wd));
}

static int is_dot(const char *name) { return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])); }

/* List one directory (open as dfd, taken; or -1 to open it): report each
 * entry as IN_CREATE when `report`, and (when recursive) watch each
 * subdirectory and queue it for listing in turn. A path gone or stale marks
 * the directory for listing again (tree_probe_mark_relist). */
static void list_dir(struct tree *s, int wd, int dfd, int report)
{
    struct tree_node *n = tree_model_by_wd(&s->t, wd);
    if (!n) {
        if (dfd >= 0) close(dfd);
        return;
    }
    if (dfd < 0 && (dfd = open_dir(s, n)) < 0) return;
    while (!s->halted) {
        long got = syscall(SYS_getdents64, dfd, s->dents, TREE_DENTS_BUF);
        if (got < 0 && errno == EINTR) continue;
        /* ENOENT: deleted since it was opened (its IN_IGNORED follows). */
        if (got < 0 && errno != ENOENT) cannot_list(s, n, errno);
        if (got <= 0) break;
        if (report && !tree_probe_path_holds(s, n)) {
            tree_probe_mark_relist(s, n); /* renamed meanwhile: listed again under its new name */
            break;
        }
        for (long off = 0; off < got && !s->halted;) {
            const struct linux_dirent64 *d = (const struct linux_dirent64 *)(s->dents + off);
            off += d->d_reclen;
            if (is_dot(d->d_name)) continue;
            if (list_entry(s, dfd, wd, &n, d, report)) goto out;
        }
    }
out:
    close(dfd);
}

/* List what the stack holds above base, then leave it at base. */
static void list_stacked(struct tree *s, size_t base, int report)
{
    while (s->stack_len > base && !s->halted) list_dir(s, s->stack[--s->stack_len], -1, report);
    s->stack_len = base;
}

/* Watch everything below `top` (already watched; open as fd, or -1). */
void tree_list_scan(struct tree *s, struct tree_node *top, int fd, int report)
{
    size_t base = s->stack_len;
    list_dir(s, top->wd, fd, report);
    list_stacked(s, base, report);
}

/* What waits at the bottom of the stack: every listing above it (scan,
 * renamed) leaves the stack as it found it. The events of one drain are
 * handled before any of it is listed, so a burst that outran the watcher
 * has every directory it announced watched before a watch is spent on
 * what one of them holds (else, at the watch limit, the first listed could
 * take every watch left, and its siblings would not be watched). */
void tree_list_later(struct tree *s, struct tree_node *n)
{
    if (push(s, n->wd) < 0) tree_list_scan(s, n, -1, 1); /* no room to wait: now */
}

void tree_list_announced(struct tree *s) { list_stacked(s, 0, 1); }

/* The wds of the nodes with `relist` set in top's subtree, into s->relist
 * (as many as memory allows). Returns how many. */
static size_t collect_marks(struct tree *s, struct tree_node *top)
{
    size_t k = 0;
    for (struct tree_node *n = top; n;) {
        if (n->relist) {
            if (k == s->relist_cap) {
                size_t cap = s->relist_cap ? s->relist_cap * 2 : 16;
                int *r = realloc(s->relist, cap * sizeof *r);
                if (!r) break;
                s->relist = r;
                s->relist_cap = cap;
            }
            s->relist[k++] = n->wd;
        }
        /* Pre-order walk of top's subtree without recursion. */
        if (n->child) {
            n = n->child;
            continue;
        }
        while (n != top && !n->next) n = n->parent;
        n = n == top ? NULL : n->next;
    }
    return k;
}

/* After a rename inside the tree: list again, reporting what they hold, the
 * directories of the moved subtree where a subdirectory was missed because
 * its path went stale before the rename's events were read. */
void tree_list_renamed(struct tree *s, struct tree_node *top)
{
    if (!s->relist_marks) return;
    size_t k = collect_marks(s, top);
    for (size_t i = 0; i < k && !s->halted; i++) {
        struct tree_node *n = tree_model_by_wd(&s->t, s->relist[i]);
        if (!n || !n->relist) continue;
        n->relist = 0;
        s->relist_marks--;
        /* Still stale (renamed again): marked again, the next rename retries.
         * What it queued (its new subdirectories) is listed too. */
        size_t base = s->stack_len;
        list_dir(s, n->wd, -1, 1);
        list_stacked(s, base, 1);
    }
}

/* ---- directories that cannot be watched ---------------------------------- */

/* An unwatched directory still to name and list: its path relative to the
 * one that could not be watched, then this tail (the last entry is found
 * from the end of the stack). */
struct hole {
    dev_t dev;
    ino_t ino;
    size_t len;
};

struct holes {
    struct tree *s;
    const struct tree_node *parent; /* the unwatched directory is (parent, name) */
    const char *name;
    size_t name_len;
    int top;                        /* it, open */
    const char *msg;
    struct buf todo;                /* the stack of holes, bounded by TREE_PATH_MAX */
    struct buf rel;                 /* the one at hand */
    struct buf path;                /* name/rel, as reported */
    char *dents;
};

/* Report the directory rel[0..n) below the unwatched one. */
static void hole_report(struct holes *h, const char *rel, size_t n)
{
    buf_reset(&h->path);
    if (buf_append(&h->path, h->name, h->name_len) < 0 || buf_putc(&h->path, '/') < 0 ||
        buf_append(&h->path, rel, n) < 0) {
        h->s->ops->lost(h->s->ctx);
        return;
    }
    tree_emit_at(h->s, IN_Q_OVERFLOW, h->parent, h->path.data, h->path.len, h->msg);
}

/* The subdirectories of dfd (h->rel below the unwatched one), onto the
 * stack. Returns 0, or -1 when the stack is full. */
static int hole_push_subdirs(struct holes *h, int dfd)
{
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, h->dents, TREE_DENTS_BUF);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0; /* an error: what it holds cannot be known */
        for (long off = 0; off < got;) {
            const struct linux_dirent64 *d = (const struct linux_dirent64 *)(h->dents + off);
            off += d->d_reclen;
            struct stat st;
            if (is_dot(d->d_name) || (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN) ||
                fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                continue;
            struct hole t = {st.st_dev, st.st_ino, h->rel.len + (h->rel.len ? 1 : 0) + strlen(d->d_name)};
            size_t mark = h->todo.len;
            if ((h->rel.len && (buf_append(&h->todo, h->rel.data, h->rel.len) < 0 || buf_putc(&h->todo, '/') < 0)) ||
                buf_puts(&h->todo, d->d_name) < 0 || buf_append(&h->todo, &t, sizeof t) < 0) {
                h->todo.len = mark;
                return -1;
            }
        }
    }
}

/* Pop the last hole into h->rel (NUL-terminated). Returns 1, 0 when none
 * is left, -1 when it does not fit. */
static int hole_pop(struct holes *h, struct hole *t)
{
    if (h->todo.len < sizeof *t) return 0;
    memcpy(t, h->todo.data + h->todo.len - sizeof *t, sizeof *t);
    h->todo.len -= sizeof *t + t->len;
    buf_reset(&h->rel);
    return buf_append(&h->rel, h->todo.data + h->todo.len, t->len) == 0 && buf_cstr(&h->rel) ? 1 : -1;
}

/* One hole: gone or replaced since it was listed is left (no directory of
 * that name is watched or named anyway: its parent is not watched);
 * refused by admit, silent with what it holds; else reported and listed. */
static int hole_visit(struct holes *h, const struct hole *t)
{
    struct stat st;
    int fd = tree_probe_open_found(h->top, h->rel.data, t->dev, t->ino, &st);
    if (fd == TREE_PROBE_STALE) return 0;
    if (fd < 0) { /* named all the same, unless admit would refuse it */
        if (errno != EACCES || !tree_probe_refused(h->s, h->top, h->rel.data)) hole_report(h, h->rel.data, h->rel.len);
        return 0;
    }
    int r = 0;
    if (!h->s->admit || h->s->admit(h->s->ctx, fd, &st)) {
        hole_report(h, h->rel.data, h->rel.len);
        r = hole_push_subdirs(h, fd);
    }
    close(fd);
    return r;
}

void tree_list_unwatched(struct tree *s, const struct tree_node *parent, const char *name, size_t len, int fd,
                         const char *msg)
{
    tree_emit_at(s, IN_Q_OVERFLOW, parent, name, len, msg);
    struct holes h = {s, parent, name, len, fd, msg, {0}, {0}, {0}, malloc(TREE_DENTS_BUF)};
    buf_init(&h.todo, TREE_PATH_MAX);
    buf_init(&h.rel, TREE_PATH_MAX);
    buf_init(&h.path, TREE_PATH_MAX);
    /* Depth first, an explicit stack of paths: no fd held per level. A
     * stack that cannot hold what is below is said (lost: re-list). */
    int full = !h.dents || hole_push_subdirs(&h, fd) < 0, got;
    struct hole t;
    while (!full && !s->halted && (got = hole_pop(&h, &t)) != 0) full = got < 0 || hole_visit(&h, &t) < 0;
    if (full && !s->halted) s->ops->lost(s->ctx);
    free(h.dents);
    buf_free(&h.todo);
    buf_free(&h.rel);
    buf_free(&h.path);
}
