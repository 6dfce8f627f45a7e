/*
 * exec.c - `sandbox-agent exec` (not implemented yet).
 */
#include "exec.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

int exec_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    log_error("exec: not implemented yet");
    return EXIT_USAGE;
}
