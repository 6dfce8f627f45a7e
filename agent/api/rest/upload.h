/*
 * upload.h - an upload of POST /files, shared by its two files and nothing
 * else: upload.c (the request head, then the body through its stages to the
 * helpers' pipes) and upload_file.c (one file: its helper, its metadata, the
 * clean-up after a helper killed mid-write).
 */
#ifndef SA_API_REST_UPLOAD_H
#define SA_API_REST_UPLOAD_H

#include "agent/api/http/conn.h"
#include "agent/api/asuser/job.h"
#include "agent/api/rest/gz.h"
#include "agent/api/rest/multipart.h"
#include "agent/core/buf.h"
#include "agent/core/hash.h"
#include "agent/core/user.h"

#include <ev.h>

#define UPLOAD_CHUNK (64 * 1024)
/* Raw body bytes waiting for the stages: at most one read of the
 * connection past what is being worked on. */
#define UPLOAD_IN_MAX (1024 * 1024)
/* Files in one request, and the reply that names them. */
#define UPLOAD_FILES_MAX 65536
#define UPLOAD_REPLY_MAX (SERVE_BODY_MAX - 64)
/* The pipe to a helper is made this large when the kernel allows. */
#define UPLOAD_PIPE_SIZE (1024 * 1024)
/* envd.yaml's bounds on metadata: a key (the kernel's XATTR_NAME_MAX less
 * "user.e2b."), and all of a file's, counted as "user.e2b." + key + value
 * for each key. */
#define UPLOAD_META_KEY_MAX 246
#define UPLOAD_META_TOTAL_MAX 4096

struct upload_meta {
    char *name;     /* "user.e2b.<key, lowercased>" */
    char *value;
    size_t vlen;
};

struct upload_seen {   /* a path written by this request */
    struct hnode node;
    struct upload_seen *next;
    size_t len;
    char path[];
};

/* One file being written by its helper. */
struct upload_file {
    struct upload *up;
    struct asuser_job *job;
    int data_fd, verdict_fd;  /* our ends (verdict: a socket, the helper's
                               * temporary names come back on it); -1 once closed */
    char *path;               /* resolved, absolute */
    int ending;               /* its data is all in `out` or the pipe: commit next */
    int committed;            /* the verdict is sent: its result comes */
    int broken;               /* the helper stopped reading: its result comes */
};

struct upload {
    struct conn *c;
    struct user_info u;
    char *qpath;              /* ?path=, resolved; NULL when absent */
    struct upload_meta *meta;
    size_t nmeta;
    int multipart, skipping;  /* skipping: a form field that is not a file */
    struct mp mp;
    int gzip;
    struct gz gz;
    struct buf in;            /* the raw body not yet taken, from in_off */
    size_t in_off;
    char dec[UPLOAD_CHUNK];      /* inflated, not yet split: dec[dec_off..dec_len) */
    size_t dec_off, dec_len;
    int gz_more;              /* the last inflate filled dec: zlib may hold more */
    char out[UPLOAD_CHUNK];      /* the current file's bytes for its pipe */
    size_t out_off, out_len;
    struct upload_file *cur;
    unsigned files;
    struct buf reply;         /* the JSON array so far */
    struct htab seen;
    struct upload_seen *seen_list;
    int body_done;
    ev_io pipe_w;
};

/* rest/upload.c */
int rest_upload_sink(void *ctx, const char *p, size_t n);
void rest_upload_pump(struct upload *up);
void rest_upload_fail(struct upload *up, int status, const char *msg);
void rest_upload_free(struct upload *up);
void rest_upload_file_done(void *ctx, int32_t status, const char *data, size_t n);
void rest_upload_watch_pipe(struct upload *up, int fd);

/* rest/upload_file.c */
/* Start the helper of the next file, at path. Returns 0, or -1 after
 * failing the upload (a path given twice, too many files, no helper). */
int rest_upload_file_start(struct upload *up, const char *path);
void rest_upload_file_meta_free(struct upload *up);
void rest_upload_file_seen_free(struct upload *up);
/* The helper of f ended without a result (killed): have the temporary
 * files it told of removed, as the upload's user. */
void rest_upload_file_reap(struct upload *up, struct upload_file *f);
/* An X-Metadata-KEY header (KEY of klen bytes, its value of vlen) within
 * envd.yaml's bounds: KEY not empty and at most UPLOAD_META_KEY_MAX bytes,
 * both printable US-ASCII (0x20-0x7E), and *total (the set so far, to
 * which it is added) at most UPLOAD_META_TOTAL_MAX. 0, or -1 with *why
 * saying which bound it passes. */
int rest_upload_meta_check(const char *key, size_t klen, const char *value, size_t vlen, size_t *total,
                           const char **why);

#endif
