/*
 * fuzz_rewrite.c - libFuzzer target: SANDBOX_AGENT_SIGNAL_REWRITE parsing
 * (agent/core/rewrite.c). Any text is refused with a message, or gives a
 * table that maps every signal into 0..64 and never touches SIGKILL,
 * SIGSTOP or SIGCHLD.
 */
#include "agent/core/err.h"
#include "agent/core/rewrite.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct rewrite r;
    char err[ERR_LEN];
    err[0] = 0;
    if (rewrite_parse(&r, s, err) == 0) {
        for (int sig = 1; sig < REWRITE_NSIG; sig++) {
            int to = rewrite_apply(&r, sig);
            if (to < 0 || to > 64 || to == SIGCHLD) {
                if (!(sig == SIGCHLD && to == SIGCHLD)) __builtin_trap();
            }
        }
        if (rewrite_apply(&r, SIGKILL) != SIGKILL || rewrite_apply(&r, SIGSTOP) != SIGSTOP) __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap();
    }
    free(s);
    return 0;
}
