/*
 * api.h - E2B's envd API as a service a mode runs on its loop (README
 * "sandbox-agent serve"): `serve` runs it alone, `run` and `session` beside
 * their job when SANDBOX_AGENT_LISTEN is set. One loop, one reaper: the
 * mode owns both (reaper_init, pid1_init) and hands the loop over.
 *
 * Owns the configuration read from the environment (listen address, token
 * rule and whether to await the token, connection bound, HTTP and
 * first-head timeouts, retention, default user, grace, the disk /metrics
 * reports, the memory budget: core/budget.h, and the port forwarder's:
 * agent/forward),
 * the listening socket, the process table, the server and the stop:
 * stop accepting, SIGTERM every started process group (SIGKILL after the
 * grace), and once every process has ended, end every open stream with its
 * end event and close every connection.
 *
 * One API per process: there is one loop, one reaper and one process table
 * per PID 1, so the state the handlers share lives in the files that own
 * it, not in struct api - the table served and the default user
 * (process/process.c, asuser/asuser.c, set here by api_start and cleared by
 * api_free), the calls open (connect/rpc.c), the polling watchers and the
 * live watches (filesystem/watchers.c, watch.c), the helpers running
 * (asuser/job.c), the token and POST /init's defaults (ops/token.c,
 * asuser/defaults.c), the metrics' sources (ops/metrics.c). struct api
 * holds what is this instance's: the configuration, the server, the stop.
 */
#ifndef SA_API_API_H
#define SA_API_API_H

#include "agent/api/http/listen.h"
#include "agent/api/routes.h"
#include "agent/api/http/server.h"
#include "agent/forward/forward.h"
#include "agent/proc/proc.h"

#include <ev.h>

struct api_config {
    const char *listen;           /* the address as given (or the default) */
    struct listen_addr addr;
    unsigned max_conns;
    double timeout;               /* SANDBOX_AGENT_HTTP_TIMEOUT_SECONDS */
    double first_head;            /* SANDBOX_AGENT_FIRST_HEAD_SECONDS */
    const char *user;             /* SANDBOX_AGENT_USER, or NULL: the agent's */
    int await_token;              /* SANDBOX_AGENT_AWAIT_TOKEN=1: POST /init sets the token */
    const char *disk;             /* SANDBOX_AGENT_DISK_PATH, or NULL: "/" (GET /metrics) */
    struct proc_table_opts procs; /* retention, grace */
    size_t budget;                /* SANDBOX_AGENT_MEMORY_BUDGET (0: none) */
    int budget_default;           /* ... unset: a quarter of the memory, found at the start */
    int keep_default;             /* SANDBOX_AGENT_KEEP_FINISHED_BYTES unset */
    struct forward_config fwd;    /* the port forwarder (README "Port forwarding") */
};

typedef void (*api_done_fn)(void *ctx);

struct api {
    struct ev_loop *loop;
    struct api_config cfg;
    struct server srv;
    struct proc_table *t;
    struct forward *fwd;          /* NULL when not forwarding */
    int started, stopping, done;
    ev_timer step_w;              /* the stop's next step, from the loop */
    ev_timer bound_w;             /* the processes' end waited for at most this long */
    api_done_fn on_done;
    void *done_ctx;
};

/* 1 when SANDBOX_AGENT_LISTEN is set (run and session serve only then). */
int api_wanted(void);

/* Read the configuration; token (NULL or "": none) decides the default
 * address and whether a public one is allowed. Returns 0, or -1 with a
 * message in err naming the variable. */
int api_config_read(struct api_config *cfg, const char *token, char *err);

/* Listen and serve on loop. The token is copied (ops/token.h): the caller
 * wipes its own copy once this returns (nonce_wipe), so that a token /init
 * replaces leaves no copy behind. Returns 0, or -1 with a message in err. */
int api_start(struct api *a, struct ev_loop *loop, const struct api_config *cfg,
              const char *token, char *err);

/* Begin the stop; done(ctx) (may be NULL) runs once it is complete (from
 * the loop, at most grace + a few seconds later). A later call only sets
 * done (when not NULL), which runs at once if the stop is complete already. */
void api_stop(struct api *a, api_done_fn done, void *ctx);

/* Free what is left (after done; the Unix socket file is removed). */
void api_free(struct api *a);

#endif
