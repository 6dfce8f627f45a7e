/*
 * mark.c - the tree service's barrier (see tree_priv.h): a mark put into the
 * inotify queue, so that the service knows when it has read everything
 * queued before a given moment.
 *
 * Why: a rename's events name the old and the new place; the node renamed is
 * the one the model holds at the old place, which is right while the model
 * is in step with the events read so far. It is not in step for a directory
 * placed by looking at the file system (watched when it appeared, found
 * again under a new name, or a rename checked by inode): the look saw the
 * tree as it is now, and events from before it may still be queued. Such a
 * node needs the barrier written after the look; once that is read, every
 * event still to come happened after the look, and the node's renames are
 * followed from the events alone, with no system call (watch.c). Until then
 * they are checked by inode as before.
 *
 * The mark: one byte written to a pipe of our own, watched for IN_MODIFY
 * through /proc/self/fd; inotify queues it behind everything before. At most
 * one is in flight, so the kernel never merges two. Without /proc, or when
 * the pipe or its watch cannot be had, there is none, and every rename is
 * checked by inode; the same once the inotify watch limit is reached, where
 * its watch is given up for a directory's.
 */
#include "inotify/tree/tree_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/* Never reached: a node that can only be followed by inode. */
#define BAR_NEVER ULONG_MAX

void tree_mark_init(struct tree *s)
{
    if (s->no_proc || pipe2(s->bar, O_CLOEXEC | O_NONBLOCK) < 0) s->bar[0] = s->bar[1] = -1;
}

void tree_mark_close(struct tree *s)
{
    for (int i = 0; i < 2; i++)
        if (s->bar[i] >= 0) close(s->bar[i]);
    s->bar[0] = s->bar[1] = -1;
    s->bar_wd = -1;
}

static void bar_empty(struct tree *s)
{
    char b[16];
    while (read(s->bar[0], b, sizeof b) > 0) {
    }
}

void tree_mark_arm(struct tree *s)
{
    s->bar_sent = s->bar_done = 0;
    s->bar_want = 0;
    s->bar_wd = -1;
    if (s->bar[1] < 0 || s->no_proc) return;
    bar_empty(s); /* a mark still unread on the previous inotify fd */
    char p[40];
    snprintf(p, sizeof p, "/proc/self/fd/%d", s->bar[1]);
    s->bar_wd = inotify_add_watch(s->fd, p, IN_MODIFY);
}

int tree_mark_sure(const struct tree *s, const struct tree_node *n)
{
    return n == s->t.root || n->sure_at <= s->bar_done;
}

void tree_mark_need(struct tree *s, struct tree_node *n)
{
    if (n == s->t.root) return;
    if (s->bar_wd < 0) {
        n->sure_at = BAR_NEVER;
        return;
    }
    /* One in flight was written before the look: the next one it must be. */
    n->sure_at = s->bar_sent + 1;
    s->bar_want = 1;
}

void tree_mark_flush(struct tree *s)
{
    if (!s->bar_want || s->bar_sent != s->bar_done || s->bar_wd < 0) return;
    ssize_t r;
    do r = write(s->bar[1], "", 1);
    while (r < 0 && errno == EINTR);
    if (r == 1) {
        s->bar_sent++;
        s->bar_want = 0;
        return;
    }
    tree_mark_drop(s); /* never expected: the pipe holds one byte at most */
}

int tree_mark_drop(struct tree *s)
{
    if (s->bar_wd < 0) return 0;
    inotify_rm_watch(s->fd, s->bar_wd);
    tree_model_pend_add(&s->t, s->bar_wd); /* its IN_IGNORED is then skipped */
    s->bar_wd = -1;
    return 1;
}

int tree_mark_event(struct tree *s, const struct inotify_event *ev)
{
    if (s->bar_wd < 0 || ev->wd != s->bar_wd) return 0;
    if (ev->mask & IN_MODIFY) {
        bar_empty(s);
        s->bar_done = s->bar_sent;
    }
    return 1;
}
