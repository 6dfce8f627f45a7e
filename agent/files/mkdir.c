/*
 * mkdir.c - creating a directory, with its missing parents and an exact
 * mode (see files.h).
 */
#include "agent/files/files_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir, with the missing parents; an existing directory is not created. */
static int make_dir(const char *path, int parents, mode_t mode, int *created)
{
    *created = 1;
    if (mkdir(path, mode) == 0) return 0;
    int e = errno;
    if (e == ENOENT && parents) {
        if (files_make_parents(path) < 0) return errno;
        e = mkdir(path, mode) < 0 ? errno : 0;
    }
    struct stat st;
    /* Already a directory: nothing to do, and says so. */
    if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        *created = 0;
        e = 0;
    }
    return e;
}

int files_mkdir(const char *path, int parents, int has_mode, mode_t mode, int *created, struct files_err *e)
{
    if (!*path) return files_fail(e, ENOENT, path);
    int en = make_dir(path, parents, has_mode ? mode : 0777, created);
    if (en) return files_fail(e, en, path);
    if (!*created || !has_mode) return 0;
    /* The mode is exact, as mkdir -m: the umask does not cut it. Through an
     * fd opened without following a symlink: the guest may have swapped the
     * new directory for a link to /etc/shadow since mkdir, and chmod(path)
     * would follow it. */
    int dfd = open(path, FILES_DIR_FLAGS);
    if (dfd < 0) return files_fail(e, errno, path);
    int r = fchmod(dfd, mode);
    en = errno;
    close(dfd);
    return r < 0 ? files_fail(e, en, path) : 0;
}
