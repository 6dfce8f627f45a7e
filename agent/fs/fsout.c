/*
 * fsout.c - the `fs` result line, error objects, errno names and ENTRY
 * objects (see fsout.h).
 *
 * Every byte string (names, paths, link targets) is written surrogateescape,
 * so a Python client's os.fsencode() gives back the exact bytes; numbers and
 * separators are what json.dumps prints, so the line is byte-identical to the
 * python3 -c helpers it replaces. ENTRY is on the hot path of `fs list`
 * (one per listed file): integers and pieces without printf.
 */
#include "agent/fs/fsout.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int out_fd = STDOUT_FILENO;

void fsout_set_fd(int fd) { out_fd = fd; }

int fsout_line(struct buf *json)
{
    struct buf line;
    /* The payload is already bounded by whoever built it. */
    buf_init(&line, (size_t)-1 / 2);
    if (buf_puts(&line, SENTINEL_FS) < 0 || buf_append(&line, json->data, json->len) < 0 ||
        buf_putc(&line, '\n') < 0) {
        buf_free(&line);
        log_error("fs: out of memory building the result line");
        return -1;
    }
    int r = io_write_all(out_fd, line.data, line.len);
    if (r < 0) log_error("fs: cannot write the result line: %s", strerror(errno));
    buf_free(&line);
    return r;
}

#define E(x) {x, #x},
static const struct {
    int e;
    const char *name;
} errno_names[] = {
    /* Python's errno.errorcode names (EAGAIN, EDEADLOCK, ENOTSUP for the aliases). */
    E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF) E(ECHILD)
    E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(ENOTBLK) E(EBUSY) E(EEXIST) E(EXDEV) E(ENODEV)
    E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE) E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG) E(ENOSPC)
    E(ESPIPE) E(EROFS) E(EMLINK) E(EPIPE) E(EDOM) E(ERANGE) E(EDEADLOCK) E(ENAMETOOLONG)
    E(ENOLCK) E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENOMSG) E(EIDRM) E(ECHRNG) E(EL2NSYNC) E(EL3HLT)
    E(EL3RST) E(ELNRNG) E(EUNATCH) E(ENOCSI) E(EL2HLT) E(EBADE) E(EBADR) E(EXFULL) E(ENOANO)
    E(EBADRQC) E(EBADSLT) E(EBFONT) E(ENOSTR) E(ENODATA) E(ETIME) E(ENOSR) E(ENONET) E(ENOPKG)
    E(EREMOTE) E(ENOLINK) E(EADV) E(ESRMNT) E(ECOMM) E(EPROTO) E(EMULTIHOP) E(EDOTDOT)
    E(EBADMSG) E(EOVERFLOW) E(ENOTUNIQ) E(EBADFD) E(EREMCHG) E(ELIBACC) E(ELIBBAD) E(ELIBSCN)
    E(ELIBMAX) E(ELIBEXEC) E(EILSEQ) E(ERESTART) E(ESTRPIPE) E(EUSERS) E(ENOTSOCK)
    E(EDESTADDRREQ) E(EMSGSIZE) E(EPROTOTYPE) E(ENOPROTOOPT) E(EPROTONOSUPPORT)
    E(ESOCKTNOSUPPORT) E(ENOTSUP) E(EPFNOSUPPORT) E(EAFNOSUPPORT) E(EADDRINUSE) E(EADDRNOTAVAIL)
    E(ENETDOWN) E(ENETUNREACH) E(ENETRESET) E(ECONNABORTED) E(ECONNRESET) E(ENOBUFS) E(EISCONN)
    E(ENOTCONN) E(ESHUTDOWN) E(ETOOMANYREFS) E(ETIMEDOUT) E(ECONNREFUSED) E(EHOSTDOWN)
    E(EHOSTUNREACH) E(EALREADY) E(EINPROGRESS) E(ESTALE) E(EUCLEAN) E(ENOTNAM) E(ENAVAIL)
    E(EISNAM) E(EREMOTEIO) E(EDQUOT) E(ENOMEDIUM) E(EMEDIUMTYPE) E(ECANCELED) E(ENOKEY)
    E(EKEYEXPIRED) E(EKEYREVOKED) E(EKEYREJECTED) E(EOWNERDEAD) E(ENOTRECOVERABLE) E(ERFKILL)
};
#undef E

int fsout_ok(void)
{
    struct buf b;
    buf_init(&b, 64);
    int rc = 0;
    if (buf_puts(&b, "{\"ok\": true}") < 0 || fsout_line(&b) < 0) rc = EXIT_FS_FAILED;
    buf_free(&b);
    return rc;
}

const char *fsout_errno_name(int e)
{
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].e == e) return errno_names[i].name;
    return NULL;
}

int fsout_status(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case ELOOP:
    case ENAMETOOLONG:
        return EXIT_FS_MISSING;
    case EISDIR:
        return EXIT_FS_ISDIR;
    case FILES_ENOTREG:
        return EXIT_FS_NOTREG;
    case EFBIG:
        return EXIT_FS_TOO_LARGE;
    default:
        return EXIT_FS_FAILED;
    }
}

/* The error object; size >= 0 adds "size" (read over --max-bytes). */
static int error_json(struct buf *b, int e, const char *message, const char *path, long long size)
{
    char code[32];
    const char *name = e == FILES_ENOTREG ? "ENOTREG" : fsout_errno_name(e);
    if (!name) {
        /* An errno newer than our table: still a stable, parseable code. */
        snprintf(code, sizeof code, "E%d", e);
        name = code;
    }
    if (!message) message = files_strerror(e);
    if (jsonw_key(b, "error") < 0 || buf_putc(b, '{') < 0 || jsonw_key(b, "code") < 0 ||
        jsonw_cstr(b, name) < 0 || buf_puts(b, ", ") < 0 || jsonw_key(b, "errno") < 0)
        return -1;
    if ((e == FILES_ENOTREG ? buf_puts(b, "null") : buf_put_i64(b, e)) < 0) return -1;
    if (buf_puts(b, ", ") < 0 || jsonw_key(b, "message") < 0 ||
        jsonw_str(b, message, strlen(message), JSONW_REPLACE) < 0 || buf_puts(b, ", ") < 0 ||
        jsonw_key(b, "path") < 0 || jsonw_cstr(b, path ? path : "") < 0)
        return -1;
    if (size >= 0 && (buf_puts(b, ", \"size\": ") < 0 || buf_put_i64(b, size) < 0)) return -1;
    return buf_putc(b, '}');
}

int fsout_error_json(struct buf *b, int e, const char *message, const char *path)
{
    return error_json(b, e, message, path, -1);
}

int fsout_fail_size(const char *op, int e, const char *message, const char *path, long long size)
{
    struct buf b;
    /* Bounded by the path (argv or a tree path) plus a short message. */
    buf_init(&b, (size_t)-1 / 2);
    const char *msg = message ? message : files_strerror(e);
    log_warn("fs %s: %s: %s", op, path ? path : "", msg);
    if (buf_puts(&b, "{\"ok\": false, ") == 0 && error_json(&b, e, message, path, size) == 0 &&
        buf_putc(&b, '}') == 0)
        fsout_line(&b);
    else
        log_error("fs %s: out of memory", op);
    buf_free(&b);
    return fsout_status(e);
}

int fsout_fail(const char *op, int e, const char *message, const char *path)
{
    return fsout_fail_size(op, e, message, path, -1);
}

int fsout_fail_err(const char *op, struct files_err *e, const char *fd_name)
{
    int rc = fsout_fail(op, e->errnum, e->message, e->at_fd ? fd_name : e->path);
    files_err_free(e);
    return rc;
}

int fsout_entry_json(struct buf *b, const struct files_entry *ent)
{
    const struct stat *st = &ent->st;
    if (buf_putc(b, '{') < 0 || jsonw_key(b, "name") < 0 ||
        jsonw_str(b, ent->name, ent->nlen, JSONW_SURROGATEESCAPE) < 0 || buf_puts(b, ", ") < 0 ||
        jsonw_key(b, "path") < 0 || jsonw_str(b, ent->path, ent->plen, JSONW_SURROGATEESCAPE) < 0 ||
        buf_puts(b, ", ") < 0 || jsonw_key(b, "type") < 0 ||
        jsonw_cstr(b, files_type_name(st->st_mode)) < 0 ||
        buf_puts(b, ", \"size\": ") < 0 || buf_put_i64(b, (long long)st->st_size) < 0 ||
        buf_puts(b, ", \"mode\": ") < 0 || buf_put_u64(b, st->st_mode & 07777, 0) < 0 ||
        buf_puts(b, ", \"mtime\": ") < 0 || jsonw_double(b, files_mtime(st)) < 0 ||
        buf_puts(b, ", \"uid\": ") < 0 || buf_put_u64(b, st->st_uid, 0) < 0 ||
        buf_puts(b, ", \"gid\": ") < 0 || buf_put_u64(b, st->st_gid, 0) < 0)
        return -1;
    if (ent->target && (buf_puts(b, ", ") < 0 || jsonw_key(b, "target") < 0 ||
                        jsonw_str(b, ent->target, ent->tlen, JSONW_SURROGATEESCAPE) < 0))
        return -1;
    return buf_putc(b, '}');
}
