/*
 * list.c - listing a directory (see files.h).
 *
 * list hands each entry to the caller's callback as soon as it is read, so a
 * directory of millions of entries costs the same memory as one of ten: one
 * entry path buffer, one link target at a time. No printf here: this is the
 * hot path of `fs list`.
 */
#include "agent/files/files_priv.h"
#include "agent/core/buf.h"
#include "agent/core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An entry path is the directory's path (an argv string, at most 128 KiB)
 * plus a name of at most 255 bytes. */
#define ENTRY_PATH_MAX (1024 * 1024)

struct lister {
    int fd;
    const char *path;     /* the directory, as given */
    struct buf ent_path;  /* path + '/' + the current name */
    size_t prefix;        /* bytes of ent_path before the name */
};

/* Fill ent for the name just read. Returns 1 to skip it (vanished, or its
 * lstat failed: logged), 0 for an entry, or an errno value. */
static int read_entry(struct lister *l, const char *name, struct files_entry *ent)
{
    if (fstatat(l->fd, name, &ent->st, AT_SYMLINK_NOFOLLOW) < 0) {
        /* Removed since readdir saw it: it is not there any more. */
        if (errno != ENOENT) log_warn("fs list: %s/%s: %s (skipped)", l->path, name, strerror(errno));
        return 1;
    }
    ent->target = NULL;
    ent->tlen = 0;
    if (S_ISLNK(ent->st.st_mode) && !(ent->target = files_readlink(l->fd, name, &ent->tlen))) {
        if (errno == ENOENT) return 1;
        /* An entry without its target is still an entry. */
        log_warn("fs list: readlink %s/%s: %s", l->path, name, strerror(errno));
    }
    ent->name = name;
    ent->nlen = strlen(name);
    l->ent_path.len = l->prefix;
    if (buf_append(&l->ent_path, name, ent->nlen) < 0 || !buf_cstr(&l->ent_path)) {
        files_entry_free(ent);
        return ENOMEM;
    }
    ent->path = l->ent_path.data;
    ent->plen = l->ent_path.len;
    return 0;
}

/* readdir to the end, each entry to fn. Returns 0 or an errno value. */
static int list_entries(struct lister *l, DIR *d, files_list_fn fn, void *ctx)
{
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) return errno;
        if (files_is_dots(de->d_name)) continue;
        struct files_entry ent;
        int r = read_entry(l, de->d_name, &ent);
        if (r == 1) continue;
        if (r) return r;
        r = fn(ctx, &ent);
        files_entry_free(&ent);
        if (r) return r;
    }
}

int files_list(const char *path, files_list_fn fn, void *ctx, struct files_err *e)
{
    struct lister l = {open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY), path, {0}, 0};
    if (l.fd < 0) return files_fail(e, errno, path);
    DIR *d = fdopendir(l.fd);
    if (!d) {
        int en = errno;
        close(l.fd);
        return files_fail(e, en, path);
    }
    /* The entry path prefix, joined as os.path.join does. */
    size_t plen = strlen(path);
    buf_init(&l.ent_path, ENTRY_PATH_MAX);
    int err = 0;
    if (buf_append(&l.ent_path, path, plen) < 0 ||
        (plen && path[plen - 1] != '/' && buf_putc(&l.ent_path, '/') < 0))
        err = ENOMEM;
    l.prefix = l.ent_path.len;
    if (!err) err = list_entries(&l, d, fn, ctx);
    buf_free(&l.ent_path);
    closedir(d);
    return err ? files_fail(e, err, path) : 0;
}
