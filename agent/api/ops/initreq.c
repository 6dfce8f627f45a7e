/*
 * initreq.c - the POST /init body, decoded and bounded (see ops/initreq.h).
 */
#include "agent/api/ops/initreq.h"
#include "agent/api/connect/pbjson.h"
#include "agent/core/err.h"
#include "agent/core/jsoncheck.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} unsupported[] = {
    {"volumeMounts", INITREQ_VOLUME_MOUNTS},
    {"hyperloopIP", INITREQ_HYPERLOOP_IP},
    {"lifecycleID", INITREQ_LIFECYCLE_ID},
    {"caBundle", INITREQ_CA_BUNDLE},
};

const char *ops_initreq_field_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (unsupported[i].bit == bit) return unsupported[i].name;
    return "?";
}

/* ---- timestamp ---- */

/* n digits at s as a number. Returns it, or -1. */
static long num_at(const char *s, int n)
{
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static long long days_from_civil(long y, long mo, long d)
{
    y -= mo <= 2;
    long era = y / 400;
    long yoe = y - era * 400;
    long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (long long)era * 146097 + doe - 719468;
}

static int days_in(long y, long mo)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return mo == 2 && leap ? 29 : dm[mo - 1];
}

/* The fraction after the seconds ("." and 1-9 digits, or none): its
 * nanoseconds, *p moved past it. Returns 0, or -1. */
static int fraction(const char **p, const char *end, long *ns)
{
    *ns = 0;
    if (*p >= end || **p != '.') return 0;
    const char *d = ++*p;
    long scale = 100000000;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (*p - d >= 9) return -1;
        *ns += (**p - '0') * scale;
        scale /= 10;
        ++*p;
    }
    return *p > d ? 0 : -1;
}

/* "Z" or "+HH:MM" / "-HH:MM": the offset east of UTC in seconds. */
static int zone(const char *p, const char *end, long *off)
{
    *off = 0;
    if (end - p == 1 && (*p == 'Z' || *p == 'z')) return 0;
    if (end - p != 6 || (*p != '+' && *p != '-') || p[3] != ':') return -1;
    long h = num_at(p + 1, 2), mi = num_at(p + 4, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59) return -1;
    *off = (h * 3600 + mi * 60) * (*p == '-' ? -1 : 1);
    return 0;
}

int ops_initreq_time(const char *s, size_t n, struct timespec *ts)
{
    const char *end = s + n;
    if (n < 20 || n > INITREQ_TIME_MAX || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':')
        return -1;
    long y = num_at(s, 4), mo = num_at(s + 5, 2), d = num_at(s + 8, 2);
    long h = num_at(s + 11, 2), mi = num_at(s + 14, 2), sec = num_at(s + 17, 2), ns, off;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || sec < 0 || sec > 60)
        return -1;
    const char *p = s + 19;
    if (fraction(&p, end, &ns) < 0 || zone(p, end, &off) < 0) return -1;
    if (sec == 60) sec = 59; /* a leap second: the clock has no such second */
    long long t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    if (t < 0) return -1;
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = ns;
    return 0;
}

/* ---- fields ---- */

/* A string field of at most max bytes: a copy in *out (NULL when absent
 * or ""), its length in *len. Returns 0, or -1 (the type, the bound). */
static int string_field(const struct pbjson *o, const char *name, size_t max, char **out, size_t *len)
{
    const char *v = NULL;
    *out = NULL;
    if (pbjson_string(o, name, max, &v) < 0) return -1;
    if (!v || !*v) return 0;
    if (len) *len = strlen(v);
    return (*out = strdup(v)) ? 0 : (err_set(o->err, "out of memory"), -1);
}

/* An access token: what a header carries unchanged (no blank, no control). */
static int token_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return 0;
    return 1;
}

/* A user name as an Authorization header may carry it (http/auth.h). */
static int user_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == ':') return 0;
    return 1;
}

/* One variable of envVars (its value a string) as "NAME=VALUE", counted
 * into *bytes. */
static char *one_var(const cJSON *e, size_t *bytes, char *err)
{
    size_t nl = strlen(e->string), vl = strlen(e->valuestring);
    if (nl == 0 || nl > INITREQ_NAME_MAX || strchr(e->string, '='))
        return err_set(err, "an 'envVars' name is empty, too long or holds '='"), NULL;
    if (nl + 1 + vl > INITREQ_VAR_MAX) return err_set(err, "an 'envVars' variable is over 128 KiB"), NULL;
    if ((*bytes += nl + 1 + vl) > INITREQ_ENV_BYTES_MAX) return err_set(err, "'envVars' is over 1 MiB in all"), NULL;
    char *s = malloc(nl + 1 + vl + 1);
    if (!s) return err_set(err, "out of memory"), NULL;
    memcpy(s, e->string, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, e->valuestring, vl + 1);
    return s;
}

static int env_field(const struct pbjson *o, struct ops_initreq *r)
{
    const cJSON *v = NULL;
    size_t bytes = 0;
    int has = pbjson_map(o, "envVars", INITREQ_ENV_MAX, &v);
    if (has <= 0) return has;
    if (!(r->env = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *r->env))) return err_set(o->err, "out of memory"), -1;
    for (const cJSON *e = v->child; e; e = e->next)
        if (!(r->env[r->nenv++] = one_var(e, &bytes, o->err))) return r->nenv--, -1;
    return 0;
}

static int time_field(const struct pbjson *o, struct ops_initreq *r)
{
    const char *v = NULL;
    if (pbjson_string(o, "timestamp", INITREQ_TIME_MAX, &v) < 0) return -1;
    if (!v) return 0;
    if (ops_initreq_time(v, strlen(v), &r->time) < 0)
        return err_set(o->err, "'timestamp' must be an RFC 3339 date-time"), -1;
    r->has_time = 1;
    return 0;
}

static int decode_object(const struct pbjson *o, struct ops_initreq *r)
{
    if (env_field(o, r) < 0 || time_field(o, r) < 0) return -1;
    if (string_field(o, "accessToken", INITREQ_TOKEN_MAX, &r->token, &r->token_len) < 0) return -1;
    if (r->token && !token_ok(r->token))
        return err_set(o->err, "'accessToken' must be at most 1024 visible ASCII characters"), -1;
    if (string_field(o, "defaultUser", INITREQ_USER_MAX, &r->user, NULL) < 0) return -1;
    if (r->user && !user_ok(r->user)) return err_set(o->err, "'defaultUser' must be a user name"), -1;
    if (string_field(o, "defaultWorkdir", INITREQ_WORKDIR_MAX, &r->workdir, NULL) < 0) return -1;
    if (r->workdir && r->workdir[0] != '/') return err_set(o->err, "'defaultWorkdir' must be an absolute path"), -1;
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (pbjson_field(o, unsupported[i].name)) r->unsupported |= unsupported[i].bit;
    return 0;
}

static void wipe(char *s)
{
    volatile char *v = s;
    for (size_t i = 0; s && s[i]; i++) v[i] = '\0';
}

int ops_initreq_decode(const char *body, size_t n, struct ops_initreq *r, char *err)
{
    struct jsoncheck jc;
    memset(r, 0, sizeof *r);
    size_t i = 0;
    while (i < n && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) i++;
    if (i == n) return 0; /* no body: nothing to change */
    if (jsoncheck(body, n, &jc) < 0) return err_set(err, "the body is not JSON"), -1;
    if (jc.type == JSON_NULL) return 0;
    if (jc.type != JSON_OBJECT) return err_set(err, "the body must be a JSON object"), -1;
    if (jc.has_nul) return err_set(err, "a string of the body holds \\u0000"), -1;
    cJSON *o = cJSON_ParseWithLength(body, n);
    if (!o) return err_set(err, "out of memory"), -1;
    const struct pbjson m = {o, 0, err}; /* envd's JSON, not a protobuf message: one name per field */
    int rc = decode_object(&m, r);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "accessToken");
    if (cJSON_IsString(t)) wipe(t->valuestring); /* the copy in r is the only one left */
    cJSON_Delete(o);
    return rc;
}

void ops_initreq_free(struct ops_initreq *r)
{
    for (size_t i = 0; i < r->nenv; i++) free(r->env[i]);
    free(r->env);
    wipe(r->token);
    free(r->token);
    free(r->user);
    free(r->workdir);
    memset(r, 0, sizeof *r);
}
