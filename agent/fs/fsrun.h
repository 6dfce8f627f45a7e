/*
 * fsrun.h - each `fs` op once its command line is parsed: call the file
 * service, print the one result line, return the exit status (fsrun.c).
 */
#ifndef SA_FS_FSRUN_H
#define SA_FS_FSRUN_H

#include <stdint.h>
#include <sys/types.h>

/* The parsed command line of one op. */
struct fs_args {
    const char *paths[2]; /* PATH, or SRC and DST */
    int follow, parents, recursive, overwrite, append;
    int has_mode;
    mode_t mode;
    uint64_t offset;
    int has_max;
    uint64_t max;
    int has_length;
    uint64_t length;
};

int fsrun_list(const struct fs_args *a);
int fsrun_stat(const struct fs_args *a);
int fsrun_mkdir(const struct fs_args *a);
int fsrun_remove(const struct fs_args *a);
int fsrun_move(const struct fs_args *a);
int fsrun_write(const struct fs_args *a);
int fsrun_read(const struct fs_args *a);

#endif
