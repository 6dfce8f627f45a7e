/*
 * fuzz_entry.c - libFuzzer target: SANDBOX_JOB_INNER_ENTRY decoding. Any input
 * must give either an argv of strings or one error line; never a crash.
 */
#include "runner/run/entry.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char **argv;
    char err[512];
    if (entry_decode((const char *)data, size, &argv, err) == 0) {
        size_t n = 0;
        while (argv[n]) n++;
        if (n == 0) __builtin_trap(); /* success means at least one argument */
        entry_free(argv);
    } else if (!err[0] || memchr(err, '\n', strlen(err))) {
        __builtin_trap(); /* every refusal has a one-line reason */
    }
    return 0;
}
