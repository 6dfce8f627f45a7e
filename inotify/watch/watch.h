/*
 * watch.h - `sandbox-agent watch`.
 */
#ifndef SA_INOTIFY_WATCH_WATCH_H
#define SA_INOTIFY_WATCH_WATCH_H

/* argv[0] is "watch". Returns the process exit code. */
int watch_main(int argc, char **argv);

#endif
