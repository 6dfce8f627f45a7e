/*
 * composereq.h - the body of POST /files/compose (README "filesystem.Filesystem
 * and /files": compose), envd.yaml's ComposeRequest:
 * {"source_paths": [string], "destination": string, "username"?: string}.
 *
 * Pure: bytes in, an owned request out, so the unit test and the fuzzer
 * (tests/fuzz/fuzz_composereq.c) drive it with any input. Decoded as envd's
 * Go decoder reads it: member names matched without case, the last of a
 * repeated one used, unknown members ignored, null as absent (a null path
 * in the list is ""); stricter in one way: the body must be exactly one
 * JSON value (agent/core/jsoncheck.h). Paths are bytes: a \udcXX escape is
 * the byte XX (agent/core/jsonbytes.h); \u0000 is refused.
 */
#ifndef SA_API_REST_COMPOSEREQ_H
#define SA_API_REST_COMPOSEREQ_H

#include <stddef.h>

/* Sources in one request (the body itself is at most REST_COMPOSE_BODY_MAX). */
#define REST_COMPOSE_SOURCES_MAX 65536
#define REST_COMPOSE_BODY_MAX (2u * 1024u * 1024u)

struct rest_composereq {
    char **sources;  /* n of them */
    size_t n;
    char *destination;
    char *username;  /* NULL: absent (the default user) */
};

/* Decode body[0..len) into r (rest_composereq_free it whatever the result).
 * Returns 0 (at least one source and a destination), or -1 with *why a
 * fixed text. */
int rest_composereq_decode(const char *body, size_t len, struct rest_composereq *r, const char **why);
void rest_composereq_free(struct rest_composereq *r);

#endif
