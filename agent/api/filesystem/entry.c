/*
 * entry.c - EntryInfo objects (see filesystem/entry.h).
 */
#include "agent/api/filesystem/entry.h"
#include "agent/api/asuser/perm.h"
#include "agent/api/asuser/path.h"
#include "agent/files/files.h"
#include "agent/core/jsonw.h"
#include "agent/core/num.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- the pure pieces ----------------------------------------------------- */

const char *filesystem_entry_type(mode_t m)
{
    if (S_ISREG(m)) return "FILE_TYPE_FILE";
    if (S_ISDIR(m)) return "FILE_TYPE_DIRECTORY";
    return "FILE_TYPE_UNSPECIFIED";
}

void filesystem_entry_kind(mode_t own, const mode_t *target, struct filesystem_entry_kind *k)
{
    mode_t m = S_ISLNK(own) && target ? *target : own;
    k->type = filesystem_entry_type(m);
    k->mode = (unsigned)(m & 0777);
}

void filesystem_entry_permissions(mode_t m, char *out)
{
    /* Go's letters, in Go's order: d a l T L D p S u g c t ?. */
    size_t k = 0;
    if (S_ISDIR(m)) out[k++] = 'd';
    if (S_ISLNK(m)) out[k++] = 'L';
    if (S_ISBLK(m) || S_ISCHR(m)) out[k++] = 'D';
    if (S_ISFIFO(m)) out[k++] = 'p';
    if (S_ISSOCK(m)) out[k++] = 'S';
    if (m & S_ISUID) out[k++] = 'u';
    if (m & S_ISGID) out[k++] = 'g';
    if (S_ISCHR(m)) out[k++] = 'c';
    if (m & S_ISVTX) out[k++] = 't';
    if (k == 0) out[k++] = '-';
    static const char rwx[] = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) out[k++] = (m & (0400u >> i)) ? rwx[i] : '-';
    out[k] = '\0';
}

/* v in decimal, at least width digits, at p; returns the length. */
static size_t put_num(char *p, unsigned long long v, int width)
{
    char t[24];
    int n = 0;
    do t[n++] = (char)('0' + v % 10), v /= 10;
    while (v || n < width);
    for (int i = 0; i < n; i++) p[i] = t[n - 1 - i];
    return (size_t)n;
}

/* "\"YYYY-MM-DDTHH:MM:SS" of tm into p, as strftime's "%Y-%m-%dT%H:%M:%S"
 * writes it (a year past 9999 as "+N"); without strftime, which brings
 * the time-zone code along. */
static size_t put_tm(char *p, const struct tm *tm)
{
    long long y = tm->tm_year + 1900LL;
    size_t n = 0;
    p[n++] = '"';
    if (y >= 10000) p[n++] = '+';
    if (y < 0) p[n++] = '-';
    n += put_num(p + n, (unsigned long long)(y < 0 ? -y : y), y < 0 ? 3 : 4);
    const int f[5] = {tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec};
    for (int i = 0; i < 5; i++) {
        p[n++] = "--T::"[i];
        n += put_num(p + n, (unsigned long long)f[i], 2);
    }
    return n;
}

int filesystem_entry_time(struct buf *b, const struct timespec *ts)
{
    /* A listing's entries mostly share their second: its text is kept
     * (one loop, or one helper, per process). */
    static time_t last;
    static char head[64];
    static size_t hlen;
    static int cached;
    if (!cached || ts->tv_sec != last) {
        struct tm tm;
        time_t t = ts->tv_sec;
        if (!gmtime_r(&t, &tm)) memset(&tm, 0, sizeof tm);
        hlen = put_tm(head, &tm);
        last = t;
        cached = 1;
    }
    long ns = ts->tv_nsec;
    int digits = ns <= 0 ? 0 : ns % 1000000 == 0 ? 3 : ns % 1000 == 0 ? 6 : 9;
    unsigned long long frac = digits == 3 ? (unsigned long long)ns / 1000000
                            : digits == 6 ? (unsigned long long)ns / 1000 : (unsigned long long)ns;
    if (buf_append(b, head, hlen) < 0 || (digits && (buf_putc(b, '.') < 0 || buf_put_u64(b, frac, digits) < 0)))
        return -1;
    return buf_append(b, "Z\"", 2);
}

/* ---- what the filesystem says -------------------------------------------- */

/* A symlink's text made absolute (joined to the link's directory), as a
 * JSON string: what a link that cannot be resolved shows. */
static int link_text(struct buf *b, const char *path)
{
    char t[4096];
    ssize_t n = readlink(path, t, sizeof t - 1);
    if (n < 0) return jsonw_cstr(b, path);
    t[n] = '\0';
    if (t[0] == '/') return jsonw_cstr(b, t);
    struct buf abs;
    buf_init(&abs, ASUSER_PATH_MAX);
    int r = -1;
    if (buf_puts(&abs, path) == 0 && buf_cstr(&abs)) {
        char *slash = strrchr(abs.data, '/');
        abs.len = slash ? (size_t)(slash - abs.data) : 0;
        if (buf_putc(&abs, '/') == 0 && buf_puts(&abs, t) == 0 && buf_cstr(&abs)) {
            asuser_path_clean(abs.data);
            r = jsonw_cstr(b, abs.data);
        }
    }
    buf_free(&abs);
    return r;
}

/* A symlink's target, absolute: where it resolves to, else its text made
 * absolute. */
static int symlink_target(struct buf *b, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real) return link_text(b, path);
    int r = jsonw_cstr(b, real);
    free(real);
    return r;
}

/* The attribute names last listed (listxattr's NUL-separated list). */
static char xnames[FILESYSTEM_XATTR_LIST_MAX];

static int has_ours(ssize_t n)
{
    size_t plen = strlen(FILESYSTEM_XATTR_PREFIX);
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(xnames + i) + 1)
        if (!strncmp(xnames + i, FILESYSTEM_XATTR_PREFIX, plen) && xnames[i + plen]) return 1;
    return 0;
}

/* listxattr into xnames. The kernel allocates a buffer of the size it is
 * given for every call (64 KiB: an order-4 allocation per file listed),
 * so a small one first: most files have no attribute, or a few. */
static ssize_t list_names(const char *at)
{
    ssize_t n = listxattr(at, xnames, 256);
    return n < 0 && errno == ERANGE ? listxattr(at, xnames, sizeof xnames) : n;
}

int filesystem_entry_meta_probe(const char *at) { return has_ours(list_names(at)); }

/* "metadata": {...} from user.e2b.* (nothing when there is none). */
static int metadata(struct buf *b, const char *path)
{
    static char value[FILESYSTEM_XATTR_VALUE_MAX];
    ssize_t n = list_names(path);
    size_t plen = strlen(FILESYSTEM_XATTR_PREFIX);
    int first = 1;
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(xnames + i) + 1) {
        const char *name = xnames + i;
        if (strncmp(name, FILESYSTEM_XATTR_PREFIX, plen) != 0 || !name[plen]) continue;
        ssize_t v = getxattr(path, name, value, sizeof value);
        if (v < 0) continue;
        if (buf_puts(b, first ? ", \"metadata\": {" : ", ") < 0 || jsonw_cstr(b, name + plen) < 0 ||
            buf_puts(b, ": ") < 0 || jsonw_str(b, value, (size_t)v, JSONW_SURROGATEESCAPE) < 0)
            return -1;
        first = 0;
    }
    return first ? 0 : buf_putc(b, '}');
}

/* What a symlink shows for w (see filesystem_entry_stat_json_as): where it resolves
 * to for w, into real; its target's lstat into target. Returns 1 when w
 * resolves it, 0 when not. */
static int resolve_for(const struct asuser_who *w, const char *path, char *real, size_t cap, struct stat *target)
{
    return asuser_perm_resolve(w, path, real, cap) == 0 && lstat(real, target) == 0;
}

/* The fields from "type" to "modifiedTime", without printf (a listing
 * writes ten thousand of them). */
static int entry_fields(struct buf *b, const char *path, const struct stat *st, const struct filesystem_entry_kind *k,
                        struct user_names *names)
{
    char perm[24];
    filesystem_entry_permissions(st->st_mode, perm);
    return buf_puts(b, ", \"type\": \"") < 0 || buf_puts(b, k->type) < 0 || buf_puts(b, "\", \"path\": ") < 0 ||
                   jsonw_cstr(b, path) < 0 || buf_puts(b, ", \"size\": \"") < 0 ||
                   buf_put_i64(b, (long long)st->st_size) < 0 || buf_puts(b, "\", \"mode\": ") < 0 ||
                   buf_put_u64(b, k->mode, 0) < 0 || buf_puts(b, ", \"permissions\": \"") < 0 ||
                   buf_puts(b, perm) < 0 || buf_puts(b, "\", \"owner\": ") < 0 ||
                   jsonw_cstr(b, user_names_get(names, st->st_uid, 0)) < 0 || buf_puts(b, ", \"group\": ") < 0 ||
                   jsonw_cstr(b, user_names_get(names, st->st_gid, 1)) < 0 ||
                   buf_puts(b, ", \"modifiedTime\": ") < 0 || filesystem_entry_time(b, &st->st_mtim) < 0
               ? -1
               : 0;
}

/* meta: 0 when the caller knows there is no user.e2b.* attribute to read
 * (a listing probed it), else 1. */
static int entry_json(struct buf *b, const char *path, const char *name, size_t nlen, const struct stat *st,
                      struct user_names *names, const struct asuser_who *w, int meta)
{
    char real[PATH_MAX];
    struct stat target;
    struct filesystem_entry_kind k;
    int link = S_ISLNK(st->st_mode), resolved = 0;
    if (link && w) resolved = resolve_for(w, path, real, sizeof real, &target);
    else if (link) resolved = stat(path, &target) == 0;
    filesystem_entry_kind(st->st_mode, resolved ? &target.st_mode : NULL, &k);
    /* The xattrs are read through a symlink: its target's, for w only
     * when w may read that. */
    meta = meta && (!w || (link ? resolved && asuser_perm_path(w, real, &target, ASUSER_PERM_R)
                                : asuser_perm_path(w, path, st, ASUSER_PERM_R)));
    if (buf_puts(b, "{\"name\": ") < 0 || jsonw_str(b, name, nlen, JSONW_SURROGATEESCAPE) < 0 ||
        entry_fields(b, path, st, &k, names) < 0)
        return -1;
    if (link && buf_puts(b, ", \"symlinkTarget\": ") < 0) return -1;
    if (link && (!w ? symlink_target(b, path) : resolved ? jsonw_cstr(b, real) : link_text(b, path)) < 0)
        return -1;
    if (meta && metadata(b, path) < 0) return -1;
    return buf_putc(b, '}');
}

int filesystem_entry_json(struct buf *b, const char *path, const char *name, size_t nlen,
                 const struct stat *st, struct user_names *names, int meta)
{
    return entry_json(b, path, name, nlen, st, names, NULL, meta);
}

int filesystem_entry_stat_json_as(struct buf *b, const char *path, struct user_names *names, const struct asuser_who *w)
{
    struct stat st;
    if (lstat(path, &st) < 0) return -1;
    size_t nlen;
    const char *name = files_last_name(path, &nlen);
    if (entry_json(b, path, name, nlen, &st, names, w, 1) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int filesystem_entry_stat_json(struct buf *b, const char *path, struct user_names *names)
{
    return filesystem_entry_stat_json_as(b, path, names, NULL);
}
