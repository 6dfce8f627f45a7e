/*
 * filesystem_watch.c - a watched directory of the filesystem API (see filesystem_watch.h):
 * the check in a helper, the watcher service's ops turned into envd's
 * events and problems, what the user may look into, and the watch's end.
 */
#include "agent/api/filesystem/watch.h"
#include "agent/core/list.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/path.h"
#include "agent/core/jsonw.h"
#include "agent/core/err.h"
#include "agent/core/hash.h"
#include "agent/files/files.h"
#include "inotify/tree/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* One event's JSON, its entry included. */
#define EVENT_JSON_MAX (4u * 1024u * 1024u)

/* Network filesystems envd refuses to watch unless asked (NFS, CIFS, SMB,
 * SMB2, FUSE): inotify sees only this machine's changes there. */
static int network_fs(long type)
{
    switch ((unsigned long)type) {
    case 0x6969: case 0xFF534D42: case 0x517B: case 0xFE534D42: case 0x65735546: return 1;
    default: return 0;
    }
}

/* ---- the check, as the user ------------------------------------------------ */

static int32_t check_child(struct filesystem_op *op, struct buf *out)
{
    struct stat st;
    struct statfs sfs;
    if (stat(op->path, &st) < 0) {
        int e = errno;
        buf_printf(out, "%s: %s", op->path, strerror(e));
        return connect_code_of_errno(e);
    }
    if (!S_ISDIR(st.st_mode)) {
        buf_printf(out, "path %s is not a directory", op->path);
        return RPC_INVALID_ARGUMENT;
    }
    int fd = open(op->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* What is below it is looked into by the agent as root, which the
     * user may do only when they may search it (fchdir needs that). */
    if (fd < 0 || ((op->recursive || op->include_entry) && fchdir(fd) < 0)) {
        int e = errno;
        if (fd >= 0) close(fd);
        buf_printf(out, "%s: %s", op->path, strerror(e));
        return connect_code_of_errno(e);
    }
    int net = !op->network && fstatfs(fd, &sfs) == 0 && network_fs((long)sfs.f_type);
    close(fd);
    if (net) {
        buf_printf(out, "cannot watch a path on a network filesystem: %s", op->path);
        return RPC_INVALID_ARGUMENT;
    }
    return buf_puts(out, "{}") < 0 ? RPC_INTERNAL : 0;
}

int filesystem_watch_check(struct rpc_call *call, const cJSON *msg,
                  void (*then)(struct filesystem_op *op, int32_t code, const char *data, size_t n))
{
    struct filesystem_request r;
    char err[ERR_LEN];
    if (filesystem_request_decode(FSREQ_WATCH, msg, &r, err) < 0) {
        rpc_fail(call, RPC_INVALID_ARGUMENT, err);
        return -1;
    }
    struct filesystem_op *op = calloc(1, sizeof *op);
    if (!op) {
        rpc_fail(call, RPC_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
    }
    op->call = call;
    op->fn = check_child;
    op->read_only = 1;
    op->then = then;
    op->recursive = r.recursive;
    op->include_entry = r.include_entry;
    op->network = r.allow_network_mounts;
    if (filesystem_user(call, &op->user) < 0 || !(op->path = filesystem_path(call, &op->user, r.path))) {
        filesystem_op_free(op);
        return -1;
    }
    return filesystem_run(op);
}

/* ---- events ------------------------------------------------------------------ */

static const struct {
    uint32_t mask;
    const char *type;
    int has_entry; /* the entry may still be there */
} kinds[] = {
    {IN_CREATE | IN_MOVED_TO, "EVENT_TYPE_CREATE", 1},
    {IN_MOVED_FROM, "EVENT_TYPE_RENAME", 0},
    {IN_ATTRIB, "EVENT_TYPE_CHMOD", 1},
    {IN_MODIFY, "EVENT_TYPE_WRITE", 1},
    {IN_DELETE, "EVENT_TYPE_REMOVE", 0},
};

/* An atomic write's rename into place, as envd's in-place write shows it
 * (open with O_CREAT, chown, write; over a file: chown, truncate, write). */
static const uint32_t written_new[] = {IN_CREATE, IN_ATTRIB, IN_MODIFY, 0};
static const uint32_t written_over[] = {IN_ATTRIB, IN_MODIFY, 0};

/* path (under root) relative to root. */
static const char *relative(const struct filesystem_watch *w, const char *path, size_t n, size_t *rn)
{
    size_t k = n >= w->root_len ? w->root_len : n;
    while (k < n && path[k] == '/') k++;
    *rn = n - k;
    return path + k;
}

static void one_event(struct filesystem_watch *w, const char *type, int has_entry, const char *path, size_t n)
{
    size_t rn;
    const char *rel = relative(w, path, n, &rn);
    struct buf *b = &w->scratch;
    buf_reset(b);
    if (buf_puts(b, "{\"name\": ") < 0 || jsonw_str(b, rel, rn, JSONW_SURROGATEESCAPE) < 0 ||
        buf_printf(b, ", \"type\": \"%s\"", type) < 0)
        goto lost;
    if (has_entry && w->include_entry) {
        char *p = malloc(n + 1);
        size_t mark = b->len;
        if (!p) goto lost;
        memcpy(p, path, n);
        p[n] = '\0';
        /* Gone already (or unreadable): the event without its entry. */
        if (buf_puts(b, ", \"entry\": ") < 0 || filesystem_entry_stat_json_as(b, p, &w->names, w->who) < 0) b->len = mark;
        free(p);
    }
    if (buf_putc(b, '}') < 0) goto lost;
    w->ops->event(w, b->data, b->len);
    return;
lost:
    w->ops->problem(w, FSWATCH_LOST, RPC_DATA_LOSS, "an event too large to report was lost");
}

static void events_of(struct filesystem_watch *w, uint32_t mask, const char *path, size_t n)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !w->halted; i++)
        if (mask & kinds[i].mask) one_event(w, kinds[i].type, kinds[i].has_entry, path, n);
}

/* The key of a rename's target: its directory (path[0..dlen)) and its
 * name (name[0..nlen), cut as a temporary name cuts it). Never 0. */
static uint64_t moved_key(const char *path, size_t dlen, const char *name, size_t nlen)
{
    uint64_t h = hash_bytes(HASH_SEED, path, dlen);
    h = hash_bytes(h, "/", 1);
    h = hash_bytes(h, name, nlen < FILES_TMP_NAME_CUT ? nlen : FILES_TMP_NAME_CUT);
    return h ? h : 1;
}

/* A temporary file renamed away (path, n bytes, its last component the
 * name of that kind carrying target): a write's is kept for its target's
 * rename. */
static void moved_away(struct filesystem_watch *w, enum files_tmp_kind k, const char *path, size_t n,
                       const char *target, size_t tlen)
{
    const char *slash = memrchr(path, '/', n);
    if ((k != FILES_TMP_NEW && k != FILES_TMP_REPLACES) || !slash) return;
    unsigned i = w->moved_next++ % FSWATCH_MOVED_SLOTS;
    w->moved[i].key = moved_key(path, (size_t)(slash - path), target, tlen);
    w->moved[i].kind = k;
}

/* path (n bytes) was renamed to: when from a write's temporary file (the
 * same directory, and the target's name the one its name carries), the
 * events that write stands for; else NULL. */
static const uint32_t *written(struct filesystem_watch *w, const char *path, size_t n)
{
    const char *slash = memrchr(path, '/', n);
    if (!slash) return NULL;
    uint64_t key = moved_key(path, (size_t)(slash - path), slash + 1, n - (size_t)(slash + 1 - path));
    for (unsigned i = 0; i < FSWATCH_MOVED_SLOTS; i++) {
        if (w->moved[i].key != key) continue;
        w->moved[i].key = 0;
        return w->moved[i].kind == FILES_TMP_NEW ? written_new : written_over;
    }
    return NULL;
}

static void on_event(void *ctx, uint32_t mask, const char *path, size_t n, const char *error)
{
    struct filesystem_watch *w = ctx;
    if (w->halted) return;
    if (mask & IN_Q_OVERFLOW) {
        size_t rn;
        const char *rel = relative(w, path, n, &rn);
        char msg[ERR_LEN];
        if (!error) {
            w->ops->problem(w, FSWATCH_LOST, RPC_DATA_LOSS,
                            "events were lost (the kernel's event queue overflowed): list the directory again");
        } else if (rn == 0) {
            free(w->gone);
            w->gone = strdup(error); /* the end follows */
        } else {
            err_set(msg, "%.*s: cannot be watched: %s", (int)(rn > 160 ? 160 : rn), rel, error);
            w->ops->problem(w, FSWATCH_HOLE, RPC_INTERNAL, msg);
        }
        return;
    }
    /* The file service's own temporary files (an atomic write's, a move's)
     * are not the client's business: envd writes in place. A write's rename
     * into place shows as envd's write would; a move's as the target's
     * CREATE. */
    size_t rn, tlen;
    const char *rel = relative(w, path, n, &rn), *slash = memrchr(rel, '/', rn), *target;
    size_t off = slash ? (size_t)(slash + 1 - rel) : 0;
    enum files_tmp_kind k = files_tmp_kind(rel + off, rn - off, &target, &tlen);
    if (k != FILES_TMP_NONE) {
        if (mask & IN_MOVED_FROM) moved_away(w, k, path, n, target, tlen);
        return;
    }
    if (mask & IN_MOVED_TO) {
        const uint32_t *seq = written(w, path, n);
        if (seq) {
            for (; *seq && !w->halted; seq++) events_of(w, *seq, path, n);
            return;
        }
    }
    events_of(w, mask, path, n);
}

static void on_lost(void *ctx)
{
    struct filesystem_watch *w = ctx;
    if (!w->halted)
        w->ops->problem(w, FSWATCH_LOST, RPC_DATA_LOSS, "an event whose path is too long was lost");
}

static void on_settling(void *ctx, int on) { (void)ctx, (void)on; }
static void on_drained(void *ctx) { (void)ctx; }

static void on_end(void *ctx, enum tree_end why, const char *msg)
{
    struct filesystem_watch *w = ctx;
    char text[ERR_LEN];
    if (w->halted) return;
    if (why == TREE_ROOT_GONE) {
        err_set(text, "the watched directory is gone (%s)", w->gone ? w->gone : msg);
        w->ops->problem(w, FSWATCH_END, RPC_NOT_FOUND, text);
    } else {
        w->ops->problem(w, FSWATCH_END, RPC_INTERNAL, msg);
    }
}

static const struct tree_ops ops = {on_event, on_lost, on_settling, on_drained, on_end};

/* A directory below the watched one, open as fd (-1: the agent, not root,
 * could not open it): the user may read and search it. Its ancestors in the
 * watch were admitted, and the watched one checked as the user, so that is
 * what their own opendir of it would decide. */
static int admit(void *ctx, int fd, const struct stat *st)
{
    struct filesystem_watch *w = ctx;
    return asuser_perm_fd(w->who, fd, st, ASUSER_PERM_R | ASUSER_PERM_X);
}

/* ---- life -------------------------------------------------------------------- */

/* Every watch between its start and its release (one API per process). */
static struct filesystem_watch *live;

static void live_add(struct filesystem_watch *w) { LIST_PUSH(live, w); }
static void live_del(struct filesystem_watch *w) { LIST_UNLINK(live, w); }

void filesystem_watch_settle(void)
{
    /* A watch that ends while it drains leaves the list: read next first. */
    for (struct filesystem_watch *w = live, *next; w; w = next) {
        next = w->next;
        if (!w->halted && w->sync) tree_drain(w->sync);
    }
}

static void on_free(struct ev_loop *loop, ev_timer *t, int revents)
{
    struct filesystem_watch *w = t->data;
    tree_free(w->sync);
    w->sync = NULL;
    free(w->root);
    free(w->gone);
    free(w->who);
    buf_free(&w->scratch);
    w->freed = 1;
    if (w->free_owner) w->free_owner(w->owner);
}

/* Free what filesystem_watch_start made, on its failure. */
static void undo_start(struct filesystem_watch *w)
{
    tree_free(w->sync);
    free(w->root);
    free(w->gone);
    free(w->who);
    buf_free(&w->scratch);
}

/* For a user other than root, every directory below is admitted first. */
static int set_user(struct filesystem_watch *w, const struct user_info *user, char *err)
{
    if (user->uid == 0) return 0;
    if (!(w->who = malloc(sizeof *w->who))) {
        err_set(err, "out of memory");
        return -1;
    }
    asuser_perm_who_of(user, w->who);
    tree_set_admit(w->sync, admit);
    return 0;
}

int filesystem_watch_start(struct filesystem_watch *w, const char *root, int recursive, int include_entry,
                  const struct user_info *user, const struct filesystem_watch_ops *fops, void *owner, char *err)
{
    char why[ERR_LEN];
    memset(w, 0, sizeof *w);
    w->ops = fops;
    w->owner = owner;
    w->include_entry = include_entry;
    w->root_len = strlen(root);
    user_names_init(&w->names, USER_PASSWD, USER_GROUP);
    buf_init(&w->scratch, EVENT_JSON_MAX);
    ev_timer_init(&w->free_w, on_free, 0, 0);
    w->free_w.data = w;
    if (!(w->root = strdup(root)) || !(w->sync = tree_new(root, recursive, &ops, w, err))) {
        if (!w->root) err_set(err, "out of memory");
        undo_start(w);
        return -1;
    }
    tree_set_extra(w->sync, IN_ATTRIB);
    if (set_user(w, user, err) < 0) {
        undo_start(w);
        return -1;
    }
    if (tree_start(w->sync, EV_DEFAULT, why) < 0) {
        err_set(err, "cannot watch %.150s: %s", root, why);
        undo_start(w);
        return -1;
    }
    live_add(w);
    return 0;
}

void filesystem_watch_release(struct filesystem_watch *w, void (*free_owner)(void *owner))
{
    if (!w->halted) live_del(w);
    w->halted = 1;
    if (free_owner) w->free_owner = free_owner;
    if (w->freed) {
        if (free_owner) free_owner(w->owner);
        return;
    }
    if (w->sync) tree_halt(w->sync);
    if (!ev_is_active(&w->free_w)) ev_timer_start(EV_DEFAULT, &w->free_w);
}
