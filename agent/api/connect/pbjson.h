/*
 * pbjson.h - the one reader of a JSON request message's fields, as
 * protobuf's JSON mapping has them (README "sandbox-agent serve"; the
 * process, filesystem and /init decoders use it): a field goes by its JSON
 * name (lowerCamelCase) and, in a protobuf message, by its proto name too
 * (snake_case: `includeEntry` or `include_entry`; the JSON name first);
 * null is the same as absent; unknown fields are ignored; a field of the
 * wrong type, or past its bound, is an error that names it
 * ("'cols' must be a whole number from 0 to 65535").
 *
 * Each reader returns 1 (found: *out set), 0 (absent or null: *out left
 * as it was, the caller's default) or -1 (the reason in the reader's err).
 * Pure: the strings and objects returned point into the cJSON tree.
 */
#ifndef SA_API_CONNECT_PBJSON_H
#define SA_API_CONNECT_PBJSON_H

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* No bound but the body's (a string or an array of a protobuf message). */
#define PBJSON_UNBOUNDED SIZE_MAX

struct pbjson {
    const cJSON *obj; /* the message (NULL, or not an object: every field absent) */
    int proto_names;  /* a protobuf message: a field may go by its proto name too */
    char *err;        /* ERR_LEN bytes: the reason of a -1, naming the field */
};

/* The field name of m, NULL when absent or null. */
const cJSON *pbjson_field(const struct pbjson *m, const char *name);

/* An object: *out reads it (out->obj NULL when absent), as m reads m->obj. */
int pbjson_object(const struct pbjson *m, const char *name, struct pbjson *out);
/* An array of at most max elements. */
int pbjson_array(const struct pbjson *m, const char *name, size_t max, const cJSON **out);
/* A map of strings (an object each of whose values is a string), at most
 * max entries. */
int pbjson_map(const struct pbjson *m, const char *name, size_t max, const cJSON **out);
/* A string of at most max bytes. */
int pbjson_string(const struct pbjson *m, const char *name, size_t max, const char **out);
/* true or false. */
int pbjson_bool(const struct pbjson *m, const char *name, int *out);
/* A uint32 up to max: a whole number, or its decimal digits as a string. */
int pbjson_uint(const struct pbjson *m, const char *name, uint32_t max, uint32_t *out);

#endif
