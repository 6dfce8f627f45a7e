/*
 * event.c - one inotify event against the watched tree (see event.h). The
 * order of the tests is the contract: an overflow first, then IN_IGNORED
 * (which settles the ledger), then the stale-wd check, then the directory's
 * own fate (unmount, rename), and only then the events a client sees.
 */
#include "inotify/tree/event.h"

#include <string.h>

static enum tree_event_kind ignored(struct tree_model *t, int wd, struct tree_event *out)
{
    if (tree_model_pend_take(t, wd)) return out->kind = TREE_EVENT_SKIP; /* a watch we removed */
    out->n = tree_model_by_wd(t, wd);
    if (!out->n) return out->kind = TREE_EVENT_SKIP;
    if (out->n == t->root) {
        out->why = "ROOT was deleted";
        return out->kind = TREE_EVENT_ROOT_GONE;
    }
    /* Deleted (empty by then) or unmounted: forget it and, after an unmount,
     * whatever was below it. */
    return out->kind = TREE_EVENT_FORGET;
}

/* IN_MOVE_SELF: the kernel queues it after the rename's IN_MOVED_TO, so a
 * directory still marked moving went somewhere we do not watch. */
static enum tree_event_kind moved_self(const struct tree_model *t, struct tree_event *out)
{
    if (out->n == t->root) {
        out->why = "ROOT was moved";
        return out->kind = TREE_EVENT_ROOT_GONE;
    }
    return out->kind = out->n->moving ? TREE_EVENT_MOVED_OUT : TREE_EVENT_SKIP;
}

enum tree_event_kind tree_event_map(struct tree_model *t, const struct inotify_event *ev, int recursive, struct tree_event *out)
{
    memset(out, 0, sizeof *out);
    out->mask = ev->mask;
    out->cookie = ev->cookie;
    if (ev->mask & IN_Q_OVERFLOW) return out->kind = TREE_EVENT_OVERFLOW;
    if (ev->mask & IN_IGNORED) return ignored(t, ev->wd, out);
    /* Events of a removed watch still in the queue: its path is stale. */
    if (tree_model_pend_due(t, ev->wd)) return out->kind = TREE_EVENT_SKIP;
    if (!(out->n = tree_model_by_wd(t, ev->wd))) return out->kind = TREE_EVENT_SKIP;
    if (ev->mask & IN_UNMOUNT) return out->kind = TREE_EVENT_UNMOUNT;
    if (ev->mask & IN_MOVE_SELF) return moved_self(t, out);
    if (!(ev->mask & (TREE_EVENT_REPORTED | (t->extra & TREE_EVENT_OPTIONAL)))) return out->kind = TREE_EVENT_SKIP;
    out->name = ev->name;
    out->name_len = ev->len ? strnlen(ev->name, ev->len) : 0;
    /* A watched directory's own attributes: its parent reports them too
     * (under its name), so this copy is skipped. */
    if (!(ev->mask & TREE_EVENT_REPORTED) && !out->name_len) return out->kind = TREE_EVENT_SKIP;
    out->subdir = recursive && (ev->mask & IN_ISDIR) && out->name_len;
    return out->kind = TREE_EVENT_REPORT;
}
