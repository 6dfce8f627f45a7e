/*
 * filesystem.c - the unary filesystem RPCs (see filesystem/filesystem.h): Stat, MakeDir, Move,
 * Remove and ListDir, each decoded in the loop and done in a helper process
 * as the request's user; what they share with the watchers (the user, the
 * paths, the codes, running a helper for a call).
 *
 * A call waiting for its helper can end first (the client leaves, the agent
 * stops, a deadline): the job is detached then, and a read-only helper is
 * killed; one that changes the filesystem is left to finish, its reply
 * dropped, so an operation is never cut in the middle.
 */
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/path.h"
#include "agent/api/filesystem/request.h"
#include "agent/api/filesystem/watch.h"
#include "agent/api/asuser/asuser.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- shared ---------------------------------------------------------------- */

int filesystem_user(struct rpc_call *call, struct user_info *u)
{
    char err[ERR_LEN];
    if (asuser_get(rpc_user(call), u, err) == 0) return 0;
    enum rpc_code code = errno == ENOENT ? RPC_UNAUTHENTICATED : connect_code_of_errno(errno);
    rpc_fail(call, code, err);
    return -1;
}

char *filesystem_path(struct rpc_call *call, const struct user_info *u, const char *path)
{
    struct buf b;
    const char *why;
    buf_init(&b, ASUSER_PATH_MAX);
    if (asuser_path_resolve(u->home, asuser_defaults_workdir(), path, &b, &why) < 0) {
        buf_free(&b);
        rpc_fail(call, RPC_INVALID_ARGUMENT, why);
        return NULL;
    }
    return b.data; /* NUL-terminated by asuser_path_resolve */
}

void filesystem_op_free(struct filesystem_op *op)
{
    if (!op) return;
    free(op->path);
    free(op->path2);
    free(op);
}

/* The call went before its helper: forget the job. */
static void op_abandon(struct filesystem_op *op)
{
    if (op->read_only) asuser_job_cancel(op->job);
    else asuser_job_detach(op->job);
    filesystem_op_free(op);
}

static void on_cancel(struct rpc_call *call, void *ctx) { op_abandon(ctx); }

static void on_stop(struct rpc_call *call, void *ctx)
{
    op_abandon(ctx);
    rpc_fail(call, RPC_UNAVAILABLE, "the agent is shutting down");
}

static void on_deadline(struct rpc_call *call, void *ctx)
{
    op_abandon(ctx);
    rpc_fail(call, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
}

static void on_done(void *ctx, int32_t status, const char *data, size_t n)
{
    struct filesystem_op *op = ctx;
    static const struct rpc_hooks none;
    op->job = NULL;
    rpc_set_hooks(op->call, &none);
    /* A change's events reach the watches before its client can act on
     * the answer, and a directory it made is watched by then (watch.h). */
    if (!op->read_only) filesystem_watch_settle();
    if (op->then) {
        op->then(op, status, data, n);
        return;
    }
    if (!filesystem_op_failed(op, status, data, n)) rpc_reply(op->call, data, n);
    filesystem_op_free(op);
}

int filesystem_op_failed(struct filesystem_op *op, int32_t status, const char *data, size_t n)
{
    if (status == 0) return 0;
    char msg[ERR_LEN];
    err_set(msg, "%.*s", (int)(n < ERR_LEN ? n : ERR_LEN - 1), data);
    rpc_fail(op->call, status == ASUSER_JOB_FAILED  ? RPC_INTERNAL
                       : status == ASUSER_JOB_SPENT ? RPC_RESOURCE_EXHAUSTED
                                                    : (enum rpc_code)status, msg);
    return 1;
}

/* In the child. */
static int op_child(void *arg)
{
    struct filesystem_op *op = arg;
    struct buf out;
    buf_init(&out, FILESYSTEM_REPLY_MAX);
    int32_t code = op->fn(op, &out);
    return asuser_job_reply(code, out.data, out.len) < 0 ? 1 : 0;
}

int filesystem_run(struct filesystem_op *op)
{
    char err[ERR_LEN];
    struct asuser_job_opts o = {.user = &op->user, .fn = op_child, .arg = op,
                           .deathsig = op->read_only ? SIGKILL : 0};
    op->job = asuser_job_start(EV_DEFAULT, &o, err);
    if (!op->job) {
        rpc_fail(op->call, RPC_RESOURCE_EXHAUSTED, err);
        filesystem_op_free(op);
        return -1;
    }
    struct rpc_hooks h = {.cancel = on_cancel, .stop = on_stop, .deadline = on_deadline, .ctx = op};
    rpc_set_hooks(op->call, &h);
    asuser_job_collect(op->job, FILESYSTEM_REPLY_MAX, on_done, op);
    return 0;
}

/* ---- the children ------------------------------------------------------------ */

/* The failure e as the reply: its code, "path: message". */
static int32_t fail_with(struct buf *out, const struct files_err *e)
{
    buf_reset(out);
    if (e->path) buf_printf(out, "%s: ", e->path);
    buf_puts(out, e->message);
    return (int32_t)connect_code_of_errno(e->errnum);
}

static int32_t fail_errno(struct buf *out, int errnum, const char *path)
{
    buf_reset(out);
    buf_printf(out, "%s: %s", path, files_strerror(errnum));
    return (int32_t)connect_code_of_errno(errnum);
}

/* {"entry": EntryInfo of path} */
static int32_t entry_reply(struct buf *out, const char *path)
{
    struct user_names names;
    user_names_init(&names, USER_PASSWD, USER_GROUP);
    if (buf_puts(out, "{\"entry\": ") < 0 || filesystem_entry_stat_json(out, path, &names) < 0 ||
        buf_putc(out, '}') < 0)
        return fail_errno(out, errno, path);
    return 0;
}

static int32_t stat_child(struct filesystem_op *op, struct buf *out) { return entry_reply(out, op->path); }

static int32_t mkdir_child(struct filesystem_op *op, struct buf *out)
{
    struct files_err e;
    int created;
    if (files_mkdir(op->path, 1, 0, 0, &created, &e) < 0) {
        struct stat st;
        int32_t code = fail_with(out, &e);
        files_err_free(&e);
        if (code == RPC_ALREADY_EXISTS && lstat(op->path, &st) == 0 && !S_ISDIR(st.st_mode)) {
            buf_reset(out);
            buf_printf(out, "path already exists but it is not a directory: %s", op->path);
            return RPC_INVALID_ARGUMENT;
        }
        return code;
    }
    if (!created) {
        buf_printf(out, "directory already exists: %s", op->path);
        return RPC_ALREADY_EXISTS;
    }
    return entry_reply(out, op->path);
}

/* The directory part of an absolute, resolved path (NUL-terminated in dir). */
static int parent_of(const char *path, struct buf *dir)
{
    size_t n;
    const char *last = files_last_name(path, &n);
    size_t len = (size_t)(last - path);
    while (len > 1 && path[len - 1] == '/') len--;
    return buf_append(dir, path, len) < 0 || !buf_cstr(dir) ? -1 : 0;
}

static int32_t move_child(struct filesystem_op *op, struct buf *out)
{
    struct files_err e;
    struct buf dir;
    int created;
    buf_init(&dir, ASUSER_PATH_MAX);
    int r = parent_of(op->path2, &dir) < 0 ? -1 : files_mkdir(dir.data, 1, 0, 0, &created, &e);
    buf_free(&dir);
    if (r == 0) r = files_move(op->path, op->path2, 1, &e);
    if (r < 0) {
        int32_t code = fail_with(out, &e);
        files_err_free(&e);
        return code;
    }
    return entry_reply(out, op->path2);
}

static int32_t remove_child(struct filesystem_op *op, struct buf *out)
{
    struct files_err e;
    if (files_remove(op->path, 1, &e) < 0) {
        /* Gone already: done, as envd's RemoveAll. */
        int32_t code = e.errnum == ENOENT ? 0 : fail_with(out, &e);
        files_err_free(&e);
        if (code) return code;
    }
    buf_reset(out);
    return buf_puts(out, "{}") < 0 ? RPC_INTERNAL : 0;
}

/* ---- the handlers ------------------------------------------------------------ */

/* Decode, resolve the user and path(s), run fn. */
static void start(struct rpc_call *call, const cJSON *msg, enum filesystem_request_kind kind, filesystem_child_fn fn,
                  int read_only)
{
    struct filesystem_request r;
    char err[ERR_LEN];
    if (filesystem_request_decode(kind, msg, &r, err) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
        return;
    }
    struct filesystem_op *op = calloc(1, sizeof *op);
    if (!op) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    op->call = call;
    op->fn = fn;
    op->read_only = read_only;
    op->depth = r.depth ? r.depth : 1;
    const char *p1 = kind == FSREQ_MOVE ? r.source : r.path;
    if (filesystem_user(call, &op->user) < 0 || !(op->path = filesystem_path(call, &op->user, p1)) ||
        (kind == FSREQ_MOVE && !(op->path2 = filesystem_path(call, &op->user, r.destination)))) {
        filesystem_op_free(op);
        return;
    }
    filesystem_run(op);
}

void filesystem_stat(struct rpc_call *call, const cJSON *msg) { start(call, msg, FSREQ_PATH, stat_child, 1); }
void filesystem_make_dir(struct rpc_call *call, const cJSON *msg) { start(call, msg, FSREQ_PATH, mkdir_child, 0); }
void filesystem_list_dir(struct rpc_call *call, const cJSON *msg) { start(call, msg, FSREQ_LIST, filesystem_listdir_child, 1); }

void filesystem_move(struct rpc_call *call, const cJSON *msg)
{
    struct filesystem_request r;
    if (filesystem_request_decode(FSREQ_MOVE, msg, &r, NULL) == 0 && (!*r.source || !*r.destination)) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, "source and destination are required");
        return;
    }
    start(call, msg, FSREQ_MOVE, move_child, 0);
}

void filesystem_remove(struct rpc_call *call, const cJSON *msg)
{
    struct filesystem_request r;
    /* "" would be the home: refused rather than removed. */
    if (filesystem_request_decode(FSREQ_PATH, msg, &r, NULL) == 0 && !*r.path) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, "path is required");
        return;
    }
    start(call, msg, FSREQ_PATH, remove_child, 0);
}
