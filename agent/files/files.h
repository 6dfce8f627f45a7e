/*
 * files.h - the file service: the operations behind `fs` (and, later, the
 * filesystem API of `serve`), with no output format of their own.
 *
 * Each operation returns 0, or -1 with a struct files_err saying which errno,
 * which path and what text; the caller formats results and errors its own
 * way (the fs mode: one `__SBX_FS__` line and an exit status). Data flows
 * through fds the caller gives (write's input, read's output) and listings
 * through a callback, one entry at a time, so memory stays bounded however
 * large the directory or the file. Paths are bytes, taken as given.
 *
 * The service knows nothing of stdout, sentinels or exit statuses. It logs
 * only what it skips or cannot clean up (one stderr line each).
 */
#ifndef SA_FILES_FILES_H
#define SA_FILES_FILES_H

#include "agent/core/err.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Pseudo-errno for "not a regular file" (a FIFO, a device, a /proc stream):
 * no errno says it. */
#define FILES_ENOTREG (-1)

struct files_err {
    int errnum;            /* an errno value, or FILES_ENOTREG */
    int at_fd;             /* the caller's fd failed (read's out_fd, write's in_fd); path is NULL */
    char *path;            /* malloc'd: the path that failed, e.g. remove's failing descendant */
    char message[ERR_LEN]; /* files_strerror(errnum), unless the operation says more */
};

/* Release e->path (the rest needs no freeing); e may be reused after. */
void files_err_free(struct files_err *e);
/* strerror(errnum), or "Not a regular file" for FILES_ENOTREG. */
const char *files_strerror(int errnum);

/* One directory entry, or the entry of stat. path is NUL-terminated (plen
 * bytes without the NUL); name is nlen bytes (in stat, the last component of
 * path, which a '/' may follow). */
struct files_entry {
    const char *name;
    size_t nlen;
    const char *path;
    size_t plen;
    struct stat st;
    char *target; /* a symlink's target (tlen bytes, not NUL-terminated), or NULL */
    size_t tlen;
};

/* "file", "dir", "symlink", "fifo", "socket", "char", "block" (or "unknown"). */
const char *files_type_name(mode_t m);
/* st_mtime as Python's os.stat gives it: sec + nsec * 1e-9, as a double. */
double files_mtime(const struct stat *st);

/* Path helpers (pure). */
/* Join a directory path and a name as os.path.join does (no doubled '/'),
 * malloc'd. NULL when out of memory. */
char *files_join(const char *dir, const char *name);
/* The last component, trailing slashes aside ("a/b/" -> "b"; "/" and "//"
 * stay "/"): a pointer into path, *len bytes. */
const char *files_last_name(const char *path, size_t *len);
/* A malloc'd copy without trailing slashes ("a/b//" -> "a/b", "/" and "//"
 * -> "/"). NULL when out of memory. */
char *files_strip_slashes(const char *path);
/* The bytes of a target's name a temporary name keeps. */
#define FILES_TMP_NAME_CUT 200
/* ".NAME" beside target, NAME cut to FILES_TMP_NAME_CUT bytes, into out (cap
 * bytes): the start of a temporary name on the same filesystem. Fails (-1)
 * unless slack more bytes still fit after it. Returns the length written. */
int files_tmp_prefix(char *out, size_t cap, const char *target, size_t slack);

/* 1 when name (n bytes, one component) is a temporary name the service makes
 * beside a target while writing or moving it: ".NAME.sbx-" and letters,
 * digits or '-'. A watcher may leave such files out: they are the service's
 * own, and their rename into place is the target's event. */
int files_is_tmp_name(const char *name, size_t n);

/* An atomic write's temporary name says whether the write makes its target
 * anew or replaces a file: ".NAME.sbx-" FILES_TMP_MARK_NEW or _REPLACES, '-',
 * then random letters and digits. The write decides it when it names the
 * file and again just before the rename into place (it renames the file to
 * the other mark if that changed meanwhile), so a watcher that sees the
 * rename can tell a file written anew from one overwritten. */
#define FILES_TMP_MARK_NEW 'N'
#define FILES_TMP_MARK_REPLACES 'R'

enum files_tmp_kind {
    FILES_TMP_NONE,     /* not a temporary name of the service */
    FILES_TMP_OTHER,    /* a move's copy (".NAME.sbx-PID-N"), or a write's without a mark */
    FILES_TMP_NEW,      /* an atomic write's that makes NAME */
    FILES_TMP_REPLACES, /* an atomic write's that replaces the file NAME */
};

/* The kind of name (n bytes, one component). For every kind but NONE,
 * *target (tlen bytes) is the NAME part: the target's name, cut to
 * FILES_TMP_NAME_CUT bytes as files_tmp_prefix cuts it. */
enum files_tmp_kind files_tmp_kind(const char *name, size_t n, const char **target, size_t *tlen);

/* ---- the operations ---- */

/* Called once per entry of a listing, in readdir order. Returns 0 to go on,
 * or an errno value to stop the listing, which then fails with it. */
typedef int (*files_list_fn)(void *ctx, const struct files_entry *ent);

/* The entries of directory path, without "." and "..": lstat'ed, with the
 * target of each symlink (NULL when unreadable: still an entry). An entry
 * that vanishes mid-listing is skipped. Entry paths are joined as
 * os.path.join does. */
int files_list(const char *path, files_list_fn fn, void *ctx, struct files_err *e);

/* One entry: lstat, or stat with follow; the target of a symlink not
 * followed. name is the last component of path. Free with files_entry_free. */
int files_stat(const char *path, int follow, struct files_entry *ent, struct files_err *e);
void files_entry_free(struct files_entry *ent);

/* Create directory path (with parents); *created is 0 when a directory was
 * there already. has_mode: exactly that mode, the umask aside. */
int files_mkdir(const char *path, int parents, int has_mode, mode_t mode, int *created, struct files_err *e);

/* Remove a file, an empty directory, or (recursive) a tree without following
 * a symlink, with bounded fds at any depth; never "/" by any name, nor "."
 * or "..". Stops at the first failure, which names its path. A trailing '/'
 * still names the entry itself (a symlink, not what it points to). */
int files_remove(const char *path, int recursive, struct files_err *e);

/* Rename src to dst (dst is the new name, as mv -T); without overwrite an
 * existing dst is refused. Across filesystems: a copy under a temporary
 * name beside dst, renamed into place, then src removed. */
int files_move(const char *src, const char *dst, int overwrite, struct files_err *e);

struct files_write_opts {
    int has_mode;
    mode_t mode;
    int parents;       /* create missing parent directories */
    int append;        /* write in place at the end instead of replacing */
    int guard_signals; /* a one-shot process: a fatal signal mid-write removes the
                        * temporary file (installs handlers; not for a process
                        * with signal handling of its own) */
    int replace_link;  /* a symlink at path is replaced itself, as rename(2)
                        * replaces it, not written through */
};

/* in_fd to EOF into path: atomically (temporary file beside it, fsync,
 * rename) unless append. A symlink is written through. *bytes: the count.
 * One write at a time per process (the temporary name is kept where a
 * signal handler can find it). Errors of in_fd have e->at_fd set. */
int files_write(const char *path, int in_fd, const struct files_write_opts *o, long long *bytes,
             struct files_err *e);

/* The last step of an atomic write before the temporary file, filled, is
 * fsynced and renamed into place: fd is the temporary file, replaced the
 * path of the file it replaces (NULL: none yet). It may add to it
 * (extended attributes) or refuse: a nonzero errno value aborts the write
 * with it, the old file untouched and the temporary file gone. */
typedef int (*files_prepare_fn)(void *ctx, int fd, const char *replaced);
/* Called with each temporary path before a file of that name is created or
 * renamed to, so a caller that can be killed mid-write (a helper process)
 * can tell someone who can remove the file then. A nonzero errno value
 * aborts the write with it. */
typedef int (*files_named_fn)(void *ctx, const char *tmp);

/* Fills the temporary file fd instead of the input fd's bytes: *bytes
 * its count. A nonzero errno value aborts the write with it. */
typedef int (*files_fill_fn)(void *ctx, int fd, long long *bytes);

struct files_write_hooks {
    files_prepare_fn prepare; /* or NULL */
    files_named_fn named;     /* or NULL */
    void *ctx;
    files_fill_fn fill;       /* or NULL: in_fd to EOF */
};

/* files_write (never append) with the hooks. */
int files_write_hooked(const char *path, int in_fd, const struct files_write_opts *o,
                    const struct files_write_hooks *h, long long *bytes, struct files_err *e);

/* The regular files srcs[0..n) (symlinks followed), in order, into dst
 * as files_write_hooked writes it (a temporary file beside it, fsynced,
 * renamed into place: a reader sees the old dst or the whole new one;
 * parents made; a symlink at dst replaced, not written through), with no
 * copy through the process where the filesystem allows: the first source
 * cloned (FICLONE), the rest by copy_file_range(2). Every source is
 * checked before anything is made (a source that is dst, missing, or not
 * a regular file fails naming it); the sources are removed (their names:
 * a symlink, not its target) only once dst is in place. Failing, it
 * leaves dst and the sources as they were and no temporary file. h:
 * prepare and named as files_write_hooked's (fill is compose's own).
 * (compose.c) */
int files_compose(const char *const *srcs, size_t n, const char *dst, const struct files_write_hooks *h,
                  long long *bytes, struct files_err *e);

/* A regular file opened for reading: never a FIFO, a device or a /proc stream. */
struct files_reader {
    int fd;
    long long size; /* as fstat saw it on the opened fd */
    const char *path; /* the caller's, for errors */
};

int files_read_open(const char *path, struct files_reader *f, struct files_err *e);
/* Copy up to len bytes at offset to out_fd (blocking or not). *length: the
 * bytes copied (fewer only if the file shrank); *eof: nothing is left past
 * them (a slice short of the end, len 0 included, is not eof). Errors of
 * out_fd have e->at_fd set. */
int files_read_copy(struct files_reader *f, uint64_t offset, long long len, int out_fd, long long *length,
                 int *eof, struct files_err *e);
void files_read_close(struct files_reader *f);

#endif
