/*
 * wline.h - the watcher's output line: SENTINEL_WATCH followed by the JSON
 * object Python's json.dumps({"mask": m, "path": p}) prints, plus an "error"
 * member for a directory that could not be watched or listed.
 */
#ifndef SA_INOTIFY_WATCH_WLINE_H
#define SA_INOTIFY_WATCH_WLINE_H

#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Append one line (with its "\n"). path is raw bytes: non-UTF-8 bytes become
 * \udcXX so that os.fsencode(json.loads(line)["path"]) gives them back.
 * error may be NULL. Returns 0, or -1 with the buffer unchanged. */
int wline_event(struct buf *out, uint32_t mask, const char *path, size_t n, const char *error);

/* The READY line. */
int wline_ready(struct buf *out);

#endif
