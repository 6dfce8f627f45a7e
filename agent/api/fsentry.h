/*
 * fsentry.h - filesystem.EntryInfo as envd fills it (README "sandbox-agent
 * serve", the filesystem API): name, type (a symlink's is its target's),
 * absolute path, size (an int64, so a JSON string), permission bits, the
 * permissions text of Go's FileMode.String ("-rw-r--r--", "drwxr-xr-x",
 * "Lrwxrwxrwx"), owner and group names, modifiedTime (RFC 3339, UTC, 0/3/6/9 fraction digits as
 * protobuf's JSON writes a Timestamp), symlinkTarget (absolute) and the
 * metadata kept in `user.e2b.*` extended attributes.
 *
 * Owner and group names come from /etc/passwd and /etc/group (the numeric id
 * when there is no entry) through a small per-caller cache, so a listing of
 * many files reads each file once per id.
 */
#ifndef SA_API_FSENTRY_H
#define SA_API_FSENTRY_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* The xattr namespace of an entry's metadata (README: X-Metadata-*). */
#define FSENTRY_XATTR_PREFIX "user.e2b."
/* A metadata key or value longer than the kernel's own bounds is not read. */
#define FSENTRY_XATTR_LIST_MAX (64u * 1024u)
#define FSENTRY_XATTR_VALUE_MAX (64u * 1024u)

#define FSNAMES_CACHE 64
#define FSNAMES_NAME_MAX 256

struct fsnames {
    const char *passwd, *group; /* the files read (USER_PASSWD, USER_GROUP) */
    struct {
        unsigned id;
        int is_group;
        char name[FSNAMES_NAME_MAX];
    } e[FSNAMES_CACHE];
    size_t n, next;
};

void fsnames_init(struct fsnames *c, const char *passwd, const char *group);
/* The name of uid (is_group 0) or gid (1): from the file, else the number. */
const char *fsnames_get(struct fsnames *c, unsigned id, int is_group);

/* "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY", else "FILE_TYPE_UNSPECIFIED"
 * (FIFOs, sockets, devices, and a symlink: see fsentry_kind). */
const char *fsentry_type(mode_t m);

/* An entry's type and permission bits as envd reports them. own is the
 * lstat mode; target the mode a symlink resolves to, or NULL (not a
 * symlink, or one that dangles, loops or cannot be followed). A symlink
 * that resolves is its target's type and bits (FILE or DIRECTORY; a FIFO or
 * a device there is UNSPECIFIED), so SDKs that know no FILE_TYPE_SYMLINK
 * parse it; one that does not is UNSPECIFIED with its own bits, as envd
 * leaves it (SDKs drop such entries from a listing). */
struct fsentry_kind {
    const char *type;
    unsigned mode;
};
void fsentry_kind(mode_t own, const mode_t *target, struct fsentry_kind *k);
/* Go's FileMode.String of an lstat mode, into out (at least 24 bytes). */
void fsentry_permissions(mode_t m, char *out);
/* A Timestamp in RFC 3339 as protobuf's JSON mapping writes it, quoted. */
int fsentry_time(struct buf *b, const struct timespec *ts);

/* The EntryInfo object of the entry at path (absolute; path is what is
 * reported), called name (nlen bytes), whose lstat is st. Returns 0, or -1
 * past b's bound. */
int fsentry_json(struct buf *b, const char *path, const char *name, size_t nlen,
                 const struct stat *st, struct fsnames *names);
/* lstat path, then fsentry_json with its last component as the name.
 * Returns 0, or -1 with errno (ENOMEM past b's bound). */
int fsentry_stat_json(struct buf *b, const char *path, struct fsnames *names);

/* The same, built by a process that is not the user w (a watch's events, in
 * the loop as root) from only what w could see (agent/api/fsperm.h): the
 * lstat of path (w may search its directory: the caller's to make sure), a
 * symlink's target and its mode only as far as w may resolve it (else the
 * link's text made absolute and mode 0, as for a dangling one), metadata
 * only when w may read the file. w NULL: as the process itself. */
struct fsperm_who;
int fsentry_stat_json_as(struct buf *b, const char *path, struct fsnames *names, const struct fsperm_who *w);

#endif
