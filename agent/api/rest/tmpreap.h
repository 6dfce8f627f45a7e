/*
 * tmpreap.h - the temporary files of a helper that died mid-write (README
 * "filesystem.Filesystem and /files": an upload's or a compose's helper
 * killed): the helper tells each temporary name on a socket before the
 * file of that name exists (files_write's named hook); when it ends
 * without a result, another helper, as the same user, reads what it told
 * and removes those files. The agent itself never touches them: they are
 * in the user's directories.
 */
#ifndef SA_API_REST_TMPREAP_H
#define SA_API_REST_TMPREAP_H

#include "agent/core/user.h"

/* In the helper: tell tmp on fd (the socket), NUL-terminated, never
 * waiting. Returns 0, or an errno value (the write is then refused: a name
 * no one could remove is never made). */
int rest_tmpreap_tell(int fd, const char *tmp);

/* In the loop: a helper as u reads every name told on fd (the agent's end
 * of the socket, closed by the caller after) to its end and removes each
 * that is an atomic write's temporary name. */
void rest_tmpreap_start(const struct user_info *u, int fd);

#endif
