/*
 * budget.h - the one memory budget of the whole process (README "sandbox-agent
 * serve": the memory budget).
 *
 * Each bound of the agent is stated where its buffer is made (buf.h), but
 * their sum is not: 256 connections each holding a 16 MiB body and a 16 MiB
 * reply would be 8 GiB. Every buffer whose size a client or a workload
 * controls and that can grow draws its memory from this budget as it grows
 * (a struct buf made with buf_init_budget, every struct ring, a
 * connection's output queue) and gives it back as it shrinks or is freed;
 * one that cannot get it fails the way its owner says (429
 * resource_exhausted to a request, back-pressure to a stream, less retention
 * to a ring nobody reads).
 *
 * One process, one loop: a plain counter, no locks. Until budget_set the
 * limit is 0, which means none: the modes that do not serve (exec, fs, ...)
 * only count.
 */
#ifndef SA_CORE_BUDGET_H
#define SA_CORE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* The bounds of the default (budget_default_for) and of the variable. */
#define BUDGET_MIN (64ull << 20)
#define BUDGET_MAX_DEFAULT (1ull << 30)
#define BUDGET_UNKNOWN_DEFAULT (256ull << 20)
#define BUDGET_MAX ((uint64_t)1 << 40)
#define BUDGET_LEAST ((uint64_t)1 << 20)

/* The limit in bytes (0: none). What is drawn already stays drawn. */
void budget_set(size_t limit);
size_t budget_limit(void);
size_t budget_used(void);
/* The most that was ever drawn at once (since the start, or budget_set). */
size_t budget_peak(void);

/* Draw n bytes: 0, or -1 (nothing drawn) when they would pass the limit. */
int budget_take(size_t n);
/* Draw n bytes whatever the limit says: for memory a caller must have and
 * whose size is bounded elsewhere (a stream's queue, a marker that says
 * events were lost, a ring being made smaller). May pass the limit. */
void budget_force(size_t n);
/* Give back n bytes drawn before. */
void budget_give(size_t n);
/* 1 when the limit is reached (takes of any size fail). */
int budget_spent(void);
/* What a take may still draw (SIZE_MAX without a limit). */
size_t budget_room(void);

/* The default for a sandbox of `total` bytes (what it has: GET /metrics'
 * mem_total, its memory cgroup's limit or its RAM; 0: not known): a quarter
 * of it, within BUDGET_MIN .. BUDGET_MAX_DEFAULT; BUDGET_UNKNOWN_DEFAULT
 * when not known. */
size_t budget_default_for(uint64_t total);

#endif
