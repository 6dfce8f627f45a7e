/*
 * rewrite.h - signal rewriting, as dumb-init's --rewrite: a supervisor that
 * receives signal A forwards signal B instead (B = 0 drops it). Configured by
 * SANDBOX_AGENT_SIGNAL_REWRITE="A:B,A:B,...", each side a number (1-64) or a
 * name ("TERM", "SIGTERM", "RTMIN+2"). Pure: no I/O, unit-tested and fuzzed.
 *
 * Typical uses: 15:3 makes `docker stop` a graceful SIGQUIT for nginx or
 * gunicorn (which treat SIGTERM as "stop now"); 28:0 (SIGWINCH) keeps a
 * resize from reaching Apache, which takes SIGWINCH as "graceful stop".
 */
#ifndef SA_CORE_REWRITE_H
#define SA_CORE_REWRITE_H

#define REWRITE_NSIG 65 /* signals 1..64; index 0 unused */
/* The longest value taken: 64 pairs of the longest names. */
#define REWRITE_MAX_TEXT 2048

struct rewrite {
    unsigned char to[REWRITE_NSIG]; /* to[A] = B; identity by default */
    unsigned char set[REWRITE_NSIG]; /* A was named by the user's text */
};

/* Identity. */
void rewrite_init(struct rewrite *r);
/* Parse text into r (identity first). SIGKILL and SIGSTOP cannot be caught,
 * so they are refused on the left; SIGCHLD is the reaper's and refused on
 * both sides. Returns 0, or -1 with a message in err (ERR_LEN bytes). */
int rewrite_parse(struct rewrite *r, const char *text, char *err);
/* A default of the supervisor's own: A becomes B unless the user's text
 * named A (their rewrite, identity included, wins). */
void rewrite_default(struct rewrite *r, int from, int to);
/* The signal to forward for sig; 0 means drop it. */
int rewrite_apply(const struct rewrite *r, int sig);
/* A signal's number from "15", "TERM", "SIGTERM", "RTMIN", "RTMIN+3",
 * "RTMAX-1" (SIGRTMIN as this C library defines it), or -1. */
int rewrite_signum(const char *s, unsigned long n);

#endif
