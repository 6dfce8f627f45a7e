/*
 * fuzz_num.c - libFuzzer target: the number grammar (agent/core/num.c).
 * Any text gives a value in range or a refusal; never a crash.
 */
#include "agent/core/num.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    mode_t m;
    uint64_t v;
    double d;
    if (num_mode(s, &m) == 0 && m > 07777) __builtin_trap();
    if (num_count(s, 1000000, &v) == 0 && v > 1000000) __builtin_trap();
    if (num_seconds(s, 3600, &d) == 0 && !(d >= 0 && d <= 3600)) __builtin_trap();
    free(s);
    return 0;
}
