/*
 * upload.c - POST /files[?path=P][&username=U]: uploads (see files.h): the
 * request head (Content-Type, Content-Encoding, the user and ?path=, the
 * X-Metadata-* headers checked against envd.yaml's bounds), then the body.
 *
 * The body goes through three stages as it arrives, each with a fixed
 * buffer: the raw bytes (`in`), inflated when Content-Encoding is gzip
 * (`dec`), split into files when it is multipart/form-data (one part per
 * file: the part's filename is its path unless ?path= names one), and each
 * file's bytes (`out`) are written to the pipe of a helper that runs as the
 * user and writes the file with the file service: a temporary file beside
 * the target, the X-Metadata-* headers as `user.e2b.<key>` attributes on
 * it, fsync, rename (files_write). When a helper's pipe is full the connection
 * stops being read (conn_pause) until it drains: a slow disk slows the
 * client, never grows memory or blocks the loop.
 *
 * A file is made the new one only when its data is known complete (its
 * part's delimiter, or the body's end): the loop sends its helper the
 * verdict 'C' on a socket once the data pipe is closed. A body cut off
 * (the client gone, a bad gzip stream, a malformed part) closes both
 * without it and the helper removes its temporary file; so does the agent
 * dying. A helper killed mid-write cannot: the loop has the temporary
 * files it told of removed (rest_upload_file_reap). Files before the failing one
 * stay written, as envd's.
 */
#include "agent/api/rest/files.h"
#include "agent/api/rest/upload.h"
#include "agent/api/http/hparam.h"
#include "agent/api/filesystem/entry.h"
#include "agent/api/asuser/job.h"
#include "agent/api/asuser/defaults.h"
#include "agent/api/asuser/path.h"
#include "agent/api/filesystem/watch.h"
#include "agent/api/rest/gz.h"
#include "agent/api/rest/multipart.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the stages --------------------------------------------------------------- */

static void pump(struct upload *up);

static void file_free(struct upload_file *f)
{
    if (!f) return;
    if (f->data_fd >= 0) close(f->data_fd);
    if (f->verdict_fd >= 0) close(f->verdict_fd); /* without 'C': the helper aborts */
    asuser_job_detach(f->job);
    free(f->path);
    free(f);
}

void rest_upload_free(struct upload *up)
{
    static const struct conn_hooks none;
    conn_set_hooks(up->c, &none);
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    file_free(up->cur);
    rest_upload_file_meta_free(up);
    rest_upload_file_seen_free(up);
    if (up->multipart) multipart_free(&up->mp);
    gz_end(&up->gz);
    buf_free(&up->in);
    buf_free(&up->reply);
    free(up->qpath);
    free(up);
}

static int drop(void *ctx, const char *p, size_t n) { return 0; }

/* Answer with an error, abort the file under way, read the rest of the
 * body for nothing, and forget the upload. */
void rest_upload_fail(struct upload *up, int status, const char *msg)
{
    struct conn *c = up->c;
    httpreq_body_sink(conn_req(c), drop, NULL);
    conn_resume(c);
    filesystem_watch_settle(); /* parents made before the failure show, as any change */
    rest_files_error(c, status, msg);
    rest_upload_free(up);
}

/* The verdict socket stays open: a helper that dies before its result has
 * the temporary names it told read from it (rest_upload_file_reap). */
static void commit(struct upload *up, struct upload_file *f)
{
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    close(f->data_fd);
    f->data_fd = -1;
    if (send(f->verdict_fd, "C", 1, MSG_NOSIGNAL) != 1) f->broken = 1;
    f->committed = 1;
}

/* out to the current file's pipe, as much as it takes. */
static void flush_out(struct upload *up)
{
    struct upload_file *f = up->cur;
    while (up->out_off < up->out_len && f && !f->broken) {
        ssize_t w = write(f->data_fd, up->out + up->out_off, up->out_len - up->out_off);
        if (w > 0) up->out_off += (size_t)w;
        else if (w < 0 && errno == EAGAIN) return;
        else if (w < 0 && errno != EINTR) f->broken = 1; /* the helper stopped: its result says why */
    }
    up->out_off = up->out_len = 0;
}

/* A body that is the file as it is (octet-stream, no gzip) goes to the
 * pipe straight from `in`, as much as the pipe takes in one write: no
 * copy through `out`. Bytes are taken only once written (the sink may
 * move `in` meanwhile). Returns 0 when the pipe is full, else 1. */
static int write_direct(struct upload *up, struct upload_file *f)
{
    while (up->in_off < up->in.len && !f->broken) {
        ssize_t w = write(f->data_fd, up->in.data + up->in_off, up->in.len - up->in_off);
        if (w > 0) up->in_off += (size_t)w;
        else if (w < 0 && errno == EAGAIN) return 0;
        else if (w < 0 && errno != EINTR) f->broken = 1; /* the helper stopped: its result says why */
    }
    return 1;
}

static int part_begin(struct upload *up)
{
    if (strcmp(up->mp.name, "file") != 0) { /* another form field: not a file */
        up->skipping = 1;
        return 0;
    }
    up->skipping = 0;
    if (up->qpath) return rest_upload_file_start(up, up->qpath);
    if (!up->mp.filename || !up->mp.filename_len || up->mp.filename_nul) {
        rest_upload_fail(up, 400, "a file part needs a filename (without NUL bytes) when there is no ?path=");
        return -1;
    }
    struct buf path;
    const char *why;
    buf_init(&path, ASUSER_PATH_MAX);
    int r = asuser_path_resolve(up->u.home, asuser_defaults_workdir(), up->mp.filename, &path, &why);
    if (r < 0) rest_upload_fail(up, 400, why);
    else r = rest_upload_file_start(up, path.data);
    buf_free(&path);
    return r;
}

/* Take bytes of p[0..n) (decoded body) into out, through the multipart
 * parser when there is one; *off advances by what is taken. Returns 0, or
 * -1 when the upload is over (failed). */
static int stage(struct upload *up, const char *p, size_t n, size_t *off)
{
    if (!up->multipart) {
        size_t k = n < sizeof up->out ? n : sizeof up->out;
        memcpy(up->out, p, k);
        up->out_len = k;
        *off += k;
        return 0;
    }
    while (n > 0 && sizeof up->out - up->out_len >= MP_HELD_MAX) {
        struct multipart_out o;
        size_t used = multipart_feed(&up->mp, p, n, sizeof up->out - up->out_len, &o);
        p += used;
        n -= used;
        *off += used;
        if (o.ev == MP_DATA && !up->skipping) {
            memcpy(up->out + up->out_len, o.data, o.len);
            up->out_len += o.len;
        } else if (o.ev == MP_PART && part_begin(up) < 0) {
            return -1;
        } else if (o.ev == MP_PART_END) {
            if (!up->skipping && up->cur) up->cur->ending = 1;
            up->skipping = 0;
            if (up->cur) return 0; /* commit it before going on */
        } else if (o.ev == MP_ERROR) {
            rest_upload_fail(up, 400, up->mp.why);
            return -1;
        }
    }
    return 0;
}

/* The next piece of the raw body into the stages. Returns 0, or -1. */
static int decode(struct upload *up)
{
    const char *p = up->in.data + up->in_off, *why;
    size_t n = up->in.len - up->in_off, used, made;
    if (!up->gzip) return stage(up, p, n, &up->in_off);
    if (gz_inflate(&up->gz, p, n, &used, up->dec, sizeof up->dec, &made, &why) < 0) {
        rest_upload_fail(up, 400, why);
        return -1;
    }
    up->in_off += used;
    up->dec_off = 0;
    up->dec_len = made;
    up->gz_more = made == sizeof up->dec;
    return 0;
}

/* The body is all in and every file done: check the end, answer. */
static void finish(struct upload *up)
{
    if (up->gzip && !gz_inflate_complete(&up->gz)) {
        rest_upload_fail(up, 400, "the gzip stream of the body is cut short");
        return;
    }
    if (up->multipart && multipart_finish(&up->mp) < 0) {
        rest_upload_fail(up, 400, up->mp.why);
        return;
    }
    if (buf_putc(&up->reply, ']') < 0) {
        rest_upload_fail(up, 400, "the reply would pass 16 MiB: upload fewer files at a time");
        return;
    }
    /* Watches see the upload's events before its client can act on the
     * answer (filesystem_watch.h). */
    filesystem_watch_settle();
    conn_respond(up->c, 200, "application/json", NULL, up->reply.data, up->reply.len);
    rest_upload_free(up);
}

static void pump(struct upload *up)
{
    for (;;) {
        struct upload_file *f = up->cur;
        if (f && (f->committed || f->broken)) { /* its helper's result comes */
            conn_pause(up->c);
            return;
        }
        if (up->out_len) {
            flush_out(up);
            if (up->out_len) {
                ev_io_start(EV_DEFAULT, &up->pipe_w);
                conn_pause(up->c);
                return;
            }
            continue;
        }
        if (f && f->ending) {
            commit(up, f);
            return;
        }
        if (f && !up->multipart && !up->gzip && up->in_off < up->in.len) {
            if (!write_direct(up, f)) {
                ev_io_start(EV_DEFAULT, &up->pipe_w);
                conn_pause(up->c);
                return;
            }
            continue;
        }
        int r = 0;
        if (up->dec_off < up->dec_len) r = stage(up, up->dec + up->dec_off, up->dec_len - up->dec_off, &up->dec_off);
        else if (up->in_off < up->in.len || up->gz_more) r = decode(up);
        else if (!up->body_done) {
            up->in.len = up->in_off = 0;
            conn_resume(up->c);
            return;
        } else if (!up->multipart && f) {
            /* The body is the file: all of it is in, if the gzip stream says so. */
            if (up->gzip && !gz_inflate_complete(&up->gz)) {
                rest_upload_fail(up, 400, "the gzip stream of the body is cut short");
                return;
            }
            f->ending = 1;
        } else {
            finish(up);
            return;
        }
        if (r < 0) return;
    }
}

void rest_upload_pump(struct upload *up) { pump(up); }

static void on_writable(struct ev_loop *loop, ev_io *w, int revents) { pump(w->data); }

/* , "metadata": {...} of what this upload set (nothing when it set none). */
static int reply_meta(struct upload *up)
{
    size_t plen = strlen(FILESYSTEM_XATTR_PREFIX);
    for (size_t i = 0; i < up->nmeta; i++) {
        const struct upload_meta *m = &up->meta[i];
        if (buf_puts(&up->reply, i ? ", " : ", \"metadata\": {") < 0 || jsonw_cstr(&up->reply, m->name + plen) < 0 ||
            buf_puts(&up->reply, ": ") < 0 || jsonw_str(&up->reply, m->value, m->vlen, JSONW_SURROGATEESCAPE) < 0)
            return -1;
    }
    return up->nmeta ? buf_putc(&up->reply, '}') : 0;
}

/* A file's helper finished: its entry in the reply, or the upload fails. */
void rest_upload_file_done(void *ctx, int32_t status, const char *data, size_t n)
{
    struct upload *up = ctx;
    struct upload_file *f = up->cur;
    f->job = NULL;
    up->cur = NULL;
    if (status == ASUSER_JOB_FAILED) rest_upload_file_reap(up, f);
    if (status != 0 || !f->committed) {
        char msg[ERR_LEN];
        err_set(msg, "%.*s", (int)(n < ERR_LEN ? n : ERR_LEN - 1), n ? data : "the upload was refused");
        file_free(f);
        rest_upload_fail(up, status >= 400 && status < 600 ? status : 500, msg);
        return;
    }
    size_t nlen;
    const char *name = files_last_name(f->path, &nlen);
    int bad = (up->files > 1 && buf_puts(&up->reply, ", ") < 0) || buf_puts(&up->reply, "{\"name\": ") < 0 ||
              jsonw_str(&up->reply, name, nlen, JSONW_SURROGATEESCAPE) < 0 ||
              buf_puts(&up->reply, ", \"type\": \"file\", \"path\": ") < 0 ||
              jsonw_cstr(&up->reply, f->path) < 0 || reply_meta(up) < 0 || buf_putc(&up->reply, '}') < 0;
    file_free(f);
    if (bad) {
        rest_upload_fail(up, 400, "the reply would pass 16 MiB: upload fewer files at a time");
        return;
    }
    pump(up);
}

int rest_upload_sink(void *ctx, const char *p, size_t n)
{
    struct upload *up = ctx;
    if (up->in_off == up->in.len) up->in.len = up->in_off = 0;
    else if (up->in_off && up->in.len + n > up->in.max / 2) {
        buf_consume(&up->in, up->in_off);
        up->in_off = 0;
    }
    /* Drawn from the memory budget; one read's worth whatever it says. */
    if (up->in.len + n <= UPLOAD_CHUNK) buf_reserve_force(&up->in, n);
    if (buf_append(&up->in, p, n) < 0) {
        if (buf_over(&up->in, n)) rest_upload_fail(up, 500, "upload buffer overrun");
        else rest_upload_fail(up, 429, SERVE_BUDGET_SPENT);
        return 0;
    }
    pump(up);
    return 0;
}

void rest_upload_watch_pipe(struct upload *up, int fd)
{
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    ev_io_init(&up->pipe_w, on_writable, fd, EV_WRITE);
    up->pipe_w.data = up;
}

/* ---- the request head ---- */

/* X-Metadata-<key>: <value> headers, as user.e2b.<key in lower case>,
 * within envd.yaml's bounds: the first of a repeated key, "X-Metadata-"
 * alone skipped. */
static int read_meta(struct upload *up, const char **why)
{
    const struct httpreq *r = conn_req(up->c);
    size_t plen = strlen(HEADER_METADATA_PREFIX), xplen = strlen(FILESYSTEM_XATTR_PREFIX), total = 0;
    up->meta = calloc(r->nhdr ? r->nhdr : 1, sizeof *up->meta);
    if (!up->meta) return *why = "out of memory", -1;
    for (unsigned i = 0; i < r->nhdr; i++) {
        const char *name, *value;
        httpreq_header_at(r, i, &name, &value);
        if (strncasecmp(name, HEADER_METADATA_PREFIX, plen) != 0 || !name[plen]) continue;
        const char *key = name + plen;
        size_t klen = strlen(key), vlen = strlen(value), k;
        for (k = 0; k < up->nmeta && strcasecmp(up->meta[k].name + xplen, key); k++) continue;
        if (k < up->nmeta) continue; /* repeated: the first is used */
        if (rest_upload_meta_check(key, klen, value, vlen, &total, why) < 0) return -1;
        struct upload_meta *m = &up->meta[up->nmeta++];
        if (!(m->name = malloc(xplen + klen + 1)) || !(m->value = strdup(value))) return *why = "out of memory", -1;
        memcpy(m->name, FILESYSTEM_XATTR_PREFIX, xplen);
        for (size_t j = 0; j <= klen; j++) m->name[xplen + j] = (char)tolower((unsigned char)key[j]);
        m->vlen = vlen;
    }
    return 0;
}

/* Printable US-ASCII, as envd.yaml asks of keys and values. */
static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

int rest_upload_meta_check(const char *key, size_t klen, const char *value, size_t vlen, size_t *total,
                           const char **why)
{
    if (!klen) return *why = "a metadata key (X-Metadata-KEY) is empty", -1;
    if (klen > UPLOAD_META_KEY_MAX)
        return *why = "a metadata key is longer than 246 bytes (an extended attribute's name, "
                      "user.e2b.KEY, is at most 255)", -1;
    if (!printable(key, klen) || !printable(value, vlen))
        return *why = "a metadata key or value holds a byte outside printable US-ASCII (0x20-0x7E)", -1;
    *total += strlen(FILESYSTEM_XATTR_PREFIX) + klen + vlen;
    if (*total > UPLOAD_META_TOTAL_MAX)
        return *why = "the metadata is larger than 4096 bytes (user.e2b.KEY and its value, for each key)", -1;
    return 0;
}

/* The body's shape: multipart or octet-stream, gzip or not. */
static int read_shape(struct upload *up, int have_path, const char **why)
{
    const struct httpreq *r = conn_req(up->c);
    const char *ct = httpreq_header(r, "Content-Type"), *ce = httpreq_header(r, "Content-Encoding");
    char boundary[MP_BOUNDARY_MAX + 1];
    int b = multipart_content_type(ct, boundary);
    if (httpreq_header_count(r, "Content-Encoding") > 1 || (ce && *ce && strcasecmp(ce, "identity") &&
                                                            strcasecmp(ce, "gzip") && strcasecmp(ce, "x-gzip")))
        return *why = "unsupported Content-Encoding (gzip or identity)", -1;
    up->gzip = ce && (!strcasecmp(ce, "gzip") || !strcasecmp(ce, "x-gzip"));
    if (up->gzip && gz_inflate_init(&up->gz) < 0) return *why = "out of memory", -1;
    if (b < 0 || (b > 0 && multipart_init(&up->mp, boundary, (size_t)b) < 0))
        return *why = "multipart/form-data without a valid boundary", -1;
    up->multipart = b > 0;
    if (!up->multipart && !(ct && hparam_type_is(ct, "application/octet-stream")))
        return *why = "unsupported Content-Type (multipart/form-data or application/octet-stream)", -1;
    if (!up->multipart && !have_path) return *why = "an application/octet-stream upload needs ?path=", -1;
    return 0;
}

static void on_gone(struct conn *c, void *ctx) { rest_upload_free(ctx); }
static void on_stop(struct conn *c, void *ctx) { rest_upload_fail(ctx, 503, "the agent is shutting down"); }

void rest_upload_head(struct conn *c)
{
    struct buf path;
    int have_path;
    const char *why = NULL;
    struct upload *up = calloc(1, sizeof *up);
    if (!up) {
        rest_files_error(c, 500, "out of memory");
        return;
    }
    up->c = c;
    buf_init_budget(&up->in, UPLOAD_IN_MAX);
    buf_init(&up->reply, UPLOAD_REPLY_MAX);
    buf_putc(&up->reply, '[');
    hash_init(&up->seen, 16, 1);
    ev_init(&up->pipe_w, NULL);
    buf_init(&path, ASUSER_PATH_MAX);
    if (rest_files_target(c, &up->u, &path, &have_path) < 0) {
        buf_free(&path);
        rest_upload_free(up);
        return;
    }
    if (have_path) up->qpath = path.data;
    else buf_free(&path);
    if (read_meta(up, &why) < 0 || read_shape(up, have_path, &why) < 0) {
        rest_files_error(c, 400, why);
        rest_upload_free(up);
        return;
    }
    struct conn_hooks h = {.gone = on_gone, .stop = on_stop, .ctx = up};
    conn_set_hooks(c, &h);
    httpreq_body_sink(conn_req(c), rest_upload_sink, up);
    /* One file from the start: an empty body is an empty file. */
    if (!up->multipart) rest_upload_file_start(up, up->qpath);
}

void rest_upload_done(struct conn *c)
{
    struct httpreq *r = conn_req(c);
    if (r->sink != rest_upload_sink) return; /* refused or failed: answered already */
    struct upload *up = r->sink_ctx;
    up->body_done = 1;
    rest_upload_pump(up);
}
