/*
 * fsops.h - `sandbox-agent fs`.
 */
#ifndef SA_FSOPS_H
#define SA_FSOPS_H

/* argv[0] is "fs". Returns the process exit code. */
int fs_main(int argc, char **argv);

#endif
