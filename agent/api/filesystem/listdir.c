/*
 * listdir.c - ListDir's walk, in the helper (see filesystem/filesystem.h): the entries of
 * a directory and, down to `depth` levels, of the directories below it,
 * each level in name order (bytes), a directory's contents right after it,
 * as envd's filepath.WalkDir gives them. Symlinks are listed, never
 * followed (the listed directory itself may be one). Entry paths start with
 * the path as requested.
 *
 * A subdirectory that cannot be read (no permission, gone meanwhile) is
 * listed without its contents; the directory asked for must be readable.
 * Bounds: the reply is at most FILESYSTEM_REPLY_MAX bytes (past it, the call
 * fails with resource_exhausted: ask for less depth), and no directory's
 * names are held beyond the count whose entries could fit in it.
 */
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/asuser/path.h"
#include "agent/files/files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* No entry's JSON is shorter than this (its keys alone are longer). */
#define ENTRY_JSON_MIN 128
#define NAMES_MAX (FILESYSTEM_REPLY_MAX / ENTRY_JSON_MIN)

struct lent {
    char *name;
    size_t nlen;
    struct stat st;
};

struct ldir {
    struct lent *v;
    size_t n, cap;
};

struct walk {
    struct buf *out;
    struct user_names names;
    uint32_t depth;
    int first;
    int32_t code; /* a failure that ends the walk */
};

static int collect(void *ctx, const struct files_entry *ent)
{
    struct ldir *d = ctx;
    if (d->n == NAMES_MAX) return EFBIG;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct lent *v = realloc(d->v, cap * sizeof *v);
        if (!v) return ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    struct lent *e = &d->v[d->n];
    if (!(e->name = malloc(ent->nlen + 1))) return ENOMEM;
    memcpy(e->name, ent->name, ent->nlen + 1);
    e->nlen = ent->nlen;
    e->st = ent->st;
    d->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const struct lent *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->nlen < y->nlen ? x->nlen : y->nlen);
    return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static void ldir_free(struct ldir *d)
{
    for (size_t i = 0; i < d->n; i++) free(d->v[i].name);
    free(d->v);
}

static int32_t too_large(struct walk *w)
{
    buf_reset(w->out);
    w->out->max += 256; /* room for the message */
    buf_puts(w->out, "the listing is larger than 16 MiB; ask for less depth");
    return w->code = RPC_RESOURCE_EXHAUSTED;
}

static int32_t walk_dir(struct walk *w, const char *dir, uint32_t level);

/* One entry of dir, then (a directory, depth left) its contents. */
static int32_t one(struct walk *w, const char *dir, const struct lent *e, uint32_t level)
{
    struct buf path;
    buf_init(&path, ASUSER_PATH_MAX);
    size_t dn = strlen(dir);
    int32_t r = 0;
    if (buf_append(&path, dir, dn) < 0 || (dn && dir[dn - 1] != '/' && buf_putc(&path, '/') < 0) ||
        buf_append(&path, e->name, e->nlen) < 0 || !buf_cstr(&path))
        goto done; /* a path too long to open: not listed */
    if ((!w->first && buf_puts(w->out, ", ") < 0) ||
        filesystem_entry_json(w->out, path.data, e->name, e->nlen, &e->st, &w->names) < 0) {
        r = too_large(w);
        goto done;
    }
    w->first = 0;
    if (S_ISDIR(e->st.st_mode) && level + 1 < w->depth) r = walk_dir(w, path.data, level + 1);
done:
    buf_free(&path);
    return r;
}

static int32_t walk_dir(struct walk *w, const char *dir, uint32_t level)
{
    struct ldir d = {0};
    struct files_err e;
    int32_t r = 0;
    if (files_list(dir, collect, &d, &e) < 0) {
        if (e.errnum == EFBIG) r = too_large(w);
        else if (level == 0) {
            buf_reset(w->out);
            buf_printf(w->out, "%s: %s", dir, e.message);
            r = w->code = connect_code_of_errno(e.errnum);
        }
        files_err_free(&e);
        ldir_free(&d);
        return r;
    }
    if (d.n) qsort(d.v, d.n, sizeof *d.v, by_name);
    for (size_t i = 0; i < d.n && !r; i++) r = one(w, dir, &d.v[i], level);
    ldir_free(&d);
    return r;
}

int32_t filesystem_listdir_child(struct filesystem_op *op, struct buf *out)
{
    struct stat st;
    if (stat(op->path, &st) < 0) {
        int e = errno;
        buf_printf(out, "%s: %s", op->path, strerror(e));
        return e == ELOOP ? RPC_FAILED_PRECONDITION : connect_code_of_errno(e);
    }
    if (!S_ISDIR(st.st_mode)) {
        buf_printf(out, "path is not a directory: %s", op->path);
        return RPC_INVALID_ARGUMENT;
    }
    struct walk w = {.out = out, .depth = op->depth, .first = 1};
    user_names_init(&w.names, USER_PASSWD, USER_GROUP);
    if (buf_puts(out, "{\"entries\": [") < 0) return too_large(&w);
    int32_t r = walk_dir(&w, op->path, 0);
    if (r) return r;
    return buf_puts(out, "]}") < 0 ? too_large(&w) : 0;
}
