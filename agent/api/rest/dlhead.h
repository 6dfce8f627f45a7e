/*
 * dlhead.h - what a download's head says of the file by its name (README
 * "filesystem.Filesystem and /files"): its Content-Type from the extension,
 * and envd's Content-Disposition (`inline` and the file's name, as Go's
 * mime.FormatMediaType writes the parameter: a token as it is, a name with
 * a byte outside printable ASCII as RFC 2231's `filename*=utf-8''%XX`,
 * anything else a quoted-string). Pure.
 */
#ifndef SA_API_REST_DLHEAD_H
#define SA_API_REST_DLHEAD_H

#include "agent/core/buf.h"

/* The Content-Type of path by its extension (application/octet-stream
 * when it has none the table knows). A static string. */
const char *rest_dlhead_type(const char *path);

/* "Content-Disposition: inline; filename=...\r\n" for the last component
 * of the absolute path, appended to out. Returns 0, or -1 past out's bound. */
int rest_dlhead_disposition(struct buf *out, const char *path);

#endif
