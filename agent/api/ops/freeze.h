/*
 * freeze.h - POST /freeze and POST /unfreeze (README "Orchestrator routes":
 * pauses), and the freeze lock the freeze family shares.
 *
 *   /freeze    ?mode=legacy|hierarchy (absent: legacy), ?maxCgroups=N (the
 *              hierarchy sweep's bound; <= 0 or absent: 512; at most 8192),
 *              ?maxWaitMs=N: present and > 0, wait (polling every
 *              FREEZE_POLL_MS, never blocking the loop) until what was
 *              frozen reads frozen or the budget ends, and answer 200 with
 *              FreezeResult; else 204 at once. agent/core/freeze.h sweeps.
 *   /unfreeze  thaws what the agent froze, and nothing frozen before it; 204.
 *   /init      thaws as /unfreeze does (ops_freeze_resume), as envd's
 *              resume path does.
 * A call of the family while another is in flight (a /freeze waiting, an
 * /fsfreeze whose helper runs) is 503 `unavailable`.
 */
#ifndef SA_API_OPS_FREEZE_H
#define SA_API_OPS_FREEZE_H

#include "agent/api/http/conn.h"
#include "agent/core/cgroup.h"
#include "agent/core/freeze.h"

#define FREEZE_POLL_MS 2

/* The agent's groups (the legacy sweep's), kept by pointer; NULL: none. */
void ops_freeze_start(const struct cgroup_base *base);
/* Thaw whatever is still frozen and end a wait (api_free). */
void ops_freeze_stop(void);

void ops_freeze_respond(struct conn *c);
void ops_freeze_thaw_respond(struct conn *c);
/* POST /init: thaw what /freeze froze. */
void ops_freeze_resume(void);

/* The family's lock: 1 taken, 0 held by another call (answer 503). */
int ops_freeze_lock(void);
void ops_freeze_unlock(void);

/* FreezeResult's JSON. Pure. */
int ops_freeze_json(struct buf *b, enum freeze_mode mode, const struct freeze_stats *st, const char *method,
                    long long sweep_ms, long long wait_ms);
/* A query integer as envd's (int64): an optional '-' and 1 to 18 digits.
 * Returns 0, or -1. Pure. */
int ops_freeze_int(const char *s, long long *out);

#endif
