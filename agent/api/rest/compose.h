/*
 * compose.h - the REST route POST /files/compose (README
 * "filesystem.Filesystem and /files": compose): several files of the
 * request's user composed, in order, into one, in a helper process as
 * that user, atomically as an upload is written (files_compose), the
 * sources removed after; the answer is the destination's entry, as envd
 * answers: {"path", "name", "type": "file"}.
 */
#ifndef SA_API_REST_COMPOSE_H
#define SA_API_REST_COMPOSE_H

#include "agent/api/http/conn.h"

/* The head: POST only (405 otherwise); the body is kept, at most
 * REST_COMPOSE_BODY_MAX (413 past it). */
void rest_compose_on_head(struct conn *c);
/* The body is in: decode it, start the helper. */
void rest_compose_on_request(struct conn *c);

#endif
