/*
 * fsrpc.h - the filesystem.Filesystem service of the API (README
 * "sandbox-agent serve", the filesystem API): the handlers of the RPC table
 * (routes.c) over the file service (agent/files) and the watcher service
 * (inotify/tree), every operation in a helper process as the request's user.
 *
 *   fsrpc.c      Stat, MakeDir, Move, Remove, ListDir: a request decoded,
 *                its user and paths resolved, the operation in a helper
 *                (fsjob.h), its reply relayed; errno to Connect codes
 *   fslistdir.c  ListDir's walk, in the helper
 *   fswatch.c    WatchDir (a server stream) and the polling watchers
 *                CreateWatcher, GetWatcherEvents, RemoveWatcher
 */
#ifndef SA_API_FSRPC_H
#define SA_API_FSRPC_H

#include "agent/api/connect.h"
#include "agent/api/fsentry.h"
#include "agent/api/rpc.h"
#include "agent/core/buf.h"
#include "agent/core/protocol.h"
#include "agent/proc/user.h"

#include <cJSON.h>

/* A reply (or a listing) larger than this is refused (resource_exhausted):
 * the bound of any unary response. */
#define FSRPC_REPLY_MAX (SERVE_BODY_MAX - 64)

/* The handlers (rpc.h). */
void fsrpc_stat(struct rpc_call *call, const cJSON *msg);
void fsrpc_make_dir(struct rpc_call *call, const cJSON *msg);
void fsrpc_move(struct rpc_call *call, const cJSON *msg);
void fsrpc_list_dir(struct rpc_call *call, const cJSON *msg);
void fsrpc_remove(struct rpc_call *call, const cJSON *msg);
void fsrpc_watch_dir(struct rpc_call *call, const cJSON *msg);
void fsrpc_create_watcher(struct rpc_call *call, const cJSON *msg);
void fsrpc_get_watcher_events(struct rpc_call *call, const cJSON *msg);
void fsrpc_remove_watcher(struct rpc_call *call, const cJSON *msg);

/* The Connect code of an errno of the file service (FILES_ENOTREG included). */
enum rpc_code fsrpc_code(int errnum);
/* The request's user, or -1 after failing the call (unauthenticated for an
 * unknown user, as envd; permission_denied when the agent cannot become it). */
int fsrpc_user(struct rpc_call *call, struct user_info *u);

/* A unary operation in a helper. The child runs fn(op) and replies with
 * fsjob_reply(code, json or message). The caller fills op (calloc'd, freed
 * here) before fsrpc_run. */
struct fsrpc_op;
typedef int32_t (*fsrpc_child_fn)(struct fsrpc_op *op, struct buf *out);
struct fsrpc_op {
    struct rpc_call *call;
    struct fsjob *job;
    struct user_info user;
    fsrpc_child_fn fn;
    int read_only;          /* a cancelled call may kill the helper */
    char *path, *path2;     /* resolved (malloc'd) */
    uint32_t depth;         /* ListDir */
    int recursive, include_entry, network; /* WatchDir, CreateWatcher */
    /* When set, runs instead of the reply (the watches go on from there). */
    void (*then)(struct fsrpc_op *op, int32_t code, const char *data, size_t n);
};
/* Start op's helper; its reply finishes the call (or op->then runs
 * instead, in the loop). Returns 0, or -1 after failing the call. */
int fsrpc_run(struct fsrpc_op *op);
void fsrpc_op_free(struct fsrpc_op *op);
/* Resolve a request path for user u into a malloc'd string, or NULL after
 * failing the call (invalid_argument). */
char *fsrpc_path(struct rpc_call *call, const struct user_info *u, const char *path);

/* In the child: the ListDir walk (fslistdir.c): {"entries": [...]} into out.
 * Returns the Connect code, with a message in out on failure. */
int32_t fsrpc_list_child(struct fsrpc_op *op, struct buf *out);

#endif
