/*
 * pbjson.c - the fields of a JSON request message (see connect/pbjson.h).
 */
#include "agent/api/connect/pbjson.h"
#include "agent/core/err.h"
#include "agent/core/num.h"

#include <math.h>
#include <string.h>

/* The longest proto name derived (the API's are a few words). */
#define PROTO_NAME_MAX 64

/* The proto name of a lowerCamelCase JSON name ("includeEntry":
 * "include_entry") into out; 0 when it has none of its own. */
static int proto_name(const char *name, char out[PROTO_NAME_MAX])
{
    size_t o = 0;
    int differs = 0;
    for (const char *p = name; *p; p++) {
        int upper = *p >= 'A' && *p <= 'Z';
        if (o + 2 >= PROTO_NAME_MAX) return 0;
        if (upper) out[o++] = '_';
        out[o++] = upper ? (char)(*p - 'A' + 'a') : *p;
        differs |= upper;
    }
    out[o] = '\0';
    return differs;
}

const cJSON *pbjson_field(const struct pbjson *m, const char *name)
{
    char alias[PROTO_NAME_MAX];
    if (!cJSON_IsObject(m->obj)) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->obj, name);
    if (!v && m->proto_names && proto_name(name, alias)) v = cJSON_GetObjectItemCaseSensitive(m->obj, alias);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int pbjson_object(const struct pbjson *m, const char *name, struct pbjson *out)
{
    const cJSON *v = pbjson_field(m, name);
    *out = *m;
    out->obj = NULL;
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return err_set(m->err, "'%s' must be an object", name), -1;
    out->obj = v;
    return 1;
}

/* A container (array or object) of at most max members. */
static int bounded(const struct pbjson *m, const char *name, const cJSON *v, size_t max)
{
    size_t n = 0;
    for (const cJSON *e = v->child; e; e = e->next)
        if (++n > max) return err_set(m->err, "'%s' has more than %zu entries", name, max), -1;
    return 0;
}

int pbjson_array(const struct pbjson *m, const char *name, size_t max, const cJSON **out)
{
    const cJSON *v = pbjson_field(m, name);
    if (!v) return 0;
    if (!cJSON_IsArray(v)) return err_set(m->err, "'%s' must be an array", name), -1;
    if (bounded(m, name, v, max) < 0) return -1;
    *out = v;
    return 1;
}

int pbjson_map(const struct pbjson *m, const char *name, size_t max, const cJSON **out)
{
    const cJSON *v = pbjson_field(m, name);
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return err_set(m->err, "'%s' must be an object of strings", name), -1;
    if (bounded(m, name, v, max) < 0) return -1;
    for (const cJSON *e = v->child; e; e = e->next)
        if (!cJSON_IsString(e) || !e->valuestring)
            return err_set(m->err, "'%s': '%.64s' must be a string", name, e->string ? e->string : ""), -1;
    *out = v;
    return 1;
}

int pbjson_string(const struct pbjson *m, const char *name, size_t max, const char **out)
{
    const cJSON *v = pbjson_field(m, name);
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) return err_set(m->err, "'%s' must be a string", name), -1;
    if (max != PBJSON_UNBOUNDED && strlen(v->valuestring) > max)
        return err_set(m->err, "'%s' is longer than %zu bytes", name, max), -1;
    *out = v->valuestring;
    return 1;
}

int pbjson_bool(const struct pbjson *m, const char *name, int *out)
{
    const cJSON *v = pbjson_field(m, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return err_set(m->err, "'%s' must be true or false", name), -1;
    *out = cJSON_IsTrue(v);
    return 1;
}

int pbjson_uint(const struct pbjson *m, const char *name, uint32_t max, uint32_t *out)
{
    const cJSON *v = pbjson_field(m, name);
    uint64_t n = 0;
    int ok;
    if (!v) return 0;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        ok = isfinite(d) && d >= 0 && d <= max && floor(d) == d;
        n = ok ? (uint64_t)d : 0;
    } else {
        ok = cJSON_IsString(v) && v->valuestring && num_count(v->valuestring, max, &n) == 0;
    }
    if (!ok) return err_set(m->err, "'%s' must be a whole number from 0 to %u", name, (unsigned)max), -1;
    *out = (uint32_t)n;
    return 1;
}
