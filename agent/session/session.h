/*
 * session.h - `sandbox-agent session -- HANDLER ARGV...`: the warm session
 * daemon (PROTOCOL.md section 2), and its internal bounds.
 */
#ifndef SA_SESSION_H
#define SA_SESSION_H

#include "agent/core/protocol.h"

/* A handler stdout line longer than this is not a reply. */
#define SESSION_REPLY_MAX (64u * 1024u * 1024u)

/* argv[0] is "session". Returns the process exit code. */
int session_main(int argc, char **argv);

#endif
