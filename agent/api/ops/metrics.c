/*
 * metrics.c - GET /metrics: where the figures are read, and the reads (see
 * ops/metrics.h).
 */
#include "agent/api/ops/metrics.h"
#include "agent/api/connect/rpc.h"
#include "agent/core/err.h"
#include "agent/core/jsonw.h"
#include "agent/core/log.h"
#include "agent/core/memcg.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* A call this soon after the last sample repeats its CPU figure. */
#define MIN_INTERVAL 0.1
/* The JSON: ten numbers. */
#define JSON_MAX 512

enum cpu_src { CPU_PROC_STAT = 0, CPU_V2, CPU_V1 };

/* The pseudo-files read on every call, held open and read with pread at
 * offset 0 (a seq_file makes its text afresh): a cgroup file's open costs
 * more than its read. -1: not there. */
enum { F_USAGE, F_LIMIT, F_STAT, F_CPU, F_QUOTA, F_PERIOD, F_MEMINFO, NFILES };

static struct {
    const char *disk;
    enum cpu_src src;
    int v2_quota;                    /* F_QUOTA is cpu.max (else cfs_quota_us) */
    enum memcg_kind mem;             /* the kind of F_USAGE, F_LIMIT, F_STAT */
    int fd[NFILES];
    unsigned long long host_total;   /* MemTotal, bytes */
    double wall;                     /* the last sample */
    unsigned long long busy, total;
    double pct;                      /* the last figure */
} m = {.fd = {-1, -1, -1, -1, -1, -1, -1}};

/* ---- pure parts ---- */

int ops_metrics_json(struct buf *b, const struct ops_metrics *x)
{
    if (buf_printf(b, "{\"ts\": %lld, \"cpu_count\": %u, \"cpu_used_pct\": ", x->ts, x->cpu_count) < 0 ||
        jsonw_double(b, x->cpu_used_pct) < 0)
        return -1;
    return buf_printf(b, ", \"mem_total\": %llu, \"mem_used\": %llu, \"mem_cache\": %llu, "
                         "\"mem_total_mib\": %llu, \"mem_used_mib\": %llu, \"disk_used\": %llu, "
                         "\"disk_total\": %llu}",
                      x->mem_total, x->mem_used, x->mem_cache, x->mem_total >> 20, x->mem_used >> 20,
                      x->disk_used, x->disk_total);
}

/* Decimal digits at *p (moved past them). Returns 0, or -1 for none or overflow. */
static int digits(const char **p, unsigned long long *out)
{
    unsigned long long v = 0;
    const char *s = *p;
    if (*s < '0' || *s > '9') return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned dig = (unsigned)(*s - '0');
        if (v > (~0ull - dig) / 10) return -1;
        v = v * 10 + dig;
    }
    *p = s;
    *out = v;
    return 0;
}

int ops_metrics_cpu_max(const char *text, unsigned long long *quota, unsigned long long *period)
{
    const char *p = text;
    *quota = 0;
    if (!strncmp(p, "max", 3)) p += 3;
    else if (digits(&p, quota) < 0 || *quota == 0) return -1;
    if (*p++ != ' ' || digits(&p, period) < 0 || *period == 0) return -1;
    return *p == '\n' || *p == '\0' ? 0 : -1;
}

int ops_metrics_meminfo(const char *text, size_t len, const char *key, unsigned long long *bytes)
{
    size_t kl = strlen(key);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        if ((size_t)(e - p) > kl + 1 && !memcmp(p, key, kl) && p[kl] == ':') {
            const char *d = p + kl + 1;
            unsigned long long kib;
            while (d < e && *d == ' ') d++;
            if (digits(&d, &kib) < 0 || kib > (~0ull >> 10) || (e - d != 3 && e - d != 0) ||
                (e - d == 3 && memcmp(d, " kB", 3)))
                return -1;
            *bytes = e - d == 3 ? kib << 10 : kib;
            return 0;
        }
        p = nl ? nl + 1 : end;
    }
    return -1;
}

int ops_metrics_proc_stat(const char *text, size_t len, unsigned long long *busy, unsigned long long *total)
{
    /* cpu  user nice system idle iowait irq softirq steal [guest guest_nice] */
    if (len < 4 || memcmp(text, "cpu ", 4)) return -1;
    const char *p = text + 4;
    unsigned long long f[8] = {0};
    int n = 0;
    for (; n < 8; n++) {
        while (*p == ' ') p++;
        if (digits(&p, &f[n]) < 0) break;
    }
    if (n < 5) return -1; /* up to iowait: every kernel since 2.6 */
    unsigned long long t = 0;
    for (int i = 0; i < 8; i++) t += f[i];
    *total = t;
    *busy = t - f[3] - f[4];
    return 0;
}

double ops_metrics_pct(double used, double avail)
{
    if (!(avail > 0) || !(used > 0)) return 0.0;
    double pct = used / avail * 100.0;
    if (pct > 100.0) pct = 100.0;
    return round(pct * 100.0) / 100.0;
}

/* ---- where: found once ---- */

static void hold(int f, const char *dir, const char *name)
{
    char path[CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    m.fd[f] = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
}

/* A group of the agent's own in that hierarchy, not the mount's root (the
 * root's figures are the host's). */
static int own_group(const char *controller, char *dir)
{
    char why[ERR_LEN];
    return cgroup_self_dir(controller, dir, NULL, why) == 0 ? 0 : -1;
}

static void find_memory(void)
{
    const struct memcg *mc = memcg_self();
    int v2 = mc->kind == MEMCG_V2;
    m.mem = mc->kind;
    hold(F_MEMINFO, "/proc", "meminfo");
    if (mc->kind == MEMCG_NONE) return;
    hold(F_USAGE, mc->dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    hold(F_LIMIT, mc->dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    hold(F_STAT, mc->dir, "memory.stat");
}

static void find_cpu(void)
{
    const struct memcg *mc = memcg_self();
    char dir[CGROUP_PATH_MAX];
    if (mc->kind == MEMCG_V2 || own_group(NULL, dir) == 0) {
        const char *d = mc->kind == MEMCG_V2 ? mc->dir : dir;
        m.src = CPU_V2;
        m.v2_quota = 1;
        hold(F_CPU, d, "cpu.stat");
        hold(F_QUOTA, d, "cpu.max");
        return;
    }
    m.src = CPU_PROC_STAT;
    if (own_group("cpuacct", dir) == 0) {
        m.src = CPU_V1;
        hold(F_CPU, dir, "cpuacct.usage");
    } else {
        hold(F_CPU, "/proc", "stat");
    }
    if (own_group("cpu", dir) == 0) { /* the root has no quota */
        hold(F_QUOTA, dir, "cpu.cfs_quota_us");
        hold(F_PERIOD, dir, "cpu.cfs_period_us");
    }
}

/* ---- the reads ---- */

/* The text of held file f, NUL-terminated: its length, or -1. */
static long held(int f, char *buf, size_t cap)
{
    if (m.fd[f] < 0) return -1;
    ssize_t n = pread(m.fd[f], buf, cap - 1, 0);
    if (n < 0) return -1;
    buf[n] = '\0';
    return (long)n;
}

/* A held file of one decimal number (memory.current, cpuacct.usage). */
static int held_num(int f, unsigned long long *out)
{
    char text[64];
    const char *p = text;
    return held(f, text, sizeof text) > 0 && digits(&p, out) == 0 ? 0 : -1;
}

static int cpu_sample(unsigned long long *busy, unsigned long long *total)
{
    char text[4096];
    long n = held(F_CPU, text, sizeof text);
    *total = 0;
    if (n < 0) return -1;
    if (m.src == CPU_V2) {
        if (memcg_parse_key(text, (size_t)n, "usage_usec", busy) < 0) return -1;
        *busy *= 1000; /* ns, as v1's */
        return 0;
    }
    if (m.src == CPU_V1) return held_num(F_CPU, busy);
    return ops_metrics_proc_stat(text, (size_t)n, busy, total);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The CPUs the agent may run on, and the quota in CPUs (0: none). */
static unsigned cpus(double *quota)
{
    cpu_set_t set;
    unsigned long long q = 0, period = 0;
    char text[64];
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    *quota = 0;
    if (n <= 0) n = 1;
    if (m.v2_quota) {
        if (held(F_QUOTA, text, sizeof text) > 0 && ops_metrics_cpu_max(text, &q, &period) == 0 && q)
            *quota = (double)q / (double)period;
    } else if (held_num(F_PERIOD, &period) == 0 && period && held_num(F_QUOTA, &q) == 0) {
        *quota = (double)q / (double)period; /* -1 (none) is not digits */
    }
    if (*quota > n) *quota = n;
    return *quota > 0 ? (unsigned)ceil(*quota) : (unsigned)n;
}

static double cpu_pct(unsigned count, double quota)
{
    unsigned long long busy, total;
    double now = mono();
    if (now - m.wall < MIN_INTERVAL || cpu_sample(&busy, &total) < 0) return m.pct;
    double dbusy = busy > m.busy ? (double)(busy - m.busy) : 0;
    if (m.src == CPU_PROC_STAT) m.pct = ops_metrics_pct(dbusy, total > m.total ? (double)(total - m.total) : 0);
    else m.pct = ops_metrics_pct(dbusy / 1e9, (now - m.wall) * (quota > 0 ? quota : count));
    m.wall = now;
    m.busy = busy;
    m.total = total;
    return m.pct;
}

/* The group's usage, limit (0: none), inactive page cache and page cache. */
static int memory_cg(unsigned long long *usage, unsigned long long *limit, unsigned long long *inactive,
                     unsigned long long *cache)
{
    char text[MEMCG_FILE_MAX];
    unsigned long long h;
    int v2 = m.mem == MEMCG_V2;
    *limit = *inactive = *cache = 0;
    if (m.mem == MEMCG_NONE || held_num(F_USAGE, usage) < 0) return -1;
    if (held_num(F_LIMIT, limit) < 0) *limit = 0; /* "max" */
    long n = held(F_STAT, text, sizeof text);
    if (n < 0) return 0;
    if (!v2 && memcg_parse_key(text, (size_t)n, "hierarchical_memory_limit", &h) == 0 && h < *limit) *limit = h;
    memcg_parse_key(text, (size_t)n, v2 ? "inactive_file" : "total_inactive_file", inactive);
    memcg_parse_key(text, (size_t)n, v2 ? "file" : "total_cache", cache);
    return 0;
}

static void memory(struct ops_metrics *x)
{
    unsigned long long usage, limit, inactive, cache, avail = 0;
    char text[8192];
    if (memory_cg(&usage, &limit, &inactive, &cache) == 0) {
        x->mem_total = limit && (limit < m.host_total || !m.host_total) ? limit : m.host_total;
        x->mem_used = usage > inactive ? usage - inactive : 0;
        x->mem_cache = cache;
        return;
    }
    long n = held(F_MEMINFO, text, sizeof text);
    x->mem_total = m.host_total;
    x->mem_used = x->mem_cache = 0;
    if (n < 0) return;
    if (ops_metrics_meminfo(text, (size_t)n, "MemAvailable", &avail) == 0 && avail < m.host_total)
        x->mem_used = m.host_total - avail;
    ops_metrics_meminfo(text, (size_t)n, "Cached", &x->mem_cache);
}

void ops_metrics_start(const char *disk)
{
    char text[8192];
    unsigned long long total;
    ops_metrics_stop();
    m.disk = disk && *disk ? disk : "/";
    find_memory();
    find_cpu();
    long n = held(F_MEMINFO, text, sizeof text);
    if (n > 0 && ops_metrics_meminfo(text, (size_t)n, "MemTotal", &total) == 0) m.host_total = total;
    m.wall = mono();
    if (cpu_sample(&m.busy, &m.total) < 0) m.busy = m.total = 0;
    log_debug("api: metrics: memory cgroup %s, cpu from %s, disk %s",
              m.mem != MEMCG_NONE ? memcg_self()->dir : "none (/proc/meminfo)",
              m.src == CPU_V2 ? "cpu.stat" : m.src == CPU_V1 ? "cpuacct.usage" : "/proc/stat", m.disk);
}

void ops_metrics_stop(void)
{
    for (int i = 0; i < NFILES; i++)
        if (m.fd[i] >= 0) close(m.fd[i]);
    memset(&m, 0, sizeof m);
    for (int i = 0; i < NFILES; i++) m.fd[i] = -1;
}

unsigned long long ops_metrics_mem_total(void)
{
    struct ops_metrics x;
    memset(&x, 0, sizeof x);
    memory(&x);
    return x.mem_total;
}

int ops_metrics_now(struct ops_metrics *x)
{
    struct statvfs sv;
    double quota;
    memset(x, 0, sizeof *x);
    if (!m.disk || statvfs(m.disk, &sv) < 0) return -1;
    x->ts = (long long)time(NULL);
    x->cpu_count = cpus(&quota);
    x->cpu_used_pct = cpu_pct(x->cpu_count, quota);
    memory(x);
    x->disk_total = (unsigned long long)sv.f_blocks * sv.f_frsize;
    x->disk_used = (unsigned long long)(sv.f_blocks - (sv.f_bavail < sv.f_blocks ? sv.f_bavail : sv.f_blocks)) *
                   sv.f_frsize;
    return 0;
}

void ops_metrics_respond(struct conn *c)
{
    struct ops_metrics x;
    struct buf b;
    char why[ERR_LEN];
    if (ops_metrics_now(&x) < 0) {
        err_set(why, "cannot read the filesystem of %s: %s", m.disk ? m.disk : "/", strerror(errno));
        rpc_error_response(c, RPC_INTERNAL, why, NULL);
        return;
    }
    buf_init(&b, JSON_MAX);
    if (ops_metrics_json(&b, &x) < 0) rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
    else conn_respond(c, 200, CONNECT_CT_UNARY, "Cache-Control: no-store\r\n", b.data, b.len);
    buf_free(&b);
}
