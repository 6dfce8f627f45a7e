/*
 * wlist.c - the tree service's listings (see tree.h): what a directory that
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
