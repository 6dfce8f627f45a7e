/*
 * initreq.h - decoding the body of POST /init (README "sandbox-agent
 * serve": orchestrator routes), envd's
 * {"envVars", "accessToken", "defaultUser", "defaultWorkdir", "timestamp",
 *  "volumeMounts", "hyperloopIP", "lifecycleID", "caBundle"}.
 *
 * Pure: bytes in, an owned request out, no I/O and no state, so the unit
 * tests (tests/unit/test_ops_initreq.c) and the fuzzer
 * (tests/fuzz/fuzz_ops_initreq.c) drive it with any input. Strict JSON
 * (agent/core/jsoncheck.h), its fields read by connect/pbjson.h (each by
 * its one name: envd's body is no protobuf message) and every one bounded;
 * unknown fields are ignored, a field that is null is absent, and an empty
 * body (or null) is a request that changes nothing, as envd takes it. The last four are
 * accepted whatever they hold and only noted (ops_initreq.unsupported):
 * the agent does not mount volumes, route to a hyperloop or install CA
 * bundles.
 */
#ifndef SA_API_OPS_INITREQ_H
#define SA_API_OPS_INITREQ_H

#include "agent/core/spawn.h"

#include <stddef.h>
#include <time.h>

/* Bounds (the body itself is a unary body, at most SERVE_BODY_MAX). */
#define INITREQ_ENV_MAX 1024            /* variables in envVars */
#define INITREQ_NAME_MAX 1024           /* bytes of a variable's name */
#define INITREQ_VAR_MAX (SPAWN_ARG_STRLEN - 1) /* "NAME=VALUE": the kernel's MAX_ARG_STRLEN less the NUL */
#define INITREQ_ENV_BYTES_MAX (1u << 20) /* all "NAME=VALUE" of one request */
#define INITREQ_TOKEN_MAX 1024          /* accessToken: visible ASCII, no blank */
#define INITREQ_USER_MAX 255            /* defaultUser */
#define INITREQ_WORKDIR_MAX 4095        /* defaultWorkdir: an absolute path */
#define INITREQ_TIME_MAX 64             /* timestamp: RFC 3339 */

/* Fields accepted and not acted on. */
enum {
    INITREQ_VOLUME_MOUNTS = 1u << 0,
    INITREQ_HYPERLOOP_IP = 1u << 1,
    INITREQ_LIFECYCLE_ID = 1u << 2,
    INITREQ_CA_BUNDLE = 1u << 3,
};

struct ops_initreq {
    char **env;              /* "NAME=VALUE" each, NULL-terminated; NULL: no envVars */
    size_t nenv;
    char *token;             /* NULL: none ("" is none too) */
    size_t token_len;
    char *user;              /* NULL: none ("" is none) */
    char *workdir;           /* NULL: none ("" is none) */
    int has_time;
    struct timespec time;    /* timestamp, UTC */
    unsigned unsupported;    /* INITREQ_* of the fields present */
};

/* Decode body[0..n) into r (ops_initreq_free it whatever the result).
 * Returns 0, or -1 with the reason in err (ERR_LEN bytes), naming the
 * field. */
int ops_initreq_decode(const char *body, size_t n, struct ops_initreq *r, char *err);
void ops_initreq_free(struct ops_initreq *r);

/* RFC 3339 date-time ("2024-05-01T12:00:00.5Z", "...+02:00"), years 1970
 * to 9999, at most nine digits of fraction, into UTC. Returns 0, or -1. */
int ops_initreq_time(const char *s, size_t n, struct timespec *ts);

/* "volumeMounts" for INITREQ_VOLUME_MOUNTS, and so on. */
const char *ops_initreq_field_name(unsigned bit);

#endif
