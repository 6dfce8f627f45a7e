/*
 * wline.c - the watcher's output lines (see wline.h).
 */
#include "inotify/watch/wline.h"
#include "agent/core/jsonw.h"
#include "agent/core/protocol.h"

#include <string.h>

int wline_event(struct buf *out, uint32_t mask, const char *path, size_t n, const char *error)
{
    size_t mark = out->len;
    if (buf_puts(out, SENTINEL_WATCH) < 0 || buf_printf(out, "{\"mask\": %lu, ", (unsigned long)mask) < 0 ||
        jsonw_key(out, "path") < 0 || jsonw_str(out, path, n, JSONW_SURROGATEESCAPE) < 0)
        goto fail;
    if (error && (buf_puts(out, ", ") < 0 || jsonw_key(out, "error") < 0 ||
                  jsonw_str(out, error, strlen(error), JSONW_SURROGATEESCAPE) < 0))
        goto fail;
    if (buf_puts(out, "}\n") < 0) goto fail;
    return 0;
fail:
    out->len = mark;
    return -1;
}

int wline_ready(struct buf *out) { return buf_puts(out, SENTINEL_WATCH_READY "\n"); }
