/*
 * fsops.c - `sandbox-agent fs` (not implemented yet).
 */
#include "fsops.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

int fs_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    log_error("fs: not implemented yet");
    return EXIT_USAGE;
}
