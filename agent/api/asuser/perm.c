/*
 * perm.c - a user's permissions judged by the agent (see asuser/perm.h): the
 * mode bits and the POSIX access ACL as the kernel reads them, and a path
 * looked up as the user would look it up.
 */
#include "agent/api/asuser/perm.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The xattr holding the access ACL, and its format (linux/posix_acl_xattr.h):
 * a little-endian 4-byte version (2), then 8-byte entries {tag, perm, id}. */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_VERSION 2
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_GROUP 0x08
#define ACL_MASK 0x10
#define ACL_OTHER 0x20

/* A lookup's remaining path: a symlink's text plus what followed it. */
#define WALK_MAX (2 * PATH_MAX)

void asuser_perm_who_of(const struct user_info *u, struct asuser_who *w)
{
    w->uid = u->uid;
    w->gid = u->gid;
    w->ngroups = u->ngroups < USER_GROUPS_MAX ? u->ngroups : USER_GROUPS_MAX;
    memcpy(w->groups, u->groups, w->ngroups * sizeof w->groups[0]);
}

static int member(const struct asuser_who *w, gid_t g)
{
    if (g == w->gid) return 1;
    for (size_t i = 0; i < w->ngroups; i++)
        if (w->groups[i] == g) return 1;
    return 0;
}

static unsigned le16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Entry i grants perm: the ACL_MASK after it (if any) limits it. */
static int masked(const unsigned char *e, size_t i, size_t count, unsigned perm, int want)
{
    for (size_t j = i + 1; j < count; j++)
        if (le16(e + 8 * j) == ACL_MASK) return (perm & le16(e + 8 * j + 2) & (unsigned)want) == (unsigned)want;
    return (perm & (unsigned)want) == (unsigned)want;
}

int asuser_perm_acl(const struct asuser_who *w, gid_t file_gid, const void *acl, size_t n, int want)
{
    const unsigned char *p = acl;
    if (!p || n < 4 || (n - 4) % 8 || le32(p) != ACL_VERSION) return -1;
    const unsigned char *e = p + 4;
    size_t count = (n - 4) / 8;
    int found = 0; /* a group entry matched, without granting */
    for (size_t i = 0; i < count; i++) {
        unsigned tag = le16(e + 8 * i), perm = le16(e + 8 * i + 2);
        uint32_t id = le32(e + 8 * i + 4);
        switch (tag) {
        case ACL_USER_OBJ: case ACL_MASK:
            break; /* the owner was judged by the caller; the mask applies below */
        case ACL_USER:
            if (id == (uint32_t)w->uid) return masked(e, i, count, perm, want);
            break;
        case ACL_GROUP_OBJ: case ACL_GROUP:
            if (!member(w, tag == ACL_GROUP ? (gid_t)id : file_gid)) break;
            found = 1;
            if ((perm & (unsigned)want) == (unsigned)want) return masked(e, i, count, perm, want);
            break;
        case ACL_OTHER:
            return !found && (perm & (unsigned)want) == (unsigned)want;
        default:
            return -1;
        }
    }
    return -1; /* no ACL_OTHER: not an ACL the kernel would keep */
}

int asuser_perm_allows(const struct asuser_who *w, mode_t mode, uid_t uid, gid_t gid, const void *acl, size_t n,
                  int want)
{
    unsigned wnt = (unsigned)want & 7;
    /* Root's capabilities: everything, but execute a file no one may. */
    if (w->uid == 0) return !(wnt & ASUSER_PERM_X) || S_ISDIR(mode) || (mode & 0111);
    if (w->uid == uid) return (((unsigned)mode >> 6) & wnt) == wnt;
    /* The kernel reads the ACL only when the group class has a bit. */
    if (acl && (mode & S_IRWXG)) return asuser_perm_acl(w, gid, acl, n, want) == 1;
    unsigned bits = member(w, gid) ? ((unsigned)mode >> 3) & 7 : (unsigned)mode & 7;
    return (bits & wnt) == wnt;
}

/* Whether the ACL matters: w is neither root nor the owner, and the group
 * class has a bit. */
static int needs_acl(const struct asuser_who *w, const struct stat *st)
{
    return w->uid != 0 && w->uid != st->st_uid && (st->st_mode & S_IRWXG);
}

/* Decide with the ACL read (n bytes, or n < 0 with errno): none (ENODATA,
 * or a file system without ACLs) is the mode bits alone; one that could not
 * be read (too large, an error) refuses. */
static int with_acl(const struct asuser_who *w, const struct stat *st, const char *acl, ssize_t n, int want)
{
    if (n < 0 && errno != ENODATA && errno != ENOTSUP) return 0;
    return asuser_perm_allows(w, st->st_mode, st->st_uid, st->st_gid, n < 0 ? NULL : acl, n < 0 ? 0 : (size_t)n,
                         want);
}

int asuser_perm_fd(const struct asuser_who *w, int fd, const struct stat *st, int want)
{
    if (!needs_acl(w, st)) return asuser_perm_allows(w, st->st_mode, st->st_uid, st->st_gid, NULL, 0, want);
    if (fd < 0) return 0;
    char acl[ASUSER_PERM_ACL_MAX];
    return with_acl(w, st, acl, fgetxattr(fd, ACL_XATTR, acl, sizeof acl), want);
}

int asuser_perm_path(const struct asuser_who *w, const char *path, const struct stat *st, int want)
{
    if (!needs_acl(w, st)) return asuser_perm_allows(w, st->st_mode, st->st_uid, st->st_gid, NULL, 0, want);
    char acl[ASUSER_PERM_ACL_MAX];
    return with_acl(w, st, acl, lgetxattr(path, ACL_XATTR, acl, sizeof acl), want);
}

/* ---- a lookup as the user ------------------------------------------------ */

/* The directory dir (symlink-free), which w looks a name up in: w must
 * search it. Its lstat into st. Returns 0, or -1 with errno. */
static int may_search(const struct asuser_who *w, const char *dir, struct stat *st)
{
    if (lstat(dir, st) < 0) return -1;
    if (!S_ISDIR(st->st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    if (!asuser_perm_path(w, dir, st, ASUSER_PERM_X)) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

/* fs.protected_symlinks (assumed on, every distribution's default): in a
 * sticky world-writable directory only a link of w's or the directory
 * owner's is followed. */
static int link_protected(const struct asuser_who *w, const struct stat *dir, const struct stat *link)
{
    return (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH) && link->st_uid != w->uid &&
           link->st_uid != dir->st_uid;
}

/* out (len bytes) without its last component ("/" stays). */
static size_t pop(char *out, size_t len)
{
    while (len > 1 && out[len - 1] != '/') len--;
    if (len > 1) len--;
    out[len] = '\0';
    return len;
}

/* The symlink at out (whose directory is out[0..dir_len)) replaces itself
 * in the walk: todo becomes its text followed by todo[rest..]. Returns the
 * new length of out, or -1 with errno. */
static int splice_link(char *out, size_t dir_len, char *todo, size_t rest)
{
    char text[PATH_MAX];
    ssize_t n = readlink(out, text, sizeof text);
    if (n < 0) return -1;
    if (n == 0) {
        errno = ENOENT; /* an empty symlink resolves to nothing */
        return -1;
    }
    size_t rlen = strlen(todo + rest);
    if ((size_t)n >= sizeof text || (size_t)n + rlen + 1 > WALK_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memmove(todo + n, todo + rest, rlen + 1);
    memcpy(todo, text, (size_t)n);
    if (text[0] == '/') dir_len = 1; /* absolute: from the top again */
    out[dir_len] = '\0';
    return (int)dir_len;
}

int asuser_perm_resolve(const struct asuser_who *w, const char *path, char *out, size_t cap)
{
    char todo[WALK_MAX];
    size_t tlen = strlen(path), len = 1, pos = 0;
    if (path[0] != '/' || tlen >= sizeof todo || cap < 2) {
        errno = path[0] != '/' ? EINVAL : ENAMETOOLONG;
        return -1;
    }
    memcpy(todo, path, tlen + 1);
    memcpy(out, "/", 2);
    for (int hops = 0;;) {
        while (todo[pos] == '/') pos++;
        if (!todo[pos]) return 0;
        size_t end = pos;
        while (todo[end] && todo[end] != '/') end++;
        size_t clen = end - pos;
        struct stat dir, st;
        if (may_search(w, out, &dir) < 0) return -1; /* every name, "." and ".." too */
        if (clen == 1 && todo[pos] == '.') {
            pos = end;
            continue;
        }
        if (clen == 2 && todo[pos] == '.' && todo[pos + 1] == '.') {
            len = pop(out, len);
            pos = end;
            continue;
        }
        size_t dir_len = len;
        if (len + 1 + clen + 1 > cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (len > 1) out[len++] = '/';
        memcpy(out + len, todo + pos, clen);
        len += clen;
        out[len] = '\0';
        if (lstat(out, &st) < 0) return -1;
        if (S_ISLNK(st.st_mode)) {
            int r;
            if (++hops > ASUSER_PERM_HOPS_MAX || link_protected(w, &dir, &st)) {
                errno = hops > ASUSER_PERM_HOPS_MAX ? ELOOP : EACCES;
                return -1;
            }
            if ((r = splice_link(out, dir_len, todo, end)) < 0) return -1;
            len = (size_t)r;
            pos = 0;
            continue;
        }
        if (todo[end] == '/' && !S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        pos = end;
    }
}
