/*
 * tree.h - the watched tree, kept in step with the kernel: a service any
 * front-end (the `watch` mode, `serve`'s WatchDir) drives from the event loop.
 *
 * It watches ROOT and (recursive) every directory below it with one inotify
 * fd, watches each directory that appears (created or moved in) at once and
 * reports what it already holds as IN_CREATE, follows renames inside the tree,
 * forgets directories that leave it, and after a queue overflow starts over
 * with a fresh fd. Each event reaches the front-end as (mask, absolute path,
 * optional error) through the ops it supplies: how, when and where that is
 * written is the front-end's business; which directories below ROOT it may
 * look into, too (tree_set_admit). Never forks, never touches anything
 * under ROOT. Besides the inotify fd it holds a pipe of its own (two fds,
 * one watch): a mark it queues among the events, to know when the model is
 * in step with them (mark.c).
 *
 * Bounds owned here: TREE_READ_BUF bytes of events per read, TREE_MAX_NODES
 * directories, TREE_PATH_MAX bytes of one path (a longer one is `lost`). The
 * output buffer and its bound belong to the front-end.
 */
#ifndef SA_INOTIFY_TREE_TREE_H
#define SA_INOTIFY_TREE_TREE_H

#include <ev.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define TREE_READ_BUF (256 * 1024)
#define TREE_MAX_NODES (1u << 22)
#define TREE_PATH_MAX (16u * 1024 * 1024)

enum tree_end {
    TREE_ROOT_GONE, /* ROOT was deleted or moved, or cannot be watched again */
    TREE_FAILED,    /* reading the inotify fd failed */
};

struct tree_ops {
    /* One event: mask is the raw inotify mask (IN_ISDIR included); path is
     * len bytes, joined from ROOT as given. mask IN_Q_OVERFLOW means events
     * were lost (path ROOT, error NULL: the client must re-list) or, with an
     * error text, that `path` could not be watched or listed. */
    void (*event)(void *ctx, uint32_t mask, const char *path, size_t len, const char *error);
    /* An event could not be delivered: its path passed TREE_PATH_MAX, or the
     * paths of the directories below one that cannot be watched did. */
    void (*lost)(void *ctx);
    /* on 1: the tree is being rebuilt after an overflow; on 0: every watch is
     * in place again. Between the two only errors of the re-walk arrive, and
     * the front-end should hold them (and the overflow before them) back. */
    void (*settling)(void *ctx, int on);
    /* The queue has been read as far as one wake-up goes: a good time to write. */
    void (*drained)(void *ctx);
    /* The watch cannot go on (msg says why); the service has halted. Comes
     * after, for TREE_ROOT_GONE, an IN_Q_OVERFLOW event for ROOT with msg. */
    void (*end)(void *ctx, enum tree_end why, const char *msg);
};

struct tree;

/* A service for ROOT (copied) and, when recursive, every directory below it.
 * Nothing is watched yet. Returns NULL with a message in err (ERR_LEN bytes). */
struct tree *tree_new(const char *root, int recursive, const struct tree_ops *ops, void *ctx, char *err);
/* Once: watch ROOT and everything below it now. When this returns 0 every
 * directory is watched (what could not be was reported through ops->event)
 * and events are read from `loop`. Returns -1 when ROOT itself cannot be
 * watched, with the reason (strerror's text, no path: ROOT may be longer than
 * ERR_LEN) in err. */
int tree_start(struct tree *s, struct ev_loop *loop, char *err);
/* Before tree_start: inotify events to watch for beyond the reported ones,
 * TREE_EVENT_OPTIONAL bits only (others are ignored); they reach ops->event as the
 * others do. */
void tree_set_extra(struct tree *s, uint32_t events);
/* Before tree_start: ask admit(ctx, fd, st) before watching or listing
 * any directory below ROOT (fd: the directory, open; st: its fstat); 0
 * leaves it alone - never watched, never listed, nothing reported from
 * inside it - as though it could not be opened, but silently (its own
 * event in its parent is reported as ever). One the service itself may not
 * open (EACCES) is asked with fd -1 and its lstat: refused, it is left out
 * as silently; admitted, the failure is reported. ROOT itself is not asked. A
 * front-end that acts for someone else decides here what they may see.
 * Since a permission can change, admit is asked again on each IN_ATTRIB of
 * a subdirectory (watched for, reported only when asked for): one refused
 * now is forgotten with everything below it; one not watched and admitted
 * now is watched and listed, as a directory that appeared. Without a call
 * everything is admitted (the `watch` mode). */
typedef int (*tree_admit_fn)(void *ctx, int fd, const struct stat *st);
void tree_set_admit(struct tree *s, tree_admit_fn admit);
/* Handle what the kernel has queued now, without waiting. */
void tree_drain(struct tree *s);
/* Handle nothing more (safe from inside any op; the current step unwinds). */
void tree_halt(struct tree *s);
/* Stop reading, close the fd, free everything. NULL is fine. */
void tree_free(struct tree *s);

#endif
