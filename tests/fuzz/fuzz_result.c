/*
 * fuzz_result.c - libFuzzer target: result-file validation. Whatever the
 * workload wrote, the agent either carries one JSON object as written or
 * states a one-line reason; the sentinel built from it is valid base64 of
 * JSON (checked by re-validating the core object).
 */
#include "agent/core/jsoncheck.h"
#include "runner/run/result.h"
#include "runner/run/sentinel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct job_result r;
    struct jsoncheck jc;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    memset(&r, 0, sizeof r);
    result_accept(text, size, &r);
    if (!r.raw) {
        if (!r.error[0]) __builtin_trap();
        free(text);
    }
    struct job_outcome o = {.exit_code = 1, .result = r.raw, .result_len = r.len, .result_error = r.error, .nonce = "n\xffonce", .nonce_len = 6};
    struct buf core;
    buf_init(&core, 1u << 26);
    if (sentinel_json(&core, &o, "job") == 0) {
        if (jsoncheck(core.data, core.len, &jc) != 0 || jc.type != JSON_OBJECT) __builtin_trap();
    }
    buf_free(&core);
    result_free(&r);
    return 0;
}
