/*
 * stat.c - one entry, as a listing shows it: lstat (or stat, following),
 * and a symlink's target (see files.h).
 */
#include "agent/files/files_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

int files_stat(const char *path, int follow, struct files_entry *ent, struct files_err *e)
{
    if (fstatat(AT_FDCWD, path, &ent->st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
        return files_fail(e, errno, path);
    ent->target = NULL;
    ent->tlen = 0;
    if (S_ISLNK(ent->st.st_mode) && !(ent->target = files_readlink(AT_FDCWD, path, &ent->tlen)))
        return files_fail(e, errno, path);
    ent->name = files_last_name(path, &ent->nlen);
    ent->path = path;
    ent->plen = strlen(path);
    return 0;
}
