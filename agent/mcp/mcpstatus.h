/*
 * mcpstatus.h - `sandbox-agent mcp-status`.
 */
#ifndef SA_MCP_MCPSTATUS_H
#define SA_MCP_MCPSTATUS_H

/* argv[0] is "mcp-status". Returns the process exit code. */
int mcpstatus_main(int argc, char **argv);

#endif
