/*
 * wevent.c - one inotify event against the watched tree (see wevent.h). The
 * order of the tests is the contract: an overflow first, then IN_IGNORED
 * (which settles the ledger), then the stale-wd check, then the directory's
 * own fate (unmount, rename), and only then the events a client sees.
 */
#include "inotify/tree/wevent.h"

#include <string.h>

static enum wev_kind ignored(struct wtree *t, int wd, struct wev *out)
{
    if (wtree_pend_take(t, wd)) return out->kind = WEV_SKIP; /* a watch we removed */
    out->n = wtree_by_wd(t, wd);
    if (!out->n) return out->kind = WEV_SKIP;
    if (out->n == t->root) {
        out->why = "ROOT was deleted";
        return out->kind = WEV_ROOT_GONE;
    }
    /* Deleted (empty by then) or unmounted: forget it and, after an unmount,
     * whatever was below it. */
    return out->kind = WEV_FORGET;
}

/* IN_MOVE_SELF: the kernel queues it after the rename's IN_MOVED_TO, so a
 * directory still marked moving went somewhere we do not watch. */
static enum wev_kind moved_self(const struct wtree *t, struct wev *out)
{
    if (out->n == t->root) {
        out->why = "ROOT was moved";
        return out->kind = WEV_ROOT_GONE;
    }
    return out->kind = out->n->moving ? WEV_MOVED_OUT : WEV_SKIP;
}

enum wev_kind wev_map(struct wtree *t, const struct inotify_event *ev, int recursive, struct wev *out)
{
    memset(out, 0, sizeof *out);
    out->mask = ev->mask;
    out->cookie = ev->cookie;
    if (ev->mask & IN_Q_OVERFLOW) return out->kind = WEV_OVERFLOW;
    if (ev->mask & IN_IGNORED) return ignored(t, ev->wd, out);
    /* Events of a removed watch still in the queue: its path is stale. */
    if (wtree_pend_due(t, ev->wd)) return out->kind = WEV_SKIP;
    if (!(out->n = wtree_by_wd(t, ev->wd))) return out->kind = WEV_SKIP;
    if (ev->mask & IN_UNMOUNT) return out->kind = WEV_UNMOUNT;
    if (ev->mask & IN_MOVE_SELF) return moved_self(t, out);
    if (!(ev->mask & (WEV_REPORTED | (t->extra & WEV_OPTIONAL)))) return out->kind = WEV_SKIP;
    out->name = ev->name;
    out->name_len = ev->len ? strnlen(ev->name, ev->len) : 0;
    /* A watched directory's own attributes: its parent reports them too
     * (under its name), so this copy is skipped. */
    if (!(ev->mask & WEV_REPORTED) && !out->name_len) return out->kind = WEV_SKIP;
    out->subdir = recursive && (ev->mask & IN_ISDIR) && out->name_len;
    return out->kind = WEV_REPORT;
}
