/*
 * log.h - the agent's own diagnostics, one line each on stderr, prefixed
 * "sandbox-agent: ". SANDBOX_AGENT_LOG=debug|info|warn sets the threshold
 * (default warn). Errors are always printed. Owns nothing but the level.
 */
#ifndef SA_CORE_LOG_H
#define SA_CORE_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Read SANDBOX_AGENT_LOG. Returns 0, or -1 with *err set for a bad value. */
int log_init(const char **err);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* While held (on 1), every line is dropped and counted: stderr is a file
 * on a filesystem POST /fsfreeze froze, where a write would wait for the
 * thaw with the whole loop. log_hold(0) ends it and returns how many were
 * dropped. */
unsigned log_hold(int on);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
