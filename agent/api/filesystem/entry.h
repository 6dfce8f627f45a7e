/*
 * entry.h - filesystem.EntryInfo as envd fills it (README "sandbox-agent
 * serve", the filesystem API): name, type (a symlink's is its target's),
 * absolute path, size (an int64, so a JSON string), permission bits, the
 * permissions text of Go's FileMode.String ("-rw-r--r--", "drwxr-xr-x",
 * "Lrwxrwxrwx"), owner and group names, modifiedTime (RFC 3339, UTC, 0/3/6/9 fraction digits as
 * protobuf's JSON writes a Timestamp), symlinkTarget (absolute) and the
 * metadata kept in `user.e2b.*` extended attributes.
 *
 * Owner and group names come from /etc/passwd and /etc/group (the numeric id
 * when there is no entry) through the caller's struct user_names (core/user.h).
 */
#ifndef SA_API_FILESYSTEM_ENTRY_H
#define SA_API_FILESYSTEM_ENTRY_H

#include "agent/core/buf.h"
#include "agent/core/user.h"

#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* The xattr namespace of an entry's metadata (README: X-Metadata-*). */
#define FILESYSTEM_XATTR_PREFIX "user.e2b."
/* A metadata key or value longer than the kernel's own bounds is not read. */
#define FILESYSTEM_XATTR_LIST_MAX (64u * 1024u)
#define FILESYSTEM_XATTR_VALUE_MAX (64u * 1024u)


/* "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY", else "FILE_TYPE_UNSPECIFIED"
 * (FIFOs, sockets, devices, and a symlink: see filesystem_entry_kind). */
const char *filesystem_entry_type(mode_t m);

/* An entry's type and permission bits as envd reports them. own is the
 * lstat mode; target the mode a symlink resolves to, or NULL (not a
 * symlink, or one that dangles, loops or cannot be followed). A symlink
 * that resolves is its target's type and bits (FILE or DIRECTORY; a FIFO or
 * a device there is UNSPECIFIED), so SDKs that know no FILE_TYPE_SYMLINK
 * parse it; one that does not is UNSPECIFIED with its own bits, as envd
 * leaves it (SDKs drop such entries from a listing). */
struct filesystem_entry_kind {
    const char *type;
    unsigned mode;
};
void filesystem_entry_kind(mode_t own, const mode_t *target, struct filesystem_entry_kind *k);
/* Go's FileMode.String of an lstat mode, into out (at least 24 bytes). */
void filesystem_entry_permissions(mode_t m, char *out);
/* A Timestamp in RFC 3339 as protobuf's JSON mapping writes it, quoted. */
int filesystem_entry_time(struct buf *b, const struct timespec *ts);

/* The EntryInfo object of the entry at path (absolute; path is what is
 * reported), called name (nlen bytes), whose lstat is st; meta 0 when the
 * caller knows it has no user.e2b.* attribute (filesystem_entry_meta_probe
 * said so: nothing to read), else 1. Returns 0, or -1 past b's bound. */
int filesystem_entry_json(struct buf *b, const char *path, const char *name, size_t nlen,
                 const struct stat *st, struct user_names *names, int meta);
/* 1 when the file at `at` (a path, or a name relative to the cwd; through
 * a symlink) has a user.e2b.* attribute, else 0 (none, or they cannot be
 * read: what the metadata then shows is nothing either). */
int filesystem_entry_meta_probe(const char *at);
/* lstat path, then filesystem_entry_json with its last component as the name.
 * Returns 0, or -1 with errno (ENOMEM past b's bound). */
int filesystem_entry_stat_json(struct buf *b, const char *path, struct user_names *names);

/* The same, built by a process that is not the user w (a watch's events, in
 * the loop as root) from only what w could see (asuser/perm.h): the
 * lstat of path (w may search its directory: the caller's to make sure), a
 * symlink's target and its mode only as far as w may resolve it (else the
 * link's text made absolute and mode 0, as for a dangling one), metadata
 * only when w may read the file. w NULL: as the process itself. */
struct asuser_who;
int filesystem_entry_stat_json_as(struct buf *b, const char *path, struct user_names *names, const struct asuser_who *w);

#endif
