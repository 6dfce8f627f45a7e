/*
 * mcpstatus.c - `sandbox-agent mcp-status` (not implemented yet).
 */
#include "mcpstatus.h"
#include "agent/core/log.h"
#include "agent/core/protocol.h"

int mcp_status_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    log_error("mcp-status: not implemented yet");
    return EXIT_USAGE;
}
