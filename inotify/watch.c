/*
 * watch.c - `sandbox-agent watch` (not implemented yet).
 */
#include "watch.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

int watch_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    log_error("watch: not implemented yet");
    return EXIT_USAGE;
}
