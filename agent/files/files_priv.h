/*
 * files_priv.h - what the file service's own files share and no caller sees:
 * filling a struct files_err, the root and dot-name checks, readlink, mkdir -p
 * of a parent, the tree removal (remove.c) and the cross-filesystem copy
 * (copy.c) that move builds on.
 *
 * Every operation leaves its struct files_err alone on success and fills all of
 * it on failure (the caller need not initialise it); to replace a failure
 * already recorded, files_err_free it first.
 */
#ifndef SA_FILES_FILES_PRIV_H
#define SA_FILES_FILES_PRIV_H

#include "agent/files/files.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>

/* Entering a directory never follows a symlink. */
#define FILES_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* e = {errnum, path (copied), files_strerror(errnum)}; returns -1. Out of
 * memory for the copy: ENOMEM, path NULL. */
int files_fail(struct files_err *e, int errnum, const char *path);
/* The same with path already malloc'd (taken; NULL means out of memory). */
int files_fail_take(struct files_err *e, int errnum, char *path);
/* The same with message instead of the errno's text. */
int files_fail_msg(struct files_err *e, int errnum, const char *path, const char *message);
/* The caller's fd failed: at_fd set, no path. */
int files_fail_fd(struct files_err *e, int errnum);

/* "." or "..". */
int files_is_dots(const char *name);
/* The directory st is "/" (compared by device and inode, so a bind mount of
 * / is caught too). */
int files_is_root(const struct stat *st);

/*
 * readlinkat into a malloc'd buffer (not NUL-terminated); *len is set.
 * Returns NULL with errno set. Bounded at FILES_LINK_MAX (PATH_MAX is 4 KiB on
 * Linux): a longer target is ENAMETOOLONG.
 */
#define FILES_LINK_MAX (64 * 1024)
char *files_readlink(int dirfd, const char *name, size_t *len);

/* Create the parent directories of path (mkdir -p of its dirname). Returns
 * 0, or -1 with errno set. */
int files_make_parents(const char *path);

/*
 * Remove the tree at name (relative to dirfd, or a path with AT_FDCWD)
 * without following symlinks, holding a bounded number of fds whatever its
 * depth. Stops at the first failure: 0, or -1 with e naming the path that
 * failed (prefixed by `shown`, the name the caller knows the tree by).
 * (remove.c)
 */
int files_remove_tree(int dirfd, const char *name, const char *shown, struct files_err *e);

/*
 * Copy the entry sname of sfd (already lstat'ed into st) to the new name
 * dname of dfd: files, directories (recursively), symlinks and special
 * files, with mode, owner (as root) and times. spath names the source in
 * errors. (copy.c)
 */
int files_copy_entry(int sfd, const char *sname, int dfd, const char *dname, const struct stat *st,
                  const char *spath, struct files_err *e);

/* The data of the open file `in` to the new file dname of dfd (created
 * exclusively), with st's mode, owner and times. `in` must be a regular file
 * by its own fstat (the source may have been swapped for a device or a FIFO
 * since it was lstat'ed): anything else is FILES_ENOTREG and creates nothing.
 * (copy.c) */
int files_copy_fd(int in, int dfd, const char *dname, const struct stat *st, const char *spath, struct files_err *e);

#endif
