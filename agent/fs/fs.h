/*
 * fs.h - `sandbox-agent fs`: the mode's entry point (fs.c).
 */
#ifndef SA_FS_FS_H
#define SA_FS_FS_H

/* argv[0] is "fs". Returns the process exit code. */
int fs_main(int argc, char **argv);

#endif
