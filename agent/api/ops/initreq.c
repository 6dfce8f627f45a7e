/*
 * initreq.c - the POST /init body, decoded and bounded (see ops/initreq.h).
 */
#include "agent/api/ops/initreq.h"
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

/* The member name of o, NULL when absent or null. */
static const cJSON *field(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A string field of at most max bytes: a copy in *out (NULL when absent
 * or ""). Returns 0, or -1 (the type or the bound). */
static int string_field(const cJSON *o, const char *name, size_t max, char **out, size_t *len)
{
    const cJSON *v = field(o, name);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) return -1;
    size_t n = strlen(v->valuestring);
    if (n > max) return -1;
    if (len) *len = n;
    if (n == 0) return 0;
    return (*out = strdup(v->valuestring)) ? 0 : -1;
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

/* One variable of envVars as "NAME=VALUE", counted into *bytes. */
static char *one_var(const cJSON *e, size_t *bytes, const char **why)
{
    size_t nl = strlen(e->string), vl = e->valuestring ? strlen(e->valuestring) : 0;
    if (!cJSON_IsString(e) || !e->valuestring) return *why = "'envVars' values must be strings", NULL;
    if (nl == 0 || nl > INITREQ_NAME_MAX || strchr(e->string, '='))
        return *why = "an 'envVars' name is empty, too long or holds '='", NULL;
    if (nl + 1 + vl > INITREQ_VAR_MAX) return *why = "an 'envVars' variable is over 128 KiB", NULL;
    if ((*bytes += nl + 1 + vl) > INITREQ_ENV_BYTES_MAX) return *why = "'envVars' is over 1 MiB in all", NULL;
    char *s = malloc(nl + 1 + vl + 1);
    if (!s) return *why = "out of memory", NULL;
    memcpy(s, e->string, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, e->valuestring, vl + 1);
    return s;
}

static int env_field(const cJSON *o, struct ops_initreq *r, const char **why)
{
    const cJSON *v = field(o, "envVars");
    size_t bytes = 0;
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return *why = "'envVars' must be an object of strings", -1;
    int n = cJSON_GetArraySize(v);
    if (n > INITREQ_ENV_MAX) return *why = "'envVars' has more than 1024 variables", -1;
    if (!(r->env = calloc((size_t)n + 1, sizeof *r->env))) return *why = "out of memory", -1;
    for (const cJSON *e = v->child; e; e = e->next)
        if (!(r->env[r->nenv++] = one_var(e, &bytes, why))) return r->nenv--, -1;
    return 0;
}

static int time_field(const cJSON *o, struct ops_initreq *r, const char **why)
{
    const cJSON *v = field(o, "timestamp");
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring ||
        ops_initreq_time(v->valuestring, strlen(v->valuestring), &r->time) < 0)
        return *why = "'timestamp' must be an RFC 3339 date-time", -1;
    r->has_time = 1;
    return 0;
}

static int decode_object(const cJSON *o, struct ops_initreq *r, const char **why)
{
    if (env_field(o, r, why) < 0 || time_field(o, r, why) < 0) return -1;
    if (string_field(o, "accessToken", INITREQ_TOKEN_MAX, &r->token, &r->token_len) < 0 ||
        (r->token && !token_ok(r->token)))
        return *why = "'accessToken' must be at most 1024 visible ASCII characters", -1;
    if (string_field(o, "defaultUser", INITREQ_USER_MAX, &r->user, NULL) < 0 || (r->user && !user_ok(r->user)))
        return *why = "'defaultUser' must be a user name", -1;
    if (string_field(o, "defaultWorkdir", INITREQ_WORKDIR_MAX, &r->workdir, NULL) < 0 ||
        (r->workdir && r->workdir[0] != '/'))
        return *why = "'defaultWorkdir' must be an absolute path", -1;
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (field(o, unsupported[i].name)) r->unsupported |= unsupported[i].bit;
    return 0;
}

static void wipe(char *s)
{
    volatile char *v = s;
    for (size_t i = 0; s && s[i]; i++) v[i] = '\0';
}

int ops_initreq_decode(const char *body, size_t n, struct ops_initreq *r, const char **why)
{
    struct jsoncheck jc;
    memset(r, 0, sizeof *r);
    size_t i = 0;
    while (i < n && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) i++;
    if (i == n) return 0; /* no body: nothing to change */
    if (jsoncheck(body, n, &jc) < 0) return *why = "the body is not JSON", -1;
    if (jc.type == JSON_NULL) return 0;
    if (jc.type != JSON_OBJECT) return *why = "the body must be a JSON object", -1;
    if (jc.has_nul) return *why = "a string of the body holds \\u0000", -1;
    cJSON *o = cJSON_ParseWithLength(body, n);
    if (!o) return *why = "out of memory", -1;
    int rc = decode_object(o, r, why);
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
