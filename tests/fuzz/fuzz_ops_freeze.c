/*
 * fuzz_ops_freeze.c - libFuzzer target: POST /freeze's query values (the
 * integers of maxCgroups and maxWaitMs, the mode: agent/api/ops/freeze.c,
 * agent/core/freeze.c) and /collapse's smaps parser
 * (agent/api/ops/collapse.c). Any text gives a value or a refusal, and
 * regions inside the text's own bounds; never a crash.
 */
#include "agent/api/ops/collapse.h"
#include "agent/api/ops/freeze.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    long long v;
    enum freeze_mode m;
    if (ops_freeze_int(s, &v) == 0 && (v > 999999999999999999LL || v < -999999999999999999LL)) __builtin_trap();
    if (freeze_mode_parse(s, &m) == 0 && m != FREEZE_LEGACY && m != FREEZE_HIERARCHY) __builtin_trap();
    struct ops_collapse_region r[16];
    int n = ops_collapse_parse(s, size, r, 16);
    if (n < 0 || n > 16) __builtin_trap();
    for (int i = 0; i < n; i++) (void)ops_collapse_chunks(r[i].start, r[i].end);
    free(s);
    return 0;
}
