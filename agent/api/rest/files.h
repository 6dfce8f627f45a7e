/*
 * files.h - the REST route /files of the API (README "sandbox-agent serve",
 * file transfer): GET downloads a file, POST uploads one or several, each
 * as the request's user (?username=) in a helper process (asuser_job.h), with
 * `fs`'s guarantees: only regular files are read (never a FIFO, a device
 * or a /proc stream), every file is written atomically (a temporary file
 * beside it, fsynced, renamed: a reader sees the old file or the new one,
 * and a failed or cut-off upload leaves the old one and no temporary file).
 * Memory per transfer is a few fixed buffers, whatever the size; the loop
 * never waits for the disk.
 *
 *   rest/files.c  the route: query and user, errors as envd writes them
 *              ({"code": 404, "message": "..."}), errno to HTTP status
 *   rest/download.c  GET: the bytes, Content-Length or gzip
 *   rest/sendfile.c  what the loop may send from itself (sendfile(2))
 *   rest/upload.c  POST: multipart/form-data or application/octet-stream,
 *              gzip or not, streamed to the helpers
 */
#ifndef SA_API_REST_FILES_H
#define SA_API_REST_FILES_H

#include "agent/api/http/conn.h"
#include "agent/core/buf.h"
#include "agent/core/user.h"

/* The head of a GET or POST /files request (routes.c answers the other
 * methods, and who may): POST chooses its body's sink (or refuses). */
void rest_files_on_head(struct conn *c);
/* The request is complete: GET starts the download; POST's body ended. */
void rest_files_on_request(struct conn *c);

/* For rest/download.c and rest/upload.c. */
/* envd's error: status, {"code": status, "message": msg}. */
void rest_files_error(struct conn *c, int status, const char *msg);
/* The same with more header lines (each ending "\r\n"). */
void rest_files_error_extra(struct conn *c, int status, const char *msg, const char *extra);
/* The first value of the request's header `name` (without case), as Go's
 * Header.Get reads a repeated one; NULL when absent. */
const char *rest_files_header(struct conn *c, const char *name);
/* The HTTP status of an errno of the file service (FILES_ENOTREG included). */
int rest_files_status(int errnum);
/* The user (?username=) and the path (?path=, "" when absent: the home)
 * resolved into path (NUL-terminated). have_path: whether ?path= was
 * given. Returns 0, or -1 after answering the error. */
int rest_files_target(struct conn *c, struct user_info *u, struct buf *path, int *have_path);

void rest_download(struct conn *c);
void rest_upload_head(struct conn *c);
void rest_upload_done(struct conn *c);

#endif
