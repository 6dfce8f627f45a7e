/*
 * session.h - `sandbox-agent session -- HANDLER ARGV...`: the warm session
 * daemon (README "`sandbox-agent session -- HANDLER ARGV...` — the warm
 * session daemon"). The mode's parts share agent/session/session_priv.h.
 */
#ifndef SA_SESSION_SESSION_H
#define SA_SESSION_SESSION_H

/* argv[0] is "session". Returns the process exit code. */
int session_main(int argc, char **argv);

#endif
