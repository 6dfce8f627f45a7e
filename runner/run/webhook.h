/*
 * runner/run/webhook.h - POSTing the job outcome to SANDBOX_JOB_WEBHOOK.
 *
 * Best effort and strictly bounded: the POST runs in a helper process, a
 * fork of the agent (non-dumpable, never execs: the body holds the nonce),
 * that speaks HTTP/1.1 itself, over TLS (runner/run/tls.h) for https://, and
 * is killed when the budget runs out, so neither a slow DNS lookup nor a
 * server that accepts and never answers can delay the agent's exit by more
 * than the budget. Failures are logged and otherwise ignored.
 */
#ifndef SA_RUNNER_RUN_WEBHOOK_H
#define SA_RUNNER_RUN_WEBHOOK_H

#include <ev.h>
#include <stddef.h>

struct http_url {
    int tls;        /* https:// */
    char host[256];
    char port[8];
    char path[2048];
    char auth[256]; /* "user:password" from the URL, or "" */
};

/* Parse an http:// or https:// URL. Returns 0, or -1 with a reason in err. */
int webhook_parse_url(const char *url, struct http_url *u, char *err);
/* The status of a response that starts "HTTP/d.d NNN", or -1. */
int webhook_status_code(const char *resp);

/* POST body[0..n) to url within budget seconds; for https://, the server's
 * chain is checked against the PEM bundle ca_file (NULL or "": the
 * system's, DEFAULT_CA_FILE). */
void webhook_post(struct ev_loop *loop, const char *url, const char *ca_file, const char *body, size_t n,
                  double budget);

#endif
