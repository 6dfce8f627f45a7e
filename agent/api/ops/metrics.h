/*
 * metrics.h - GET /metrics (README "sandbox-agent serve": orchestrator
 * routes): envd's Metrics object, the sandbox's own figures rather than the
 * host's.
 *
 *   memory  the memory cgroup the agent runs in (agent/core/memcg.h): v2
 *           memory.current, memory.max, memory.stat; v1
 *           memory.usage_in_bytes, memory.limit_in_bytes and memory.stat's
 *           hierarchical_memory_limit. mem_used is the usage less the
 *           inactive page cache (what the kernel cannot take back without
 *           writing: the working set, as kubelet counts it), mem_cache the
 *           page cache. The total is the limit, or /proc/meminfo's MemTotal
 *           when there is none or it is larger. No memory cgroup:
 *           /proc/meminfo (MemTotal - MemAvailable, Cached).
 *   cpu     cpu_count: the CPUs the agent may run on (sched_getaffinity),
 *           fewer when a quota is set (v2 cpu.max, v1 cpu.cfs_quota_us /
 *           cfs_period_us; rounded up). cpu_used_pct: the group's CPU time
 *           (v2 cpu.stat usage_usec, v1 cpuacct.usage) over the time since
 *           the previous call, as a share of the quota (or of cpu_count),
 *           or /proc/stat's busy share where the agent is in no group of
 *           its own; the first call measures from the API's start, a call
 *           within 0.1 s of the last one repeats its figure.
 *   disk    statvfs of / (SANDBOX_AGENT_DISK_PATH picks another path):
 *           disk_total f_blocks, disk_used f_blocks - f_bavail (as envd).
 *
 * Where to read is found once (ops_metrics_start), the files held open; a
 * call is a pread of each into a stack buffer, a statvfs and a
 * sched_getaffinity: no helper process, no allocation beyond the response. The parsers and the JSON writer are pure,
 * unit-tested in tests/unit/test_ops_metrics.c.
 */
#ifndef SA_API_OPS_METRICS_H
#define SA_API_OPS_METRICS_H

#include "agent/api/http/conn.h"
#include "agent/core/buf.h"

#include <stddef.h>

struct ops_metrics {
    long long ts;                  /* Unix seconds */
    unsigned cpu_count;
    double cpu_used_pct;           /* 0 .. 100, two decimals */
    unsigned long long mem_total, mem_used, mem_cache; /* bytes */
    unsigned long long disk_used, disk_total;          /* bytes */
};

/* {"ts", "cpu_count", "cpu_used_pct", "mem_total", "mem_used", "mem_cache",
 * "mem_total_mib", "mem_used_mib", "disk_used", "disk_total"}. */
int ops_metrics_json(struct buf *b, const struct ops_metrics *m);

/* v2's cpu.max ("max 100000", "150000 100000"): *quota 0 for "max".
 * Returns 0, or -1 when it is not that shape. */
int ops_metrics_cpu_max(const char *text, unsigned long long *quota, unsigned long long *period);
/* /proc/meminfo's "KEY:   N kB" line, in bytes. Returns 0, or -1. */
int ops_metrics_meminfo(const char *text, size_t len, const char *key, unsigned long long *bytes);
/* /proc/stat's "cpu " line: busy (all but idle and iowait) and total
 * ticks. Returns 0, or -1. */
int ops_metrics_proc_stat(const char *text, size_t len, unsigned long long *busy,
                          unsigned long long *total);
/* The CPU share of used ticks over total ticks, or of used seconds over
 * seconds * cpus, clipped to 0 .. 100 and rounded to two decimals. */
double ops_metrics_pct(double used, double avail);

/* Find the sources, open the pseudo-files read on every call (held,
 * close-on-exec) and take the first CPU sample (api_start). disk: the
 * path whose filesystem is reported (NULL: "/"); kept as given. */
void ops_metrics_start(const char *disk);
/* Close what start opened (api_free). */
void ops_metrics_stop(void);
/* Fill m now. Returns 0, or -1 when the disk cannot be read (errno). */
int ops_metrics_now(struct ops_metrics *m);
/* mem_total alone (after start): what the memory budget's default is a
 * quarter of (core/budget.h). 0 when not known. */
unsigned long long ops_metrics_mem_total(void);
/* GET /metrics: 200 and the JSON, or 500. */
void ops_metrics_respond(struct conn *c);

#endif
