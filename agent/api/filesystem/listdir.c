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
 *
 * The cost is the kernel's: one getdents64 pass into one arena of names (no
 * allocation per entry), then, with the helper's cwd in the directory (the
 * helper is a process of its own), an fstatat and a listxattr of each name
 * that walk one component, not the whole path; the directory's fd is closed
 * before its subdirectories are listed, so the walk holds one fd whatever
 * the depth. Only an entry that has user.e2b.* attributes or is a symlink
 * is looked at again by its path. Every access is the helper's: as the user.
 */
#include "agent/api/filesystem/filesystem.h"
#include "agent/api/asuser/path.h"
#include "agent/core/log.h"
#include "agent/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* No entry's JSON is shorter than this (its keys alone are longer). */
#define ENTRY_JSON_MIN 128
#define NAMES_MAX (FILESYSTEM_REPLY_MAX / ENTRY_JSON_MIN)
/* A name is at most 255 bytes and its NUL. */
#define ARENA_MAX ((size_t)NAMES_MAX * 256)
/* What one getdents64 call fills. */
#define DENTS_BUF (32 * 1024)
/* An entry's JSON is usually about this long: room made for it once. */
#define ENTRY_JSON_GUESS 256
/* A directory with this many entries has its lstats split between two
 * processes (below it, the second costs more than it saves). */
#define SPLIT_MIN 2048

/* What is kept of an entry's lstat between reading and writing it. */
struct lent {
    mode_t mode;       /* 0: gone before its lstat (not listed) */
    uid_t uid;
    gid_t gid;
    int meta;          /* it has user.e2b.* attributes */
    off_t size;
    struct timespec mtim;
};

struct ldir {
    struct buf arena;
    struct filesystem_listdir_name *v;
    struct lent *st;
    size_t n, cap;
};

struct walk {
    struct buf *out;
    struct buf path;   /* the entry being written; the directory's path below it */
    struct user_names names;
    uint32_t depth;
    int first;
    int32_t code; /* a failure that ends the walk */
};

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int add_name(struct ldir *d, const char *name)
{
    if (d->n == NAMES_MAX) return EFBIG;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        struct filesystem_listdir_name *v = realloc(d->v, cap * sizeof *v);
        if (!v) return ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    size_t len = strlen(name);
    d->v[d->n] = (struct filesystem_listdir_name){(uint32_t)d->arena.len, (uint32_t)len};
    if (buf_append(&d->arena, name, len + 1) < 0) return ENOMEM;
    d->n++;
    return 0;
}

/* Every name of fd but . and .., in one pass. Returns 0 or an errno value. */
static int read_names(int fd, struct ldir *d)
{
    static char dents[DENTS_BUF];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return 0;
        for (long at = 0; at < n;) {
            struct linux_dirent64 *de = (struct linux_dirent64 *)(dents + at);
            at += de->d_reclen;
            int r = de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2]))
                        ? 0
                        : add_name(d, de->d_name);
            if (r) return r;
        }
    }
}

/* Names a and b compared as bytes (a prefix first), eight at a time:
 * musl's memcmp goes byte by byte, and a sort makes n log n of these. */
static int name_cmp(const char *arena, const struct filesystem_listdir_name *a, const struct filesystem_listdir_name *b)
{
    const char *x = arena + a->off, *y = arena + b->off;
    size_t n = a->len < b->len ? a->len : b->len, i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= n; i += 8) {
        uint64_t p, q;
        memcpy(&p, x + i, 8);
        memcpy(&q, y + i, 8);
        if (p != q) return __builtin_bswap64(p) < __builtin_bswap64(q) ? -1 : 1;
    }
#endif
    for (; i < n; i++)
        if (x[i] != y[i]) return (unsigned char)x[i] < (unsigned char)y[i] ? -1 : 1;
    return (a->len > b->len) - (a->len < b->len);
}

void filesystem_listdir_sort(struct filesystem_listdir_name *v, size_t n, const char *arena,
                             struct filesystem_listdir_name *tmp)
{
    if (n < 2) return;
    size_t mid = n / 2, i = 0, j = mid, k = 0;
    filesystem_listdir_sort(v, mid, arena, tmp);
    filesystem_listdir_sort(v + mid, n - mid, arena, tmp);
    /* Halves already in order (tmpfs gives names in the order they were
     * made, often theirs): nothing to merge, so such a listing is linear. */
    if (name_cmp(arena, &v[mid - 1], &v[mid]) <= 0) return;
    while (i < mid && j < n) tmp[k++] = name_cmp(arena, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < mid) tmp[k++] = v[i++];
    memcpy(v, tmp, k * sizeof *v); /* what is left of the second half is in place */
}

/* The lstat of names [from, to) (through fd) into out[0..), and whether
 * each has metadata (by the name alone when the cwd is the directory,
 * here: one component for the kernel to walk; else by its path). dir is
 * the path, for messages. */
static void stat_range(int fd, const struct ldir *d, size_t from, size_t to, struct lent *out, int here,
                       const char *dir, struct buf *path, size_t dlen)
{
    for (size_t i = from; i < to; i++) {
        const char *name = d->arena.data + d->v[i].off;
        struct stat st;
        struct lent *e = &out[i - from];
        e->mode = 0;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            /* Removed since getdents saw it: it is not there any more. */
            if (errno != ENOENT) log_warn("fs list: %s/%s: %s (skipped)", dir, name, strerror(errno));
            continue;
        }
        *e = (struct lent){st.st_mode, st.st_uid, st.st_gid, 0, st.st_size, st.st_mtim};
        path->len = dlen;
        if (here) e->meta = filesystem_entry_meta_probe(name);
        else if (buf_putc(path, '/') == 0 && buf_append(path, name, d->v[i].len) == 0 && buf_cstr(path))
            e->meta = filesystem_entry_meta_probe(path->data);
    }
}

/* The second half of a large directory's lstats in a process of its own
 * (forked from the helper: the same user, the same cwd), into shared
 * memory, while the helper does the first: the kernel's work per entry is
 * most of a listing, and a machine has more than one CPU. Returns its pid
 * (*shared: where its results go), or -1 to do it all here. */
static pid_t stat_split(int fd, const struct ldir *d, size_t half, struct lent **shared, const char *dir)
{
    size_t len = (d->n - half) * sizeof **shared;
    *shared = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (*shared == MAP_FAILED) return -1;
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        struct buf unused;
        buf_init(&unused, 0);
        /* It goes with the helper (killed when a call is cancelled). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent)
            stat_range(fd, d, half, d->n, *shared, 1, dir, &unused, 0);
        _exit(0);
    }
    if (pid < 0) munmap(*shared, len);
    return pid;
}

/* Every lstat of the directory fd (see stat_range). */
static void read_stats(int fd, struct ldir *d, const char *dir, struct buf *path, size_t dlen)
{
    int here = fchdir(fd) == 0, ws;
    size_t half = here && d->n >= SPLIT_MIN ? d->n / 2 : d->n;
    struct lent *shared = NULL;
    pid_t pid = half < d->n ? stat_split(fd, d, half, &shared, dir) : -1;
    if (pid < 0) half = d->n;
    stat_range(fd, d, 0, half, d->st, here, dir, path, dlen);
    if (pid < 0) return;
    pid_t w;
    do w = waitpid(pid, &ws, 0);
    while (w < 0 && errno == EINTR);
    /* Its results count only if it ended well: else they are done again. */
    if (w == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) memcpy(d->st + half, shared, (d->n - half) * sizeof *shared);
    else stat_range(fd, d, half, d->n, d->st + half, here, dir, path, dlen);
    munmap(shared, (d->n - half) * sizeof *shared);
}

/* The directory at dir (the walk's path, dlen bytes) read: names sorted,
 * lstat'ed; its fd closed. Returns 0 or an errno value. */
static int read_dir(struct walk *w, struct ldir *d, size_t dlen, uint32_t level)
{
    const char *dir = w->path.data;
    /* Below the top a directory is entered only as one: never a symlink
     * put there since its lstat. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY | (level ? O_NOFOLLOW : 0));
    if (fd < 0) return errno;
    buf_init(&d->arena, ARENA_MAX);
    int r = read_names(fd, d);
    struct filesystem_listdir_name *tmp = NULL;
    if (!r && d->n && (!(d->st = malloc(d->n * sizeof *d->st)) || !(tmp = malloc(d->n * sizeof *tmp)))) r = ENOMEM;
    if (!r && d->n) {
        filesystem_listdir_sort(d->v, d->n, d->arena.data, tmp);
        char *copy = strdup(dir); /* the walk's path buffer is reused below */
        if (!copy) r = ENOMEM;
        else read_stats(fd, d, copy, &w->path, dlen);
        free(copy);
    }
    free(tmp);
    close(fd);
    return r;
}

static void ldir_free(struct ldir *d)
{
    buf_free(&d->arena);
    free(d->v);
    free(d->st);
}

static int32_t too_large(struct walk *w)
{
    buf_reset(w->out);
    w->out->max += 256; /* room for the message */
    buf_puts(w->out, "the listing is larger than 16 MiB; ask for less depth");
    return w->code = RPC_RESOURCE_EXHAUSTED;
}

static int32_t walk_dir(struct walk *w, size_t dlen, uint32_t level);

/* Entry i of the directory at the walk's path (dlen bytes), then (a
 * directory, depth left) its contents. */
static int32_t one(struct walk *w, const struct ldir *d, size_t i, size_t dlen, uint32_t level)
{
    const struct lent *e = &d->st[i];
    const char *name = d->arena.data + d->v[i].off;
    size_t nlen = d->v[i].len;
    struct buf *p = &w->path;
    if (!e->mode) return 0;
    p->len = dlen;
    if ((dlen && p->data[dlen - 1] != '/' && buf_putc(p, '/') < 0) || buf_append(p, name, nlen) < 0 ||
        !buf_cstr(p))
        return 0; /* a path too long to open: not listed */
    struct stat st = {.st_mode = e->mode, .st_uid = e->uid, .st_gid = e->gid, .st_size = e->size,
                      .st_mtim = e->mtim};
    if ((!w->first && buf_append(w->out, ", ", 2) < 0) ||
        filesystem_entry_json(w->out, p->data, name, nlen, &st, &w->names, e->meta) < 0)
        return too_large(w);
    w->first = 0;
    if (S_ISDIR(e->mode) && level + 1 < w->depth) return walk_dir(w, p->len, level + 1);
    return 0;
}

static int32_t walk_dir(struct walk *w, size_t dlen, uint32_t level)
{
    struct ldir d = {0};
    int32_t r = 0;
    int en = read_dir(w, &d, dlen, level);
    if (en) {
        if (en == EFBIG) r = too_large(w);
        else if (level == 0) {
            buf_reset(w->out);
            w->path.len = dlen;
            buf_printf(w->out, "%s: %s", buf_cstr(&w->path), files_strerror(en));
            r = w->code = connect_code_of_errno(en);
        }
        ldir_free(&d);
        return r;
    }
    /* Room for the listing made once, not by doubling through it. */
    if (level == 0) (void)buf_reserve(w->out, d.n * ENTRY_JSON_GUESS < w->out->max / 2 ? d.n * ENTRY_JSON_GUESS : 0);
    for (size_t i = 0; i < d.n && !r; i++) r = one(w, &d, i, dlen, level);
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
    buf_init(&w.path, ASUSER_PATH_MAX);
    int32_t r;
    if (buf_puts(out, "{\"entries\": [") < 0) r = too_large(&w);
    else if (buf_puts(&w.path, op->path) < 0 || !buf_cstr(&w.path)) r = too_large(&w);
    else r = walk_dir(&w, w.path.len, 0);
    buf_free(&w.path);
    if (r) return r;
    return buf_puts(out, "]}") < 0 ? too_large(&w) : 0;
}
