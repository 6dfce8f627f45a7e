/*
 * watch.h - `sandbox-agent watch`.
 */
#ifndef SA_WATCH_H
#define SA_WATCH_H

/* argv[0] is "watch". Returns the process exit code. */
int watch_main(int argc, char **argv);

#endif
