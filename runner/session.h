/*
 * session.h - `sandbox-agent session`.
 */
#ifndef SA_SESSION_H
#define SA_SESSION_H

/* argv[0] is "session". Returns the process exit code. */
int session_main(int argc, char **argv);

#endif
