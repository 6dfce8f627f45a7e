/*
 * filesystem_watch.h - one watched directory of the filesystem API: the watcher
 * service (inotify/tree/tree.h) with envd's events on top, shared by
 * WatchDir's stream (filesystem_watch.c) and the polling watchers (filesystem/watchers.c).
 *
 * Events become FilesystemEvent objects {"name": path relative to the
 * watched directory, "type": "EVENT_TYPE_...", "entry": EntryInfo when asked
 * and the entry is still there}: IN_CREATE and IN_MOVED_TO are CREATE,
 * IN_MODIFY WRITE, IN_DELETE REMOVE, IN_MOVED_FROM RENAME, IN_ATTRIB CHMOD,
 * as envd's fsnotify reports them. The file service's temporary files are
 * not reported; an atomic write's rename into place is reported as envd's
 * in-place write shows: CREATE, CHMOD, WRITE for a new file, CHMOD, WRITE
 * for one overwritten. Everything that is not an event is a problem, never
 * dropped: events lost (the kernel's queue overflowed, or a path too long),
 * a directory below that could not be watched, and the end (the watched
 * directory deleted or moved, inotify failing).
 *
 * The directory is checked as the request's user in a helper (it exists, is
 * a directory the user may open - and search, for a recursive watch or one
 * with entries - not on a network filesystem unless asked); the inotify
 * watches themselves are the agent's, in the loop, as root. So that they
 * show no more than the user could see, a directory below is watched and
 * listed only when the user may read and search it (asuser/perm.h: its
 * ancestors inside the watch were admitted the same way, so that is what
 * the user's own opendir would say), asked again when its attributes
 * change; one refused is left out silently, as `ls -R` leaves it out, and
 * never a hole. An entry is built from what the user could see
 * (filesystem_entry_stat_json_as).
 */
#ifndef SA_API_FILESYSTEM_WATCH_H
#define SA_API_FILESYSTEM_WATCH_H

#include "agent/api/connect/connect.h"
#include "agent/api/filesystem/entry.h"
#include "agent/api/asuser/perm.h"
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/filesystem/request.h"
#include "agent/core/buf.h"

#include <ev.h>
#include <stdint.h>

struct filesystem_watch;

#define FSWATCH_MOVED_SLOTS 8

enum filesystem_watch_problem {
    FSWATCH_LOST,    /* events were lost: list again */
    FSWATCH_HOLE,    /* a directory below could not be watched (msg names it) */
    FSWATCH_END,     /* the watch is over (code, msg) */
};

struct filesystem_watch_ops {
    /* One FilesystemEvent object, n bytes of JSON. */
    void (*event)(struct filesystem_watch *w, const char *json, size_t n);
    void (*problem)(struct filesystem_watch *w, enum filesystem_watch_problem p, enum rpc_code code, const char *msg);
};

struct filesystem_watch {
    const struct filesystem_watch_ops *ops;
    void *owner;
    struct tree *sync;
    char *root;
    size_t root_len;
    int include_entry;
    struct asuser_who *who;  /* the request's user; NULL for root (everything) */
    int halted;
    struct user_names names;
    struct buf scratch;      /* one event's JSON */
    char *gone;              /* why the root went, until the end says it */
    /* Atomic writes' temporary files renamed away (IN_MOVED_FROM), until
     * the IN_MOVED_TO of their targets: a hash of the directory and the
     * target's name the temporary name carries (0: a free slot), and the
     * kind (enum files_tmp_kind). A few, for renames in other directories of
     * a recursive watch that come between the two halves of one. */
    struct {
        uint64_t key;
        int kind;
    } moved[FSWATCH_MOVED_SLOTS];
    unsigned moved_next;
    ev_timer free_w;
    int freed;               /* the watch part is gone */
    void (*free_owner)(void *owner);
    struct filesystem_watch *prev, *next; /* the live watches (filesystem_watch_settle) */
};

/* Watch root (absolute) from the loop for user (what it may see). Returns
 * 0, or -1 with a message in err (nothing to free then). */
int filesystem_watch_start(struct filesystem_watch *w, const char *root, int recursive, int include_entry,
                  const struct user_info *user, const struct filesystem_watch_ops *ops, void *owner, char *err);
/* Report nothing more and free the watch from the loop, after whatever is
 * running now has returned; then free_owner(owner) when it is not NULL. A
 * second call (the watch already stopped) only frees the owner. */
void filesystem_watch_release(struct filesystem_watch *w, void (*free_owner)(void *owner));

/* Handle what the kernel has queued for every live watch now, without
 * waiting: called before a change made through the API is answered (and
 * before GetWatcherEvents answers), so a client that acts on the answer
 * finds the change's events reported and a directory it made watched. */
void filesystem_watch_settle(void);

/* Check the directory of a WatchDir or CreateWatcher request as its user,
 * then run then(op, code, message) in the loop (code 0: go ahead; op->path
 * is the directory, op->recursive and op->include_entry as asked). Returns
 * 0, or -1 after failing the call. */
int filesystem_watch_check(struct rpc_call *call, const cJSON *msg,
                  void (*then)(struct filesystem_op *op, int32_t code, const char *data, size_t n));

#endif
