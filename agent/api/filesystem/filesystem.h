/*
 * filesystem.h - the filesystem.Filesystem service of the API (README
 * "sandbox-agent serve", the filesystem API): the handlers of the RPC table
 * (routes.c) over the file service (agent/files) and the watcher service
 * (inotify/tree), every operation in a helper process as the request's user.
 *
 *   filesystem/filesystem.c      Stat, MakeDir, Move, Remove, ListDir: a request decoded,
 *                its user and paths resolved, the operation in a helper
 *                (asuser_job.h), its reply relayed; errno to Connect codes
 *   filesystem/listdir.c  ListDir's walk, in the helper
 *   filesystem_watch.c    WatchDir (a server stream) and the polling watchers
 *                CreateWatcher, GetWatcherEvents, RemoveWatcher
 */
#ifndef SA_API_FILESYSTEM_FILESYSTEM_H
#define SA_API_FILESYSTEM_FILESYSTEM_H

#include "agent/api/connect/connect.h"
#include "agent/api/filesystem/entry.h"
#include "agent/api/connect/rpc.h"
#include "agent/core/buf.h"
#include "agent/core/protocol.h"
#include "agent/core/user.h"

#include <cJSON.h>

/* A reply (or a listing) larger than this is refused (resource_exhausted):
 * the bound of any unary response. */
#define FILESYSTEM_REPLY_MAX (SERVE_BODY_MAX - 64)

/* The handlers (connect/rpc.h). */
void filesystem_stat(struct rpc_call *call, const cJSON *msg);
void filesystem_make_dir(struct rpc_call *call, const cJSON *msg);
void filesystem_move(struct rpc_call *call, const cJSON *msg);
void filesystem_list_dir(struct rpc_call *call, const cJSON *msg);
void filesystem_remove(struct rpc_call *call, const cJSON *msg);
void filesystem_watchdir(struct rpc_call *call, const cJSON *msg);
void filesystem_watchers_create(struct rpc_call *call, const cJSON *msg);
void filesystem_watchers_get_events(struct rpc_call *call, const cJSON *msg);
void filesystem_watchers_remove(struct rpc_call *call, const cJSON *msg);

/* The request's user, or -1 after failing the call (unauthenticated for an
 * unknown user, as envd; permission_denied when the agent cannot become it). */
int filesystem_user(struct rpc_call *call, struct user_info *u);

/* A unary operation in a helper. The child runs fn(op) and replies with
 * asuser_job_reply(code, json or message). The caller fills op (calloc'd, freed
 * here) before filesystem_run. */
struct filesystem_op;
typedef int32_t (*filesystem_child_fn)(struct filesystem_op *op, struct buf *out);
struct filesystem_op {
    struct rpc_call *call;
    struct asuser_job *job;
    struct user_info user;
    filesystem_child_fn fn;
    int read_only;          /* a cancelled call may kill the helper */
    char *path, *path2;     /* resolved (malloc'd) */
    uint32_t depth;         /* ListDir */
    int recursive, include_entry, network; /* WatchDir, CreateWatcher */
    /* When set, runs instead of the reply (the watches go on from there). */
    void (*then)(struct filesystem_op *op, int32_t code, const char *data, size_t n);
};
/* Start op's helper; its reply finishes the call (or op->then runs
 * instead, in the loop). Returns 0, or -1 after failing the call. */
int filesystem_run(struct filesystem_op *op);
void filesystem_op_free(struct filesystem_op *op);
/* A helper's answer status (a Connect code, or ASUSER_JOB_FAILED), the
 * message in data: 0 when it is 0, else 1 after failing op's call. */
int filesystem_op_failed(struct filesystem_op *op, int32_t status, const char *data, size_t n);
/* Resolve a request path for user u into a malloc'd string, or NULL after
 * failing the call (invalid_argument). */
char *filesystem_path(struct rpc_call *call, const struct user_info *u, const char *path);

/* In the child: the ListDir walk (filesystem/listdir.c): {"entries": [...]} into out.
 * Returns the Connect code, with a message in out on failure. */
int32_t filesystem_listdir_child(struct filesystem_op *op, struct buf *out);

/* A name of a directory being listed: len bytes at off in the listing's
 * arena of names. */
struct filesystem_listdir_name {
    uint32_t off, len;
};
/* Sort v[0..n) by name, as bytes (a prefix first), as envd's WalkDir
 * orders a level; tmp has room for n. A stable merge sort, linear when v
 * is in order already (tmpfs gives names in the order they were made). */
void filesystem_listdir_sort(struct filesystem_listdir_name *v, size_t n, const char *arena,
                             struct filesystem_listdir_name *tmp);

#endif
