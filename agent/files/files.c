/*
 * files.c - the file service's shared pieces (see files.h, files_priv.h): the
 * error record, the pure path helpers, the entry helpers (type name, mtime,
 * readlink), the root and dot-name checks, mkdir -p of a parent.
 */
#include "agent/files/files_priv.h"
#include "agent/core/err.h"
#include "agent/core/io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ---- */

void files_err_free(struct files_err *e)
{
    free(e->path);
    e->path = NULL;
}

const char *files_strerror(int errnum)
{
    return errnum == FILES_ENOTREG ? "Not a regular file" : strerror(errnum);
}

int files_fail_take(struct files_err *e, int errnum, char *path)
{
    if (!path) errnum = ENOMEM;
    e->errnum = errnum;
    e->at_fd = 0;
    e->path = path;
    err_set(e->message, "%s", files_strerror(errnum));
    return -1;
}

int files_fail(struct files_err *e, int errnum, const char *path)
{
    return files_fail_take(e, errnum, strdup(path ? path : ""));
}

int files_fail_msg(struct files_err *e, int errnum, const char *path, const char *message)
{
    files_fail(e, errnum, path);
    if (e->path) err_set(e->message, "%s", message);
    return -1;
}

int files_fail_fd(struct files_err *e, int errnum)
{
    e->errnum = errnum;
    e->at_fd = 1;
    e->path = NULL;
    err_set(e->message, "%s", files_strerror(errnum));
    return -1;
}

/* ---- paths ---- */

enum files_tmp_kind files_tmp_kind(const char *name, size_t n, const char **target, size_t *tlen)
{
    static const char mark[] = ".sbx-";
    size_t m = sizeof mark - 1;
    if (n < m + 2 || name[0] != '.') return FILES_TMP_NONE;
    size_t at = n;
    for (size_t i = n - m; i >= 1 && at == n; i--)
        if (!memcmp(name + i, mark, m)) at = i;
    if (at == n || at + m == n) return FILES_TMP_NONE;
    for (size_t i = at + m; i < n; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
            return FILES_TMP_NONE;
    }
    *target = name + 1;
    *tlen = at - 1;
    const char *tail = name + at + m;
    if (n - (at + m) < 3 || tail[1] != '-') return FILES_TMP_OTHER;
    if (tail[0] == FILES_TMP_MARK_NEW) return FILES_TMP_NEW;
    return tail[0] == FILES_TMP_MARK_REPLACES ? FILES_TMP_REPLACES : FILES_TMP_OTHER;
}

int files_is_tmp_name(const char *name, size_t n)
{
    const char *t;
    size_t tl;
    return files_tmp_kind(name, n, &t, &tl) != FILES_TMP_NONE;
}

char *files_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)slash + nl + 1);
    if (!p) return NULL;
    memcpy(p, dir, dl);
    if (slash) p[dl] = '/';
    memcpy(p + dl + slash, name, nl + 1);
    return p;
}

const char *files_last_name(const char *path, size_t *len)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    if (start == end) start = 0; /* "/" or "//" */
    *len = end - start;
    return path + start;
}

char *files_strip_slashes(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, path, n);
    p[n] = '\0';
    return p;
}

int files_tmp_prefix(char *out, size_t cap, const char *target, size_t slack)
{
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    size_t blen = strlen(target + dirlen);
    if (blen > FILES_TMP_NAME_CUT) blen = FILES_TMP_NAME_CUT;
    if (dirlen + blen + slack >= cap) return -1;
    memcpy(out, target, dirlen);
    out[dirlen] = '.';
    memcpy(out + dirlen + 1, target + dirlen, blen);
    out[dirlen + 1 + blen] = '\0';
    return (int)(dirlen + 1 + blen);
}

int files_is_dots(const char *name)
{
    return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* A check on the open directory's inode, never on a path before the walk:
 * the guest could swap a directory for a symlink to / in between. */
int files_is_root(const struct stat *st)
{
    struct stat root;
    return stat("/", &root) == 0 && st->st_dev == root.st_dev && st->st_ino == root.st_ino;
}

int files_make_parents(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" names a/b */
    while (n > 0 && path[n - 1] != '/') n--;
    while (n > 1 && path[n - 1] == '/') n--;
    /* No parent, or "/" (n is 1 for a one-character parent "a" too). */
    if (n == 0 || (n == 1 && path[0] == '/')) return 0;
    char *dir = malloc(n + 1);
    if (!dir) return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    int r = io_mkdir_p(dir, 0777);
    int e = errno;
    free(dir);
    errno = e;
    return r;
}

/* ---- entries ---- */

const char *files_type_name(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFREG: return "file";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "symlink";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "char";
    case S_IFBLK: return "block";
    default: return "unknown";
    }
}

double files_mtime(const struct stat *st)
{
    /* Exactly CPython's fill_time(): (double)sec + nsec * 1e-9. */
    return (double)st->st_mtim.tv_sec + (double)st->st_mtim.tv_nsec * 1e-9;
}

void files_entry_free(struct files_entry *ent)
{
    free(ent->target);
    ent->target = NULL;
}

char *files_readlink(int dirfd, const char *name, size_t *len)
{
    size_t cap = 256;
    for (;;) {
        char *p = malloc(cap);
        if (!p) return NULL;
        ssize_t n = readlinkat(dirfd, name, p, cap);
        if (n < 0) {
            int e = errno;
            free(p);
            errno = e;
            return NULL;
        }
        if ((size_t)n < cap) {
            *len = (size_t)n;
            return p;
        }
        free(p);
        /* Truncated: try larger, up to a bound no real target reaches. */
        if (cap >= FILES_LINK_MAX) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        cap *= 4;
    }
}
