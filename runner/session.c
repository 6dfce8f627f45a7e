/*
 * session.c - `sandbox-agent session` (not implemented yet).
 */
#include "session.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

int session_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    log_error("session: not implemented yet");
    return EXIT_USAGE;
}
