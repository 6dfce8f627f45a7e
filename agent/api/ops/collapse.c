/*
 * collapse.c - POST /collapse: the regions, the advice, the counts (see
 * ops/collapse.h).
 */
#include "agent/api/ops/collapse.h"
#include "agent/api/connect/rpc.h"
#include "agent/core/io.h"
#include "agent/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
/* The agent's smaps: a few dozen mappings of ~20 lines each. */
#define SMAPS_MAX (4u << 20)
#define REGIONS_MAX 1024

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* A mapping's header "START-END PERMS OFFSET DEV INODE [PATH]": its range,
 * and 1 when private read-write and of no file. 0 when not a header. */
static int header(const char *s, const char *e, uintptr_t *lo, uintptr_t *hi, int *anon)
{
    char *p;
    unsigned long long a = strtoull(s, &p, 16), b;
    if (p == s || p >= e || *p != '-') return 0;
    const char *q = p + 1;
    b = strtoull(q, &p, 16);
    if (p == q || p + 5 > e || *p != ' ') return 0;
    const char *perms = p + 1;
    /* after the perms: the offset, the device, the inode, the path */
    const char *f = perms;
    int field = 1;
    while (f < e && field < 4) {
        while (f < e && !is_space(*f)) f++;
        while (f < e && is_space(*f)) f++;
        field++;
    }
    const char *path = f;
    while (path < e && !is_space(*path)) path++;
    while (path < e && is_space(*path)) path++;
    *lo = (uintptr_t)a;
    *hi = (uintptr_t)b;
    *anon = !memcmp(perms, "rw-p", 4) && f < e && *f == '0' && (f + 1 == e || is_space(f[1])) &&
            (path == e || (e - path >= 6 && !memcmp(path, "[heap]", 6)));
    return 1;
}

int ops_collapse_parse(const char *text, size_t len, struct ops_collapse_region *r, int max)
{
    const char *p = text, *end = text + len;
    int n = 0, in = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        uintptr_t lo, hi;
        int anon;
        if (header(p, e, &lo, &hi, &anon)) {
            in = anon && n < max;
            if (in) r[n++] = (struct ops_collapse_region){lo, hi, 0};
        } else if (in && e - p > 14 && !memcmp(p, "AnonHugePages:", 14)) {
            r[n - 1].huge = strtoull(p + 14, NULL, 10) * 1024;
        }
        p = nl ? nl + 1 : end;
    }
    return n;
}

size_t ops_collapse_chunks(uintptr_t start, uintptr_t end)
{
    uintptr_t lo = (start + COLLAPSE_CHUNK - 1) & ~(uintptr_t)(COLLAPSE_CHUNK - 1);
    uintptr_t hi = end & ~(uintptr_t)(COLLAPSE_CHUNK - 1);
    return hi > lo ? (hi - lo) / COLLAPSE_CHUNK : 0;
}

int ops_collapse_json(struct buf *b, const struct ops_collapse_result *x)
{
    return buf_printf(b,
                      "{\"regions\": %d, \"chunks\": %d, \"collapsed\": %d, \"alreadyHuge\": %d, "
                      "\"skipped\": %d, \"elapsedMs\": %lld}",
                      x->regions, x->chunks, x->collapsed, x->already_huge, x->skipped, x->elapsed_ms);
}

static int read_smaps(struct ops_collapse_region *r, int max)
{
    struct buf t;
    char chunk[8192];
    int n = -1, fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    buf_init(&t, SMAPS_MAX);
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0 || buf_append(&t, chunk, (size_t)k) < 0) break;
    }
    close(fd);
    if (t.data) n = ops_collapse_parse(t.data, t.len, r, max);
    buf_free(&t);
    return n;
}

/* AnonHugePages of the regions in after that overlap [lo, hi). */
static unsigned long long huge_in(const struct ops_collapse_region *r, int n, uintptr_t lo, uintptr_t hi)
{
    unsigned long long h = 0;
    for (int i = 0; i < n; i++)
        if (r[i].start < hi && r[i].end > lo) h += r[i].huge;
    return h;
}

void ops_collapse_respond(struct conn *c)
{
    static struct ops_collapse_region before[REGIONS_MAX], after[REGIONS_MAX];
    struct ops_collapse_result x = {0};
    struct buf b;
    double t0 = io_now();
    int n = read_smaps(before, REGIONS_MAX);
    if (n < 0) {
        rpc_error_response(c, RPC_INTERNAL, "cannot read /proc/self/smaps", NULL);
        return;
    }
    int *accepted = calloc((size_t)n + 1, sizeof *accepted);
    if (!accepted) {
        rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
        return;
    }
    x.regions = n;
    for (int i = 0; i < n; i++) {
        uintptr_t lo = (before[i].start + COLLAPSE_CHUNK - 1) & ~(uintptr_t)(COLLAPSE_CHUNK - 1);
        for (size_t k = 0; k < ops_collapse_chunks(before[i].start, before[i].end); k++, x.chunks++) {
            if (madvise((void *)(lo + k * COLLAPSE_CHUNK), COLLAPSE_CHUNK, MADV_COLLAPSE) == 0) accepted[i]++;
            else x.skipped++;
        }
    }
    int m = read_smaps(after, REGIONS_MAX);
    for (int i = 0; i < n; i++) {
        if (!accepted[i]) continue;
        unsigned long long now = m > 0 ? huge_in(after, m, before[i].start, before[i].end) : before[i].huge;
        long long grew = now > before[i].huge ? (long long)((now - before[i].huge) / COLLAPSE_CHUNK) : 0;
        int coll = grew < accepted[i] ? (int)grew : accepted[i];
        x.collapsed += coll;
        x.already_huge += accepted[i] - coll;
    }
    free(accepted);
    x.elapsed_ms = (long long)((io_now() - t0) * 1000);
    log_info("api: /collapse: %d regions, %d chunks: %d collapsed, %d huge already, %d skipped", x.regions, x.chunks,
             x.collapsed, x.already_huge, x.skipped);
    buf_init(&b, 512);
    if (ops_collapse_json(&b, &x) < 0) rpc_error_response(c, RPC_INTERNAL, "out of memory", NULL);
    else conn_respond(c, 200, CONNECT_CT_UNARY, "Cache-Control: no-store\r\n", b.data, b.len);
    buf_free(&b);
}
