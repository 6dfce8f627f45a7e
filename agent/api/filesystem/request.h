/*
 * request.h - the request messages of filesystem.Filesystem, decoded from
 * their JSON (proto3's mapping, read by connect/pbjson.h: lowerCamelCase or
 * the proto field name, null or absent for a default, uint32 as a number or
 * a string of digits, unknown fields ignored) into plain fields. Pure: the
 * strings point into the cJSON tree, valid while it is.
 */
#ifndef SA_API_FILESYSTEM_REQUEST_H
#define SA_API_FILESYSTEM_REQUEST_H

#include <cJSON.h>
#include <stdint.h>

enum filesystem_request_kind {
    FSREQ_PATH,    /* Stat, MakeDir, Remove: path */
    FSREQ_LIST,    /* ListDir: path, depth */
    FSREQ_MOVE,    /* Move: source, destination */
    FSREQ_WATCH,   /* WatchDir, CreateWatcher: path, recursive, includeEntry, allowNetworkMounts */
    FSREQ_WATCHER, /* GetWatcherEvents, RemoveWatcher: watcherId */
};

struct filesystem_request {
    const char *path, *source, *destination, *watcher_id; /* "" when absent */
    uint32_t depth;
    int recursive, include_entry, allow_network_mounts;
};

/* Returns 0, or -1 with the reason in err (ERR_LEN bytes), naming the field
 * of the wrong type. */
int filesystem_request_decode(enum filesystem_request_kind kind, const cJSON *msg, struct filesystem_request *r,
                              char *err);

#endif
