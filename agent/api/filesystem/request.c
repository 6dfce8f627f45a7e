/*
 * request.c - decoding the filesystem requests (see filesystem/request.h).
 */
#include "agent/api/filesystem/request.h"
#include "agent/api/connect/pbjson.h"
#include "agent/core/err.h"

#include <string.h>

int filesystem_request_decode(enum filesystem_request_kind kind, const cJSON *msg, struct filesystem_request *r,
                              char *err)
{
    const struct pbjson m = {msg, 1, err};
    memset(r, 0, sizeof *r);
    r->path = r->source = r->destination = r->watcher_id = "";
    if (!cJSON_IsObject(msg)) return err_set(err, "the request message is not an object"), -1;
    switch (kind) {
    case FSREQ_PATH:
        return pbjson_string(&m, "path", PBJSON_UNBOUNDED, &r->path) < 0 ? -1 : 0;
    case FSREQ_LIST:
        return pbjson_string(&m, "path", PBJSON_UNBOUNDED, &r->path) < 0 ||
                       pbjson_uint(&m, "depth", UINT32_MAX, &r->depth) < 0
                   ? -1
                   : 0;
    case FSREQ_MOVE:
        return pbjson_string(&m, "source", PBJSON_UNBOUNDED, &r->source) < 0 ||
                       pbjson_string(&m, "destination", PBJSON_UNBOUNDED, &r->destination) < 0
                   ? -1
                   : 0;
    case FSREQ_WATCH:
        return pbjson_string(&m, "path", PBJSON_UNBOUNDED, &r->path) < 0 ||
                       pbjson_bool(&m, "recursive", &r->recursive) < 0 ||
                       pbjson_bool(&m, "includeEntry", &r->include_entry) < 0 ||
                       pbjson_bool(&m, "allowNetworkMounts", &r->allow_network_mounts) < 0
                   ? -1
                   : 0;
    case FSREQ_WATCHER:
        return pbjson_string(&m, "watcherId", PBJSON_UNBOUNDED, &r->watcher_id) < 0 ? -1 : 0;
    }
    return err_set(err, "unknown request"), -1;
}
