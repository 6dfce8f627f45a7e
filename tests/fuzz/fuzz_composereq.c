/*
 * fuzz_composereq.c - libFuzzer target: the POST /files/compose body decoder
 * (agent/api/rest/composereq.c) on any input. What it accepts holds
 * together: at least one and at most REST_COMPOSE_SOURCES_MAX sources, each
 * a string, a destination that is not empty; a refusal always says why;
 * every request frees cleanly whatever the result.
 */
#include "agent/api/rest/composereq.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rest_composereq r;
    const char *why = NULL;
    if (rest_composereq_decode((const char *)data, size, &r, &why) == 0) {
        if (!r.n || r.n > REST_COMPOSE_SOURCES_MAX || !r.sources || !r.destination || !*r.destination)
            __builtin_trap();
        for (size_t i = 0; i < r.n; i++)
            if (!r.sources[i] || strlen(r.sources[i]) > size) __builtin_trap();
        if (r.username && strlen(r.username) > size) __builtin_trap();
    } else if (!why) {
        __builtin_trap();
    }
    rest_composereq_free(&r);
    return 0;
}
