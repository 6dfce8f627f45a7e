/*
 * oom.c - the kernel's OOM killer, seen from the agent (see oom.h): the
 * kill count a process's death is judged by, and the agent's own
 * oom_score_adj with what its children get instead.
 */
#include "agent/core/oom.h"
#include "agent/core/io.h"
#include "agent/core/log.h"
#include "agent/core/memcg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCORE_MIN "-1000"

/* What a child writes to its oom_score_adj, made before any fork; "" while
 * the agent is not protected (children inherit its own value then). */
static char child_adj[16];
static size_t child_adj_len;

/* v2: dir or its nearest ancestor, down to the agent's memory cgroup, with
 * memory.events (counted up the tree: any of them sees a kill below). */
static const char *v2_events_dir(const struct memcg *m, const char *dir, char *buf, size_t cap)
{
    size_t ml = strlen(m->dir);
    if (!dir || strncmp(dir, m->dir, ml) != 0 || (dir[ml] != '/' && dir[ml] != '\0') ||
        snprintf(buf, cap, "%s", dir) >= (int)cap)
        return m->dir;
    while (strlen(buf) > ml) {
        char probe[CGROUP_PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/memory.events", buf);
        if (access(probe, F_OK) == 0) return buf;
        *strrchr(buf, '/') = '\0';
    }
    return m->dir;
}

long long oom_kills(const char *v2dir)
{
    const struct memcg *m = memcg_self();
    char dir[CGROUP_PATH_MAX];
    unsigned long long n;
    int rc;
    if (m->kind == MEMCG_V2)
        rc = memcg_file_key(v2_events_dir(m, v2dir, dir, sizeof dir), "memory.events", "oom_kill", &n);
    else if (m->kind == MEMCG_V1)
        rc = memcg_file_key(m->dir, "memory.oom_control", "oom_kill", &n);
    else
        rc = memcg_file_key(NULL, "/proc/vmstat", "oom_kill", &n);
    return rc < 0 || n > (unsigned long long)OOM_KILLS_MAX ? -1 : (long long)n;
}

int oom_killed(int wstatus, int sent_kill, long long before, long long after)
{
    if (!WIFSIGNALED(wstatus) || WTERMSIG(wstatus) != SIGKILL || sent_kill) return 0;
    return before >= 0 && after > before;
}

void oom_protect(void)
{
    static int done;
    char start[16];
    if (done) return;
    done = 1;
    long n = memcg_read(NULL, OOM_SCORE_ADJ, start, sizeof start);
    if (n <= 0) {
        log_info("cannot read " OOM_SCORE_ADJ ": %s; not protected from the OOM killer", strerror(errno));
        return;
    }
    start[strcspn(start, "\n")] = '\0';
    if (io_write_text(OOM_SCORE_ADJ, SCORE_MIN) < 0) {
        log_info("cannot set " OOM_SCORE_ADJ " to " SCORE_MIN " (%s): the OOM killer may pick the agent",
                 strerror(errno));
        return;
    }
    /* Children get the value the agent was started with, never the
     * agent's own -1000 (0 when that was it). */
    snprintf(child_adj, sizeof child_adj, "%s", strcmp(start, SCORE_MIN) ? start : "0");
    child_adj_len = strlen(child_adj);
    log_debug(OOM_SCORE_ADJ " set to " SCORE_MIN "; children get %s", child_adj);
}

int oom_protected(void) { return child_adj_len != 0; }

const char *oom_child_adj(size_t *len)
{
    *len = child_adj_len;
    return child_adj_len ? child_adj : NULL;
}
