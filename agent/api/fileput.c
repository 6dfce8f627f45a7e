/*
 * fileput.c - POST /files[?path=P][&username=U]: uploads (see filesrt.h).
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
 * files it told of removed (put_file_reap). Files before the failing one
 * stay written, as envd's.
 */
#include "agent/api/filesrt.h"
#include "agent/api/fileput.h"
#include "agent/api/fsentry.h"
#include "agent/api/fsjob.h"
#include "agent/api/fspath.h"
#include "agent/api/fswatch.h"
#include "agent/api/gz.h"
#include "agent/api/multipart.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"
#include "agent/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the stages --------------------------------------------------------------- */

static void pump(struct put *up);

static void file_free(struct file *f)
{
    if (!f) return;
    if (f->data_fd >= 0) close(f->data_fd);
    if (f->verdict_fd >= 0) close(f->verdict_fd); /* without 'C': the helper aborts */
    fsjob_detach(f->job);
    free(f->path);
    free(f);
}

void put_free(struct put *up)
{
    static const struct conn_hooks none;
    conn_set_hooks(up->c, &none);
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    file_free(up->cur);
    put_meta_free(up);
    put_seen_free(up);
    if (up->multipart) mp_free(&up->mp);
    gz_end(&up->gz);
    buf_free(&up->in);
    buf_free(&up->reply);
    free(up->qpath);
    free(up);
}

static int drop(void *ctx, const char *p, size_t n) { return 0; }

/* Answer with an error, abort the file under way, read the rest of the
 * body for nothing, and forget the upload. */
void put_fail(struct put *up, int status, const char *msg)
{
    struct conn *c = up->c;
    httpreq_body_sink(conn_req(c), drop, NULL);
    conn_resume(c);
    fswatch_settle(); /* parents made before the failure show, as any change */
    files_error(c, status, msg);
    put_free(up);
}

/* The verdict socket stays open: a helper that dies before its result has
 * the temporary names it told read from it (put_file_reap). */
static void commit(struct put *up, struct file *f)
{
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    close(f->data_fd);
    f->data_fd = -1;
    if (send(f->verdict_fd, "C", 1, MSG_NOSIGNAL) != 1) f->broken = 1;
    f->committed = 1;
}

/* out to the current file's pipe, as much as it takes. */
static void flush_out(struct put *up)
{
    struct file *f = up->cur;
    while (up->out_off < up->out_len && f && !f->broken) {
        ssize_t w = write(f->data_fd, up->out + up->out_off, up->out_len - up->out_off);
        if (w > 0) up->out_off += (size_t)w;
        else if (w < 0 && errno == EAGAIN) return;
        else if (w < 0 && errno != EINTR) f->broken = 1; /* the helper stopped: its result says why */
    }
    up->out_off = up->out_len = 0;
}

static int part_begin(struct put *up)
{
    if (strcmp(up->mp.name, "file") != 0) { /* another form field: not a file */
        up->skipping = 1;
        return 0;
    }
    up->skipping = 0;
    if (up->qpath) return put_file_start(up, up->qpath);
    if (!up->mp.filename || !up->mp.filename_len || up->mp.filename_nul) {
        put_fail(up, 400, "a file part needs a filename (without NUL bytes) when there is no ?path=");
        return -1;
    }
    struct buf path;
    const char *why;
    buf_init(&path, FSPATH_MAX);
    int r = fspath_resolve(up->u.home, up->mp.filename, &path, &why);
    if (r < 0) put_fail(up, 400, why);
    else r = put_file_start(up, path.data);
    buf_free(&path);
    return r;
}

/* Take bytes of p[0..n) (decoded body) into out, through the multipart
 * parser when there is one; *off advances by what is taken. Returns 0, or
 * -1 when the upload is over (failed). */
static int stage(struct put *up, const char *p, size_t n, size_t *off)
{
    if (!up->multipart) {
        size_t k = n < sizeof up->out ? n : sizeof up->out;
        memcpy(up->out, p, k);
        up->out_len = k;
        *off += k;
        return 0;
    }
    while (n > 0 && sizeof up->out - up->out_len >= MP_HELD_MAX) {
        struct mp_out o;
        size_t used = mp_feed(&up->mp, p, n, sizeof up->out - up->out_len, &o);
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
            put_fail(up, 400, up->mp.why);
            return -1;
        }
    }
    return 0;
}

/* The next piece of the raw body into the stages. Returns 0, or -1. */
static int decode(struct put *up)
{
    const char *p = up->in.data + up->in_off, *why;
    size_t n = up->in.len - up->in_off, used, made;
    if (!up->gzip) return stage(up, p, n, &up->in_off);
    if (gz_inflate(&up->gz, p, n, &used, up->dec, sizeof up->dec, &made, &why) < 0) {
        put_fail(up, 400, why);
        return -1;
    }
    up->in_off += used;
    up->dec_off = 0;
    up->dec_len = made;
    up->gz_more = made == sizeof up->dec;
    return 0;
}

/* The body is all in and every file done: check the end, answer. */
static void finish(struct put *up)
{
    if (up->gzip && !gz_inflate_complete(&up->gz)) {
        put_fail(up, 400, "the gzip stream of the body is cut short");
        return;
    }
    if (up->multipart && mp_finish(&up->mp) < 0) {
        put_fail(up, 400, up->mp.why);
        return;
    }
    if (buf_putc(&up->reply, ']') < 0) {
        put_fail(up, 400, "the reply would pass 16 MiB: upload fewer files at a time");
        return;
    }
    /* Watches see the upload's events before its client can act on the
     * answer (fswatch.h). */
    fswatch_settle();
    conn_respond(up->c, 200, "application/json", NULL, up->reply.data, up->reply.len);
    put_free(up);
}

static void pump(struct put *up)
{
    for (;;) {
        struct file *f = up->cur;
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
                put_fail(up, 400, "the gzip stream of the body is cut short");
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

void put_pump(struct put *up) { pump(up); }

static void on_writable(struct ev_loop *loop, ev_io *w, int revents) { pump(w->data); }

/* , "metadata": {...} of what this upload set (nothing when it set none). */
static int reply_meta(struct put *up)
{
    size_t plen = strlen(FSENTRY_XATTR_PREFIX);
    for (size_t i = 0; i < up->nmeta; i++) {
        const struct put_meta *m = &up->meta[i];
        if (buf_puts(&up->reply, i ? ", " : ", \"metadata\": {") < 0 || jsonw_cstr(&up->reply, m->name + plen) < 0 ||
            buf_puts(&up->reply, ": ") < 0 || jsonw_str(&up->reply, m->value, m->vlen, JSONW_SURROGATEESCAPE) < 0)
            return -1;
    }
    return up->nmeta ? buf_putc(&up->reply, '}') : 0;
}

/* A file's helper finished: its entry in the reply, or the upload fails. */
void put_file_done(void *ctx, int32_t status, const char *data, size_t n)
{
    struct put *up = ctx;
    struct file *f = up->cur;
    f->job = NULL;
    up->cur = NULL;
    if (status == FSJOB_FAILED) put_file_reap(up, f);
    if (status != 0 || !f->committed) {
        char msg[ERR_LEN];
        err_set(msg, "%.*s", (int)(n < ERR_LEN ? n : ERR_LEN - 1), n ? data : "the upload was refused");
        file_free(f);
        put_fail(up, status >= 400 && status < 600 ? status : 500, msg);
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
        put_fail(up, 400, "the reply would pass 16 MiB: upload fewer files at a time");
        return;
    }
    pump(up);
}

int put_sink(void *ctx, const char *p, size_t n)
{
    struct put *up = ctx;
    if (up->in_off == up->in.len) up->in.len = up->in_off = 0;
    else if (up->in_off && up->in.len + n > up->in.max / 2) {
        buf_consume(&up->in, up->in_off);
        up->in_off = 0;
    }
    if (buf_append(&up->in, p, n) < 0) {
        put_fail(up, 500, "upload buffer overrun");
        return 0;
    }
    pump(up);
    return 0;
}

void put_watch_pipe(struct put *up, int fd)
{
    ev_io_stop(EV_DEFAULT, &up->pipe_w);
    ev_io_init(&up->pipe_w, on_writable, fd, EV_WRITE);
    up->pipe_w.data = up;
}
