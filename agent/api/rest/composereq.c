/*
 * composereq.c - the POST /files/compose body, decoded (see rest/composereq.h).
 */
#include "agent/api/rest/composereq.h"
#include "agent/core/jsonbytes.h"
#include "agent/core/jsoncheck.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rest_composereq_free(struct rest_composereq *r)
{
    for (size_t i = 0; r->sources && i < r->n; i++) free(r->sources[i]);
    free(r->sources);
    free(r->destination);
    free(r->username);
    memset(r, 0, sizeof *r);
}

/* A string member (null: *out stays NULL). Returns 0, or -1. */
static int string_of(const cJSON *v, char **out)
{
    free(*out);
    *out = NULL;
    if (cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) return -1;
    return (*out = strdup(v->valuestring)) ? 0 : -1;
}

static int sources_of(const cJSON *v, struct rest_composereq *r, const char **why)
{
    for (size_t i = 0; i < r->n; i++) free(r->sources[i]);
    free(r->sources);
    r->sources = NULL, r->n = 0;
    if (cJSON_IsNull(v)) return 0;
    if (!cJSON_IsArray(v)) return *why = "source_paths is not an array of strings", -1;
    int count = cJSON_GetArraySize(v);
    if (count > REST_COMPOSE_SOURCES_MAX) return *why = "more than 65536 source_paths", -1;
    if (count && !(r->sources = calloc((size_t)count, sizeof *r->sources))) return *why = "out of memory", -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char *s = NULL;
        if (string_of(it, &s) < 0) return *why = "source_paths is not an array of strings", -1;
        if (!s && !(s = strdup(""))) return *why = "out of memory", -1;
        r->sources[r->n++] = s;
    }
    return 0;
}

int rest_composereq_decode(const char *body, size_t len, struct rest_composereq *r, const char **why)
{
    struct jsoncheck jc;
    memset(r, 0, sizeof *r);
    if (len > REST_COMPOSE_BODY_MAX) return *why = "the body is larger than 2 MiB", -1;
    if (jsoncheck(body, len, &jc) < 0) return *why = "invalid request body: not JSON", -1;
    if (jc.has_nul) return *why = "a string of the body holds \\u0000", -1;
    if (jc.type != JSON_OBJECT && jc.type != JSON_NULL) return *why = "invalid request body: not a JSON object", -1;
    char *text = malloc(len ? len : 1);
    if (!text) return *why = "out of memory", -1;
    memcpy(text, body, len);
    cJSON *o = cJSON_ParseWithLength(text, jsonbytes_unescape(text, len));
    free(text);
    if (!o) return *why = "invalid request body", -1;
    int bad = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, o) { /* in order: the last of a repeated member stands */
        if (bad) break;
        if (!strcasecmp(m->string, "source_paths")) bad = sources_of(m, r, why) < 0;
        else if (!strcasecmp(m->string, "destination"))
            bad = string_of(m, &r->destination) < 0 && (*why = "destination is not a string", 1);
        else if (!strcasecmp(m->string, "username"))
            bad = string_of(m, &r->username) < 0 && (*why = "username is not a string", 1);
    }
    cJSON_Delete(o);
    if (bad) return -1;
    if (!r->n) return *why = "source_paths must not be empty", -1;
    if (!r->destination || !*r->destination) return *why = "destination is required", -1;
    return 0;
}
