/*
 * fslist.c - `fs list` and `fs stat`.
 *
 * list streams: entries are formatted into a buffer that is flushed to stdout
 * every FLUSH_AT bytes, so a directory of millions of entries costs the same
 * memory as one of ten. Nothing is written until the first flush, so a
 * directory that fails early (unreadable, vanished) still gets a clean error
 * line instead of half a result.
 */
#include "agent/files/fsimpl.h"
#include "agent/files/fsout.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FLUSH_AT (64 * 1024)
/* One entry is at most two 255-byte names and a 64 KiB link target, each
 * escaped at worst 6x, plus the path: far under this bound. */
#define LIST_BUF_MAX (8 * 1024 * 1024)

static int flush(struct buf *b, int *flushed)
{
    if (io_write_all(STDOUT_FILENO, b->data, b->len) < 0) {
        log_error("fs list: cannot write to stdout: %s", strerror(errno));
        return -1;
    }
    buf_reset(b);
    *flushed = 1;
    return 0;
}

int fs_op_list(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fs_fail("list", errno, NULL, path);
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return fs_fail("list", e, NULL, path);
    }

    struct buf out, ent_path;
    buf_init(&out, LIST_BUF_MAX);
    buf_init(&ent_path, 1024 * 1024);
    size_t plen = strlen(path);
    int flushed = 0, count = 0, err = 0, rc = 0;

    if (buf_puts(&out, SENTINEL_FS "{\"ok\": true, \"path\": ") < 0 ||
        jsonw_str(&out, path, plen, JSONW_SURROGATEESCAPE) < 0 || buf_puts(&out, ", \"entries\": [") < 0)
        err = ENOMEM;
    /* The entry path prefix, joined as os.path.join does. */
    if (!err && (buf_append(&ent_path, path, plen) < 0 ||
                 (plen && path[plen - 1] != '/' && buf_putc(&ent_path, '/') < 0)))
        err = ENOMEM;
    size_t prefix = ent_path.len;

    while (!err) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            err = errno;
            break;
        }
        const char *name = de->d_name;
        if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))) continue;
        struct stat st;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            /* Removed since readdir saw it: it is not there any more. */
            if (errno == ENOENT) continue;
            log_warn("fs list: %s/%s: %s (skipped)", path, name, strerror(errno));
            continue;
        }
        char *target = NULL;
        size_t tlen = 0;
        if (S_ISLNK(st.st_mode)) {
            target = fs_readlink(fd, name, &tlen);
            if (!target) {
                if (errno == ENOENT) continue;
                /* An entry without its target is still an entry. */
                log_warn("fs list: readlink %s/%s: %s", path, name, strerror(errno));
            }
        }
        size_t nlen = strlen(name);
        ent_path.len = prefix;
        if (buf_append(&ent_path, name, nlen) < 0 || (count && buf_puts(&out, ", ") < 0) ||
            fs_entry_json(&out, name, nlen, ent_path.data, ent_path.len, &st, target, tlen) < 0) {
            free(target);
            err = ENOMEM;
            break;
        }
        free(target);
        count++;
        if (out.len >= FLUSH_AT && flush(&out, &flushed) < 0) {
            rc = EXIT_FS_FAILED;
            goto done;
        }
    }

    if (err && !flushed) {
        /* Nothing printed yet: an ordinary error line. */
        rc = fs_fail("list", err, NULL, path);
        goto done;
    }
    if (buf_putc(&out, ']') < 0) err = err ? err : ENOMEM;
    if (err) {
        /* The line is already half out: close it as valid JSON that says the
         * listing is incomplete, and fail. */
        log_error("fs list: %s: %s (listing incomplete)", path, strerror(err));
        buf_puts(&out, ", ");
        fs_error_json(&out, err, NULL, path);
        rc = EXIT_FS_FAILED;
    }
    if (buf_puts(&out, "}\n") < 0 || flush(&out, &flushed) < 0) rc = EXIT_FS_FAILED;
done:
    buf_free(&out);
    buf_free(&ent_path);
    closedir(d);
    return rc;
}

int fs_op_stat(const char *path, int follow)
{
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
        return fs_fail("stat", errno, NULL, path);
    char *target = NULL;
    size_t tlen = 0;
    if (S_ISLNK(st.st_mode) && !(target = fs_readlink(AT_FDCWD, path, &tlen)))
        return fs_fail("stat", errno, NULL, path);

    /* The name is the last component, trailing slashes aside ("/" stays "/"). */
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    if (start == end) start = 0; /* "/" or "//" */

    struct buf b;
    buf_init(&b, LIST_BUF_MAX);
    int rc = 0;
    if (buf_puts(&b, "{\"ok\": true, \"entry\": ") < 0 ||
        fs_entry_json(&b, path + start, end - start, path, strlen(path), &st, target, tlen) < 0 ||
        buf_putc(&b, '}') < 0) {
        rc = fs_fail("stat", ENOMEM, NULL, path);
    } else if (fsout_line(&b) < 0) {
        rc = EXIT_FS_FAILED;
    }
    free(target);
    buf_free(&b);
    return rc;
}
