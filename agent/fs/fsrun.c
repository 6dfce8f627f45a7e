/*
 * fsrun.c - each `fs` op: the file service's call, then its result line
 * (see fsrun.h). Owns what each op prints on success, and list's streaming.
 *
 * list streams: entries are formatted into a buffer that is flushed to
 * stdout every FLUSH_AT bytes, so a directory of millions of entries costs
 * the same memory as one of ten. Nothing is written until the first flush,
 * so a directory that fails early (unreadable, vanished) still gets a clean
 * error line instead of half a result; after it, a failure can only close
 * the line as valid JSON that says the listing is incomplete.
 */
#include "agent/fs/fsrun.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"
#include "agent/fs/fsout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FLUSH_AT (64 * 1024)
/* One entry is at most two 255-byte names, a link target of FILES_LINK_MAX and
 * the path, each escaped at worst 6x: far under this bound. */
#define LIST_BUF_MAX (8 * 1024 * 1024)
/* A bare result: a few integers and booleans. */
#define RESULT_MAX 256

/* ---- list ---- */

struct list_out {
    struct buf out;
    size_t count;
    int flushed;      /* part of the line is out: a failure can only close it */
    int write_failed; /* stdout is gone: nothing more to say (logged) */
};

static int list_flush(struct list_out *o)
{
    if (io_write_all(STDOUT_FILENO, o->out.data, o->out.len) < 0) {
        log_error("fs list: cannot write to stdout: %s", strerror(errno));
        o->write_failed = 1;
        return -1;
    }
    buf_reset(&o->out);
    o->flushed = 1;
    return 0;
}

/* files_list's callback: one ENTRY, and a flush every FLUSH_AT bytes. */
static int list_entry(void *ctx, const struct files_entry *ent)
{
    struct list_out *o = ctx;
    size_t before = o->out.len;
    if ((o->count && buf_puts(&o->out, ", ") < 0) || fsout_entry_json(&o->out, ent) < 0) {
        o->out.len = before;
        return ENOMEM;
    }
    o->count++;
    if (o->out.len >= FLUSH_AT && list_flush(o) < 0) return EIO;
    return 0;
}

/* Close the line and send the rest; err: the listing stopped after the
 * first flush. */
static int list_end(struct list_out *o, const char *path, int err)
{
    int rc = 0;
    if (buf_putc(&o->out, ']') < 0 && !err) err = ENOMEM;
    if (err) {
        log_error("fs list: %s: %s (listing incomplete)", path, strerror(err));
        buf_puts(&o->out, ", ");
        fsout_error_json(&o->out, err, NULL, path);
        rc = EXIT_FS_FAILED;
    }
    if (buf_puts(&o->out, "}\n") < 0 || list_flush(o) < 0) rc = EXIT_FS_FAILED;
    return rc;
}

int fsrun_list(const struct fs_args *a)
{
    const char *path = a->paths[0];
    struct list_out o = {{0}, 0, 0, 0};
    struct files_err e;
    int rc;
    buf_init(&o.out, LIST_BUF_MAX);
    if (buf_puts(&o.out, SENTINEL_FS "{\"ok\": true, \"path\": ") < 0 ||
        jsonw_str(&o.out, path, strlen(path), JSONW_SURROGATEESCAPE) < 0 ||
        buf_puts(&o.out, ", \"entries\": [") < 0) {
        rc = fsout_fail("list", ENOMEM, NULL, path);
    } else if (files_list(path, list_entry, &o, &e) == 0) {
        rc = list_end(&o, path, 0);
    } else if (!o.flushed && !o.write_failed) {
        rc = fsout_fail_err("list", &e, NULL);
    } else {
        rc = o.write_failed ? EXIT_FS_FAILED : list_end(&o, path, e.errnum);
        files_err_free(&e);
    }
    buf_free(&o.out);
    return rc;
}

/* ---- the ops with one short result ---- */

/* Print the result b holds (freed) and return the exit status. */
static int result(struct buf *b, int built)
{
    int rc = built == 0 && fsout_line(b) == 0 ? 0 : EXIT_FS_FAILED;
    buf_free(b);
    return rc;
}

int fsrun_stat(const struct fs_args *a)
{
    const char *path = a->paths[0];
    struct files_entry ent;
    struct files_err e;
    if (files_stat(path, a->follow, &ent, &e) < 0) return fsout_fail_err("stat", &e, NULL);
    struct buf b;
    int rc;
    buf_init(&b, LIST_BUF_MAX);
    if (buf_puts(&b, "{\"ok\": true, \"entry\": ") < 0 || fsout_entry_json(&b, &ent) < 0 ||
        buf_putc(&b, '}') < 0) {
        buf_free(&b);
        rc = fsout_fail("stat", ENOMEM, NULL, path);
    } else {
        rc = result(&b, 0);
    }
    files_entry_free(&ent);
    return rc;
}

int fsrun_mkdir(const struct fs_args *a)
{
    struct files_err e;
    int created;
    if (files_mkdir(a->paths[0], a->parents, a->has_mode, a->mode, &created, &e) < 0)
        return fsout_fail_err("mkdir", &e, NULL);
    struct buf b;
    buf_init(&b, RESULT_MAX);
    return result(&b, buf_puts(&b, created ? "{\"ok\": true, \"created\": true}"
                                           : "{\"ok\": true, \"created\": false}"));
}

int fsrun_remove(const struct fs_args *a)
{
    struct files_err e;
    if (files_remove(a->paths[0], a->recursive, &e) < 0) return fsout_fail_err("remove", &e, NULL);
    return fsout_ok();
}

int fsrun_move(const struct fs_args *a)
{
    struct files_err e;
    if (files_move(a->paths[0], a->paths[1], a->overwrite, &e) < 0) return fsout_fail_err("move", &e, NULL);
    return fsout_ok();
}

int fsrun_write(const struct fs_args *a)
{
    /* A one-shot process: a fatal signal mid-write removes the temporary file. */
    struct files_write_opts o = {.has_mode = a->has_mode, .mode = a->mode, .parents = a->parents, .append = a->append,
                                 .guard_signals = 1};
    struct files_err e;
    long long n;
    if (files_write(a->paths[0], STDIN_FILENO, &o, &n, &e) < 0) return fsout_fail_err("write", &e, "<stdin>");
    struct buf b;
    buf_init(&b, RESULT_MAX);
    return result(&b, buf_puts(&b, "{\"ok\": true, \"bytes\": ") < 0 || buf_put_i64(&b, n) < 0 ||
                          buf_putc(&b, '}') < 0);
}

/* ---- read: the bytes on stdout, the result line on stderr ---- */

static int read_too_large(const char *path, long long size, long long remaining, const struct fs_args *a)
{
    char msg[ERR_LEN];
    snprintf(msg, sizeof msg, "File too large: %lld bytes from offset %llu, over --max-bytes %llu",
             remaining, (unsigned long long)a->offset, (unsigned long long)a->max);
    return fsout_fail_size("read", EFBIG, msg, path, size);
}

static int read_result(long long size, uint64_t offset, long long len, int eof)
{
    struct buf b;
    buf_init(&b, RESULT_MAX);
    return result(&b, buf_puts(&b, "{\"ok\": true, \"size\": ") < 0 || buf_put_i64(&b, size) < 0 ||
                          buf_puts(&b, ", \"offset\": ") < 0 || buf_put_u64(&b, offset, 0) < 0 ||
                          buf_puts(&b, ", \"length\": ") < 0 || buf_put_i64(&b, len) < 0 ||
                          buf_puts(&b, eof ? ", \"eof\": true}" : ", \"eof\": false}") < 0);
}

int fsrun_read(const struct fs_args *a)
{
    const char *path = a->paths[0];
    struct files_reader f;
    struct files_err e;
    fsout_set_fd(STDERR_FILENO);
    if (files_read_open(path, &f, &e) < 0) return fsout_fail_err("read", &e, "<stdout>");
    /* --max-bytes weighs all that remains from the offset, whatever --length
     * cuts from it: a chunked export passes its overall cap with each chunk,
     * and the first is refused before any byte moves (README, fs read). */
    long long remaining = (long long)a->offset >= f.size ? 0 : f.size - (long long)a->offset;
    long long want = a->has_length && a->length < (uint64_t)remaining ? (long long)a->length : remaining;
    long long len;
    int eof, rc;
    if (a->has_max && (uint64_t)remaining > a->max)
        rc = read_too_large(path, f.size, remaining, a);
    else if (files_read_copy(&f, a->offset, want, STDOUT_FILENO, &len, &eof, &e) < 0)
        rc = fsout_fail_err("read", &e, "<stdout>");
    else
        rc = read_result(f.size, a->offset, len, eof);
    files_read_close(&f);
    return rc;
}
