/*
 * memcg.h - the memory cgroup the agent runs in (README "sandbox-agent
 * serve": GET /metrics, and why a process died): found once from
 * /proc/self/cgroup and /proc/self/mountinfo, then its small pseudo-files
 * read with bounded reads into the caller's buffer, no allocation.
 *
 * Which group: cgroup v2 where the agent's own v2 group or an ancestor of
 * it below the mount point has memory.current (the nearest one: in a
 * container, the container's group), else the v1 memory hierarchy's group
 * of the agent (not its root: the root's figures are the host's), else
 * none (a microVM, or the host's root group): the callers then use the
 * host's files (/proc/meminfo, /proc/vmstat). The processes the agent
 * starts inherit its group (serve's own per-process groups are v2
 * groups below it, or v1 freezer or pids groups: no memory controller).
 *
 * The key parser is pure, unit-tested in tests/unit/test_memcg.c.
 */
#ifndef SA_CORE_MEMCG_H
#define SA_CORE_MEMCG_H

#include "agent/core/cgroup.h"

#include <stddef.h>

enum memcg_kind { MEMCG_NONE = 0, MEMCG_V2, MEMCG_V1 };

struct memcg {
    enum memcg_kind kind;
    char dir[CGROUP_PATH_MAX]; /* "" for MEMCG_NONE */
    char mnt[CGROUP_PATH_MAX]; /* the hierarchy's mount point */
};

/* The agent's memory cgroup, found on the first call and kept. */
const struct memcg *memcg_self(void);

/* Read the pseudo-file dir/name (dir NULL: name is a whole path) into buf
 * with one read of at most cap - 1 bytes (a pseudo-file gives all it has
 * that fits), NUL-terminated. Returns the length, or -1. */
long memcg_read(const char *dir, const char *name, char *buf, size_t cap);

/* The value of the line "key N" (a flat keyed file: memory.stat,
 * memory.events, cpu.stat, /proc/vmstat) in text[0..len). Returns 0, or
 * -1 when no line has that key or its value is not a decimal number. */
int memcg_parse_key(const char *text, size_t len, const char *key, unsigned long long *out);

/* The value of key in the file dir/name (read into a stack buffer of
 * MEMCG_FILE_MAX bytes). Returns 0, or -1. */
int memcg_file_key(const char *dir, const char *name, const char *key, unsigned long long *out);
#define MEMCG_FILE_MAX 16384

#endif
