/*
 * exec.h - `sandbox-agent exec`.
 */
#ifndef SA_RUNNER_EXEC_EXEC_H
#define SA_RUNNER_EXEC_EXEC_H

/* argv[0] is "exec". Returns the process exit code. */
int exec_main(int argc, char **argv);

#endif
