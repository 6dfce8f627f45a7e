/*
 * webhook.h - POSTing the job outcome to SANDBOX_JOB_WEBHOOK.
 *
 * Best effort and strictly bounded: the POST runs in a child process (a
 * forked helper for http://, curl for https://) that is killed when the
 * budget runs out, so neither a slow DNS lookup nor a server that accepts
 * and never answers can delay the agent's exit by more than the budget.
 * Failures are logged and otherwise ignored.
 */
#ifndef SA_RUNNER_RUN_WEBHOOK_H
#define SA_RUNNER_RUN_WEBHOOK_H

#include <ev.h>
#include <stddef.h>

struct http_url {
    char host[256];
    char port[8];
    char path[2048];
    char auth[256]; /* "user:password" from the URL, or "" */
};

/* Parse an http:// URL. Returns 0, or -1 with a reason in err. */
int webhook_parse_http_url(const char *url, struct http_url *u, char *err);

void webhook_post(struct ev_loop *loop, const char *url, const char *body, size_t n, double budget);

#endif
