/*
 * run.h - `sandbox-agent run`: the job supervisor (PID 1).
 */
#ifndef SA_RUNNER_RUN_RUN_H
#define SA_RUNNER_RUN_RUN_H

/* argv[0] is "run". Returns the process exit code. */
int run_main(int argc, char **argv);

#endif
