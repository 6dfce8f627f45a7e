/*
 * cli.h - exec's command line and its one result line (README,
 * "`sandbox-agent exec`"): the options and their defaults, --help, the
 * argv that --shell makes, and the `__SBX_EXEC__{json}` line.
 *
 * Owns the wording of every usage error: those quote the caller's own words,
 * in full, so they are logged here rather than passed up in an ERR_LEN
 * buffer. Does not run anything.
 */
#ifndef SA_RUNNER_EXEC_CLI_H
#define SA_RUNNER_EXEC_CLI_H

#include "runner/exec/cmd.h"

/* exec_cli_parse's "go on": the options are good and ask for a command. */
#define EXEC_GO (-1)

struct exec_opts {
    struct exec_spec spec; /* argv is the command's words as given */
    int shell;             /* --shell: spec.argv becomes sh -c "words" */
};

/* Read SANDBOX_AGENT_LOG and the options (argv[0] is "exec"), and check
 * --cwd. Returns EXEC_GO with *o filled in, or the exit status to end with:
 * 0 after printing --help, EXIT_USAGE after logging why. */
int exec_cli_parse(int argc, char **argv, struct exec_opts *o);

/* /bin/sh -c "cmd's words joined by spaces", or NULL when out of memory.
 * Free with exec_cli_shell_free. */
char **exec_cli_shell_argv(char *const *cmd);
void exec_cli_shell_free(char **sh);

/* Print the result line of the finished command on stdout. Returns 0, or 1
 * (logged) when it could not be made or written. */
int exec_cli_report(const struct exec_cmd *c);

#endif
