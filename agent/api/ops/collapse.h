/*
 * collapse.h - POST /collapse (README "Orchestrator routes": pauses): the
 * agent's own anonymous read-write memory collapsed into 2 MiB transparent
 * huge pages (MADV_COLLAPSE, Linux 6.1) before a pause, so that a resumed
 * agent touches fewer distinct pages. Best-effort: 200 with CollapseResult
 * whatever the kernel accepts; 500 only when /proc/self/smaps cannot be
 * read. Synchronous: the agent's heap is a few MiB.
 *
 * The regions come from /proc/self/smaps (private, read-write, no file);
 * each 2 MiB-aligned chunk wholly inside one is advised. A chunk the kernel
 * accepts is collapsed when the region's AnonHugePages grew by it, else it
 * was huge already; a chunk refused is skipped. The parser is pure,
 * unit-tested in tests/unit/test_ops_collapse.c.
 */
#ifndef SA_API_OPS_COLLAPSE_H
#define SA_API_OPS_COLLAPSE_H

#include "agent/api/http/conn.h"
#include "agent/core/buf.h"

#include <stddef.h>
#include <stdint.h>

#define COLLAPSE_CHUNK (2u << 20)

struct ops_collapse_region {
    uintptr_t start, end;
    unsigned long long huge; /* AnonHugePages, bytes */
};

struct ops_collapse_result {
    int regions, chunks, collapsed, already_huge, skipped;
    long long elapsed_ms;
};

/* The anonymous private read-write regions of smaps text, at most max into
 * r. Returns how many. */
int ops_collapse_parse(const char *text, size_t len, struct ops_collapse_region *r, int max);
/* The 2 MiB-aligned chunks wholly inside [start, end). */
size_t ops_collapse_chunks(uintptr_t start, uintptr_t end);
/* CollapseResult's JSON. */
int ops_collapse_json(struct buf *b, const struct ops_collapse_result *x);

void ops_collapse_respond(struct conn *c);

#endif
