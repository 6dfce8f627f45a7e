/*
 * perm.h - what a request's user may do to a file, judged by the agent
 * (root) from the inode, as the kernel would judge the user (README
 * "sandbox-agent serve", watches): for the work a watch does in the loop as
 * root - watching and listing the directories below the watched one,
 * building the entries of its events - and must do only as far as the user
 * could.
 *
 * The check is the kernel's generic_permission for a process with the
 * user's uid, gid and groups and no capabilities: the owner's bits, else the
 * POSIX access ACL (system.posix_acl_access) when there is one and the group
 * class has any bit, else the group's bits for a member, else the others'.
 * uid 0 may do everything (but execute a file no one may). Security
 * modules (SELinux, AppArmor) are not consulted: what they refuse the user
 * may still be shown.
 *
 * asuser_perm_allows and asuser_perm_acl are pure (tests/unit/test_fsperm.c); the
 * rest reads the ACL or looks up a path, as root, never blocking on more
 * than a stat.
 */
#ifndef SA_API_ASUSER_PERM_H
#define SA_API_ASUSER_PERM_H

#include "agent/core/user.h"

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ASUSER_PERM_R 4
#define ASUSER_PERM_W 2
#define ASUSER_PERM_X 1

/* An ACL larger than this (some 1,000 entries) is not read: refused. */
#define ASUSER_PERM_ACL_MAX 8192
/* Symlinks followed in one lookup, as the kernel's MAXSYMLINKS. */
#define ASUSER_PERM_HOPS_MAX 40

/* Whom the check is for: a copy of a user_info's credentials. */
struct asuser_who {
    uid_t uid;
    gid_t gid;
    size_t ngroups;
    gid_t groups[USER_GROUPS_MAX];
};

void asuser_perm_who_of(const struct user_info *u, struct asuser_who *w);

/* want (ASUSER_PERM_R | W | X) on an inode of mode, owned by (uid, gid), whose
 * access ACL is acl (n bytes, the xattr's value; NULL when it has none).
 * Returns 1 when allowed, 0 when not (a malformed ACL is refused). Pure. */
int asuser_perm_allows(const struct asuser_who *w, mode_t mode, uid_t uid, gid_t gid, const void *acl, size_t n,
                  int want);

/* The ACL part alone (the caller is not the owner): 1, 0, or -1 malformed. */
int asuser_perm_acl(const struct asuser_who *w, gid_t file_gid, const void *acl, size_t n, int want);

/* want on the file open as fd whose fstat is st (its ACL read from fd; fd
 * -1: a file that could not be opened, refused when its ACL would matter). */
int asuser_perm_fd(const struct asuser_who *w, int fd, const struct stat *st, int want);
/* want on the file at path (not followed) whose lstat is st. */
int asuser_perm_path(const struct asuser_who *w, const char *path, const struct stat *st, int want);

/* What path (absolute) resolves to for w: every directory looked up in
 * must let w search it, and a symlink met is followed (at most
 * ASUSER_PERM_HOPS_MAX; in a sticky world-writable directory only one owned by
 * w or the directory's owner, as with fs.protected_symlinks). Writes the
 * resolved path (no symlink in it) into out (cap bytes). Returns 0, or -1
 * with errno (EACCES, ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG). */
int asuser_perm_resolve(const struct asuser_who *w, const char *path, char *out, size_t cap);

#endif
