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

int filesystem_entry_time(struct buf *b, const struct timespec *ts)
{
    struct tm tm;
    time_t t = ts->tv_sec;
    char s[64];
    if (!gmtime_r(&t, &tm)) memset(&tm, 0, sizeof tm);
    size_t n = strftime(s, sizeof s, "\"%Y-%m-%dT%H:%M:%S", &tm);
    long ns = ts->tv_nsec;
    if (ns > 0 && ns % 1000000 == 0) n += (size_t)snprintf(s + n, sizeof s - n, ".%03ld", ns / 1000000);
    else if (ns > 0 && ns % 1000 == 0) n += (size_t)snprintf(s + n, sizeof s - n, ".%06ld", ns / 1000);
    else if (ns > 0) n += (size_t)snprintf(s + n, sizeof s - n, ".%09ld", ns);
    return buf_append(b, s, n) < 0 || buf_puts(b, "Z\"") < 0 ? -1 : 0;
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

/* "metadata": {...} from user.e2b.* (nothing when there is none). */
static int metadata(struct buf *b, const char *path)
{
    static char names[FILESYSTEM_XATTR_LIST_MAX], value[FILESYSTEM_XATTR_VALUE_MAX];
    ssize_t n = listxattr(path, names, sizeof names);
    size_t plen = strlen(FILESYSTEM_XATTR_PREFIX);
    int first = 1;
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
        const char *name = names + i;
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

static int entry_json(struct buf *b, const char *path, const char *name, size_t nlen, const struct stat *st,
                      struct user_names *names, const struct asuser_who *w)
{
    char perm[24], real[PATH_MAX];
    struct stat target;
    struct filesystem_entry_kind k;
    int link = S_ISLNK(st->st_mode), resolved = 0;
    if (link && w) resolved = resolve_for(w, path, real, sizeof real, &target);
    else if (link) resolved = stat(path, &target) == 0;
    filesystem_entry_kind(st->st_mode, resolved ? &target.st_mode : NULL, &k);
    /* The xattrs are read through a symlink: its target's, for w only
     * when w may read that. */
    int meta = !w || (link ? resolved && asuser_perm_path(w, real, &target, ASUSER_PERM_R)
                           : asuser_perm_path(w, path, st, ASUSER_PERM_R));
    filesystem_entry_permissions(st->st_mode, perm);
    if (buf_puts(b, "{\"name\": ") < 0 || jsonw_str(b, name, nlen, JSONW_SURROGATEESCAPE) < 0 ||
        buf_printf(b, ", \"type\": \"%s\", \"path\": ", k.type) < 0 ||
        jsonw_cstr(b, path) < 0 ||
        buf_printf(b, ", \"size\": \"%lld\", \"mode\": %u, \"permissions\": \"%s\", \"owner\": ",
                   (long long)st->st_size, k.mode, perm) < 0 ||
        jsonw_cstr(b, user_names_get(names, st->st_uid, 0)) < 0 || buf_puts(b, ", \"group\": ") < 0 ||
        jsonw_cstr(b, user_names_get(names, st->st_gid, 1)) < 0 ||
        buf_puts(b, ", \"modifiedTime\": ") < 0 || filesystem_entry_time(b, &st->st_mtim) < 0)
        return -1;
    if (link && buf_puts(b, ", \"symlinkTarget\": ") < 0) return -1;
    if (link && (!w ? symlink_target(b, path) : resolved ? jsonw_cstr(b, real) : link_text(b, path)) < 0)
        return -1;
    if (meta && metadata(b, path) < 0) return -1;
    return buf_putc(b, '}');
}

int filesystem_entry_json(struct buf *b, const char *path, const char *name, size_t nlen,
                 const struct stat *st, struct user_names *names)
{
    return entry_json(b, path, name, nlen, st, names, NULL);
}

int filesystem_entry_stat_json_as(struct buf *b, const char *path, struct user_names *names, const struct asuser_who *w)
{
    struct stat st;
    if (lstat(path, &st) < 0) return -1;
    size_t nlen;
    const char *name = files_last_name(path, &nlen);
    if (entry_json(b, path, name, nlen, &st, names, w) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int filesystem_entry_stat_json(struct buf *b, const char *path, struct user_names *names)
{
    return filesystem_entry_stat_json_as(b, path, names, NULL);
}
