/*
 * fsimpl.h - the `fs` ops, one function each, called by fsops.c once the
 * command line is parsed. Each prints exactly one result line and returns the
 * exit status.
 */
#ifndef SA_FSIMPL_H
#define SA_FSIMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int fs_op_list(const char *path);                                         /* fslist.c */
int fs_op_stat(const char *path, int follow);                             /* fslist.c */
int fs_op_mkdir(const char *path, int parents, int has_mode, mode_t mode); /* fswrite.c */
int fs_op_write(const char *path, int has_mode, mode_t mode, int parents, int append); /* fswrite.c */
int fs_op_read(const char *path, uint64_t offset, int has_max, uint64_t max); /* fsread.c */
int fs_op_remove(const char *path, int recursive);                         /* fsremove.c */
int fs_op_move(const char *src, const char *dst, int overwrite);           /* fsmove.c */

/*
 * Remove the tree at name (relative to dirfd, or a path with AT_FDCWD)
 * without following symlinks, holding a bounded number of fds whatever its
 * depth. Stops at the first failure: returns 0, or an errno with the path
 * that failed (malloc'd, prefixed by `shown`, the name the caller knows the
 * tree by) in *failed. (fsremove.c)
 */
int fs_remove_tree(int dirfd, const char *name, const char *shown, char **failed);

/* Join a directory path and a name as os.path.join does (no doubled '/'),
 * malloc'd. NULL when out of memory. */
char *fs_join(const char *dir, const char *name);

#endif
