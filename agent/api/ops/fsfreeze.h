/*
 * fsfreeze.h - POST /fsfreeze and POST /fsthaw (README "Orchestrator
 * routes": pauses): FIFREEZE and FITHAW of the filesystem that holds
 * SANDBOX_AGENT_DISK_PATH (default /), each in a helper process (a freeze
 * writes back every dirty page first: seconds the loop never waits), under
 * the freeze family's lock (ops/freeze.h: 503 while another is in flight).
 * Both idempotent: a freeze of a frozen filesystem (EBUSY) and a thaw of
 * one not frozen (EINVAL) are 204.
 *
 * While the filesystem is frozen the loop writes nothing to it: its
 * diagnostics are dropped (and counted, logged at the thaw) when stderr is
 * a file on it; every write the API makes to files is a helper's (uploads,
 * MakeDir, Move, Remove, compose), which waits in the kernel until the
 * thaw while its request waits with it, the upload's body unread.
 */
#ifndef SA_API_OPS_FSFREEZE_H
#define SA_API_OPS_FSFREEZE_H

#include "agent/api/http/conn.h"

/* disk: the path whose filesystem is frozen (NULL: "/"); kept as given. */
void ops_fsfreeze_start(const char *disk);
/* Thaw the filesystem if the agent froze it (api_free). */
void ops_fsfreeze_stop(void);
/* freeze 1: /fsfreeze; 0: /fsthaw. */
void ops_fsfreeze_respond(struct conn *c, int freeze);

#endif
