/*
 * tmpreap.c - removing the temporary files a killed helper told of (see
 * rest/tmpreap.h).
 */
#include "agent/api/rest/tmpreap.h"
#include "agent/api/asuser/job.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/files/files.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A temporary path as a helper tells it (write.c's bound), with its NUL. */
#define TMP_NAME_MAX (PATH_MAX + 64)

int rest_tmpreap_tell(int fd, const char *tmp)
{
    size_t n = strlen(tmp) + 1;
    ssize_t w = send(fd, tmp, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return w == (ssize_t)n ? 0 : w < 0 ? errno : EAGAIN;
}

/* One told name: removed when it is an atomic write's temporary name. */
static void remove_told(const char *tmp)
{
    size_t n, tl;
    const char *name = files_last_name(tmp, &n), *t;
    enum files_tmp_kind k = tmp[0] == '/' ? files_tmp_kind(name, n, &t, &tl) : FILES_TMP_NONE;
    if ((k == FILES_TMP_NEW || k == FILES_TMP_REPLACES) && unlink(tmp) < 0 && errno != ENOENT)
        log_warn("api: cannot remove %s: %s", tmp, strerror(errno));
}

/* The clean-up helper, as the user: every name told (fd 4: what was sent,
 * then EOF), each removed. All of them, not the last: the dead helper may
 * have died between naming a file and making it so. */
static int reap_child(void *arg)
{
    char chunk[4096], cur[TMP_NAME_MAX];
    size_t len = 0;
    int over = 0;
    ssize_t r;
    (void)arg;
    while ((r = read(ASUSER_JOB_IN_FD0, chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR)) {
        for (ssize_t i = 0; i < r; i++) {
            if (chunk[i] == '\0') {
                cur[len] = '\0';
                if (!over) remove_told(cur);
                len = 0, over = 0;
            } else if (len + 1 < sizeof cur) {
                cur[len++] = chunk[i];
            } else {
                over = 1;
            }
        }
    }
    return 0;
}

void rest_tmpreap_start(const struct user_info *u, int fd)
{
    char err[ERR_LEN];
    if (fd < 0) return;
    struct asuser_job_opts o = {.user = u, .fn = reap_child, .in_fds = {fd}, .nin = 1};
    struct asuser_job *j = asuser_job_start(EV_DEFAULT, &o, err);
    if (!j) log_warn("api: cannot remove the temporary file of a helper that died: %s", err);
    asuser_job_detach(j);
}
