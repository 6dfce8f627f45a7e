/*
 * filesystem_request.c - decoding the filesystem requests (see filesystem_request.h).
 */
#include "agent/api/filesystem/request.h"
#include "agent/core/num.h"

#include <string.h>

/* The member called json (camelCase) or proto (snake_case), or NULL. */
static const cJSON *member(const cJSON *msg, const char *json, const char *proto)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, json);
    if (!v && proto) v = cJSON_GetObjectItemCaseSensitive(msg, proto);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_string(const cJSON *msg, const char *json, const char *proto, const char **out,
                      const char **why)
{
    const cJSON *v = member(msg, json, proto);
    *out = "";
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) {
        *why = "a string field holds something else";
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

static int get_bool(const cJSON *msg, const char *json, const char *proto, int *out, const char **why)
{
    const cJSON *v = member(msg, json, proto);
    *out = 0;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        *why = "a bool field holds something else";
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

/* uint32: an integral number, or its decimal digits as a string. */
static int get_u32(const cJSON *msg, const char *json, uint32_t *out, const char **why)
{
    const cJSON *v = member(msg, json, NULL);
    uint64_t n = 0;
    *out = 0;
    if (!v) return 0;
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 4294967295.0 &&
        v->valuedouble == (double)(uint64_t)v->valuedouble)
        n = (uint64_t)v->valuedouble;
    else if (!cJSON_IsString(v) || !v->valuestring || num_count(v->valuestring, UINT32_MAX, &n) < 0) {
        *why = "a uint32 field holds something else";
        return -1;
    }
    *out = (uint32_t)n;
    return 0;
}

int filesystem_request_decode(enum filesystem_request_kind kind, const cJSON *msg, struct filesystem_request *r, const char **why)
{
    memset(r, 0, sizeof *r);
    r->path = r->source = r->destination = r->watcher_id = "";
    if (!cJSON_IsObject(msg)) {
        *why = "the request message is not an object";
        return -1;
    }
    switch (kind) {
    case FSREQ_PATH:
        return get_string(msg, "path", NULL, &r->path, why);
    case FSREQ_LIST:
        return get_string(msg, "path", NULL, &r->path, why) < 0 ? -1 : get_u32(msg, "depth", &r->depth, why);
    case FSREQ_MOVE:
        return get_string(msg, "source", NULL, &r->source, why) < 0
                   ? -1
                   : get_string(msg, "destination", NULL, &r->destination, why);
    case FSREQ_WATCH:
        if (get_string(msg, "path", NULL, &r->path, why) < 0 ||
            get_bool(msg, "recursive", NULL, &r->recursive, why) < 0 ||
            get_bool(msg, "includeEntry", "include_entry", &r->include_entry, why) < 0)
            return -1;
        return get_bool(msg, "allowNetworkMounts", "allow_network_mounts", &r->allow_network_mounts, why);
    case FSREQ_WATCHER:
        return get_string(msg, "watcherId", "watcher_id", &r->watcher_id, why);
    }
    *why = "unknown request";
    return -1;
}
