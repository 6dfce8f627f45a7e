/*
 * entry.c - SANDBOX_JOB_INNER_ENTRY decoding.
 *
 * The strict validator runs first so every refusal has a precise reason and a
 * byte offset; cJSON then does the actual decoding of the strings.
 */
#include "runner/run/entry.h"
#include "agent/core/err.h"
#include "agent/core/jsoncheck.h"
#include "agent/core/protocol.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void entry_free(char **argv) { free(argv); }

int entry_decode(const char *text, size_t n, char ***out, char *err)
{
    struct jsoncheck jc;
    *out = NULL;
    if (!text || n == 0) {
        err_set(err, "empty " ENV_INNER_ENTRY);
        return -1;
    }
    if (n > ENTRY_MAX_BYTES) {
        err_set(err, ENV_INNER_ENTRY " is %zu bytes, over the %u byte limit", n,
                 ENTRY_MAX_BYTES);
        return -1;
    }
    if (jsoncheck(text, n, &jc) < 0) {
        err_set(err, ENV_INNER_ENTRY " is not valid JSON: %s at byte %zu", jc.err,
                 jc.err_off);
        return -1;
    }
    if (jc.type != JSON_ARRAY) {
        err_set(err, ENV_INNER_ENTRY " must be a JSON array of strings, not %s",
                 jsoncheck_type_name(jc.type));
        return -1;
    }
    if (jc.has_nul) {
        err_set(err, ENV_INNER_ENTRY " holds a \\u0000 character, which no argument can carry");
        return -1;
    }
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root) {
        err_set(err, ENV_INNER_ENTRY " could not be decoded (out of memory?)");
        return -1;
    }
    int count = cJSON_GetArraySize(root);
    if (count == 0) {
        cJSON_Delete(root);
        err_set(err, "empty " ENV_INNER_ENTRY);
        return -1;
    }
    /* One block: the pointer array followed by the strings. */
    size_t bytes = ((size_t)count + 1) * sizeof(char *);
    int idx = 0;
    for (cJSON *it = root->child; it; it = it->next, idx++) {
        if (!cJSON_IsString(it)) {
            const char *what = cJSON_IsNumber(it) ? "a number"
                               : cJSON_IsBool(it) ? "a boolean"
                               : cJSON_IsNull(it) ? "null"
                               : cJSON_IsArray(it) ? "an array"
                                                   : "an object";
            err_set(err, ENV_INNER_ENTRY "[%d] is %s, not a string", idx, what);
            cJSON_Delete(root);
            return -1;
        }
        bytes += strlen(it->valuestring) + 1;
    }
    char **argv = malloc(bytes);
    if (!argv) {
        cJSON_Delete(root);
        err_set(err, ENV_INNER_ENTRY ": out of memory");
        return -1;
    }
    char *dst = (char *)(argv + count + 1);
    idx = 0;
    for (cJSON *it = root->child; it; it = it->next) {
        size_t l = strlen(it->valuestring) + 1;
        memcpy(dst, it->valuestring, l);
        argv[idx++] = dst;
        dst += l;
    }
    argv[idx] = NULL;
    cJSON_Delete(root);
    *out = argv;
    return 0;
}
