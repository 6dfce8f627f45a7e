/*
 * cond.c - conditional requests and HTTP-dates (see rest/cond.h).
 */
#include "agent/api/rest/cond.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char days[7][10] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* ---- HTTP-dates ---- */

/* Exactly the text lit at *p. */
static int lit(const char **p, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(*p, lit, n)) return -1;
    *p += n;
    return 0;
}

/* min..max digits at *p as a number. */
static int digits(const char **p, int min, int max, int *v)
{
    int k = 0;
    *v = 0;
    while (k < max && (*p)[k] >= '0' && (*p)[k] <= '9') *v = *v * 10 + ((*p)[k++] - '0');
    if (k < min) return -1;
    *p += k;
    return 0;
}

/* A day's name (its three letters, or whole), without case, as Go matches it. */
static int day_name(const char **p, int whole)
{
    for (int i = 0; i < 7; i++) {
        size_t n = whole ? strlen(days[i]) : 3;
        if (!strncasecmp(*p, days[i], n)) return *p += n, 0;
    }
    return -1;
}

static int month_name(const char **p, int *mon)
{
    for (int i = 0; i < 12; i++)
        if (!strncasecmp(*p, months[i], 3)) return *p += 3, *mon = i, 0;
    return -1;
}

/* "15:04:05": the hour of one or two digits, as Go's layout reads it. */
static int hms(const char **p, struct tm *tm)
{
    return digits(p, 1, 2, &tm->tm_hour) < 0 || lit(p, ":") < 0 || digits(p, 2, 2, &tm->tm_min) < 0 ||
                   lit(p, ":") < 0 || digits(p, 2, 2, &tm->tm_sec) < 0
               ? -1
               : 0;
}

static int imf_fixdate(const char *p, struct tm *tm)
{
    return day_name(&p, 0) < 0 || lit(&p, ", ") < 0 || digits(&p, 2, 2, &tm->tm_mday) < 0 || lit(&p, " ") < 0 ||
                   month_name(&p, &tm->tm_mon) < 0 || lit(&p, " ") < 0 || digits(&p, 4, 4, &tm->tm_year) < 0 ||
                   lit(&p, " ") < 0 || hms(&p, tm) < 0 || lit(&p, " GMT") < 0 || *p
               ? -1
               : 0;
}

static int rfc850(const char *p, struct tm *tm)
{
    if (day_name(&p, 1) < 0 || lit(&p, ", ") < 0 || digits(&p, 2, 2, &tm->tm_mday) < 0 || lit(&p, "-") < 0 ||
        month_name(&p, &tm->tm_mon) < 0 || lit(&p, "-") < 0 || digits(&p, 2, 2, &tm->tm_year) < 0 ||
        lit(&p, " ") < 0 || hms(&p, tm) < 0 || (strcmp(p, " GMT") && strcmp(p, " UTC")))
        return -1;
    tm->tm_year += tm->tm_year >= 69 ? 1900 : 2000; /* as Go reads a two-digit year */
    return 0;
}

static int asctime_date(const char *p, struct tm *tm)
{
    if (day_name(&p, 0) < 0 || lit(&p, " ") < 0 || month_name(&p, &tm->tm_mon) < 0 || lit(&p, " ") < 0)
        return -1;
    if (*p == ' ') p++; /* " 2": a day of one digit, space-padded */
    return digits(&p, 1, 2, &tm->tm_mday) < 0 || lit(&p, " ") < 0 || hms(&p, tm) < 0 || lit(&p, " ") < 0 ||
                   digits(&p, 4, 4, &tm->tm_year) < 0 || *p
               ? -1
               : 0;
}

int rest_cond_parse_date(const char *s, int64_t *t)
{
    struct tm tm = {0}, back;
    if (imf_fixdate(s, &tm) < 0 && (memset(&tm, 0, sizeof tm), rfc850(s, &tm) < 0) &&
        (memset(&tm, 0, sizeof tm), asctime_date(s, &tm) < 0))
        return -1;
    if (tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59 || tm.tm_mday < 1) return -1;
    int mday = tm.tm_mday, mon = tm.tm_mon;
    tm.tm_year -= 1900;
    time_t v = timegm(&tm);
    /* A day past its month's end comes back as another date: refused, as Go does. */
    if (!gmtime_r(&v, &back) || back.tm_mday != mday || back.tm_mon != mon) return -1;
    *t = (int64_t)v;
    return 0;
}

int rest_cond_format_date(int64_t t, char out[REST_COND_DATE_LEN])
{
    struct tm tm;
    time_t v = (time_t)t;
    if (!gmtime_r(&v, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900) return -1;
    snprintf(out, REST_COND_DATE_LEN, "%.3s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return 0;
}

/* ---- entity tags ---- */

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* An entity tag at *p (W/"..." or "...", RFC 9110 §8.8.3): 1 and *p past
 * it, or 0 when there is none. */
static int etag(const char **p)
{
    const char *s = *p;
    if (!strncmp(s, "W/", 2)) s += 2;
    if (*s != '"') return 0;
    for (s++; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"') return *p = s + 1, 1;
        if (!(c == 0x21 || (c >= 0x23 && c != 0x7f))) return 0;
    }
    return 0;
}

/* An If-Match / If-None-Match list, where no tag can match ours (there is
 * none): 1 when "*" comes before the list ends or stops making sense. */
static int list_has_star(const char *v)
{
    for (;;) {
        while (blank(*v) || *v == ',') v++;
        if (!*v) return 0;
        if (*v == '*') return 1;
        if (!etag(&v)) return 0;
    }
}

/* ---- the evaluation ---- */

int rest_cond_has_time(int64_t mtime, long mtime_ns) { return mtime != 0 || mtime_ns != 0; }

/* A date header: -1 absent or ignored (no date, or the file has no time),
 * 1 the file is not newer than the date, 0 it is. */
static int not_newer(const char *v, int64_t mtime, long mtime_ns)
{
    int64_t t;
    if (!v || !*v || !rest_cond_has_time(mtime, mtime_ns) || rest_cond_parse_date(v, &t) < 0) return -1;
    return mtime <= t;
}

enum rest_cond_result rest_cond_eval(const struct rest_cond_req *h, int64_t mtime, long mtime_ns, int *range_ok)
{
    int64_t t;
    *range_ok = 1;
    /* If-Match, else If-Unmodified-Since: false is 412. */
    if (h->if_match && *h->if_match) {
        if (!list_has_star(h->if_match)) return REST_COND_FAILED;
    } else if (not_newer(h->if_unmodified_since, mtime, mtime_ns) == 0) {
        return REST_COND_FAILED;
    }
    /* If-None-Match, else If-Modified-Since: false is 304. */
    if (h->if_none_match && *h->if_none_match) {
        if (list_has_star(h->if_none_match)) return REST_COND_NOT_MODIFIED;
    } else if (not_newer(h->if_modified_since, mtime, mtime_ns) == 1) {
        return REST_COND_NOT_MODIFIED;
    }
    /* If-Range: an entity tag never matches; a date must be the second. */
    if (h->if_range && *h->if_range) {
        const char *v = h->if_range;
        while (blank(*v)) v++;
        *range_ok = !etag(&v) && rest_cond_parse_date(h->if_range, &t) == 0 && t == mtime;
    }
    return REST_COND_SERVE;
}
