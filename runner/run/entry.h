/*
 * entry.h - decoding SANDBOX_JOB_INNER_ENTRY (a JSON array of strings) into an
 * argv. Input is untrusted; the decoder never crashes and reports one clear
 * reason for every refusal.
 */
#ifndef SA_RUNNER_RUN_ENTRY_H
#define SA_RUNNER_RUN_ENTRY_H

#include <stddef.h>

/* Upper bound on the text decoded. The kernel already caps one environment
 * string at 128 KiB (MAX_ARG_STRLEN); this bound holds for any caller. */
#define ENTRY_MAX_BYTES (16u * 1024 * 1024)

/*
 * Decode text[0..n) into a NULL-terminated argv (one allocation; free with
 * entry_free). Returns 0, or -1 with a one-line reason in err, which names
 * SANDBOX_JOB_INNER_ENTRY. Missing or [] gives "empty SANDBOX_JOB_INNER_ENTRY".
 */
int entry_decode(const char *text, size_t n, char ***argv, char *err);
void entry_free(char **argv);

#endif
