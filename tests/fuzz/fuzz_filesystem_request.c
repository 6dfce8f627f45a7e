/*
 * fuzz_filesystem_request.c - libFuzzer target: the JSON request decoders of the
 * filesystem API (agent/api/filesystem/request.c) behind the request message's own path
 * (agent/core/jsoncheck.c, jsonbytes.c, cJSON): any bytes that pass the
 * check decode or are refused with a reason, the strings they give are
 * never NULL, and the bytes of a surrogateescape string come back exact.
 * Never a crash, a leak or a hang.
 */
#include "agent/api/filesystem/request.h"
#include "agent/core/err.h"
#include "agent/core/jsonbytes.h"
#include "agent/core/jsoncheck.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsoncheck jc;
    if (jsoncheck((const char *)data, size, &jc) < 0 || jc.has_nul) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    size_t n = jsonbytes_unescape(text, size);
    if (n > size) __builtin_trap();
    cJSON *msg = cJSON_ParseWithLength(text, n);
    static const enum filesystem_request_kind kinds[] = {FSREQ_PATH, FSREQ_LIST, FSREQ_MOVE, FSREQ_WATCH, FSREQ_WATCHER};
    for (size_t i = 0; msg && i < sizeof kinds / sizeof kinds[0]; i++) {
        struct filesystem_request r;
        char err[ERR_LEN] = "";
        if (filesystem_request_decode(kinds[i], msg, &r, err) < 0) {
            if (!err[0]) __builtin_trap();
            continue;
        }
        if (!r.path || !r.source || !r.destination || !r.watcher_id) __builtin_trap();
        if ((unsigned)r.recursive > 1 || (unsigned)r.include_entry > 1) __builtin_trap();
    }
    cJSON_Delete(msg);
    free(text);
    return 0;
}
