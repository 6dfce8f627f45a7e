/*
 * memcg.c - finding the agent's memory cgroup and reading its files (see
 * memcg.h).
 */
#include "agent/core/memcg.h"
#include "agent/core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct memcg self;
static int self_done;

long memcg_read(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[CGROUP_PATH_MAX + 64];
    if (cap == 0) return -1;
    if (dir) snprintf(path, sizeof path, "%s/%s", dir, name);
    else snprintf(path, sizeof path, "%s", name);
    /* openat: musl's open adds an fcntl for O_CLOEXEC. One read: a
     * pseudo-file hands over all it has that fits (seq_file), and reading
     * on to EOF would cost a second call. */
    int fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t r;
    do r = read(fd, buf, cap - 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    size_t n = r > 0 ? (size_t)r : 0;
    buf[n] = '\0';
    return (long)n;
}

int memcg_parse_key(const char *text, size_t len, const char *key, unsigned long long *out)
{
    size_t kl = strlen(key);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        if ((size_t)(e - p) > kl + 1 && !memcmp(p, key, kl) && p[kl] == ' ') {
            unsigned long long v = 0;
            const char *d = p + kl + 1;
            if (d == e) return -1;
            for (; d < e; d++) {
                unsigned dig = (unsigned)(*d - '0');
                if (*d < '0' || *d > '9' || v > (~0ull - dig) / 10) return -1;
                v = v * 10 + dig;
            }
            *out = v;
            return 0;
        }
        p = nl ? nl + 1 : end;
    }
    return -1;
}

int memcg_file_key(const char *dir, const char *name, const char *key, unsigned long long *out)
{
    char text[MEMCG_FILE_MAX];
    long n = memcg_read(dir, name, text, sizeof text);
    return n < 0 ? -1 : memcg_parse_key(text, (size_t)n, key, out);
}

static int has(const char *dir, const char *name)
{
    char path[CGROUP_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* v2: the agent's group or the nearest ancestor below the mount point with
 * the memory controller's files (the mount point itself too: in a cgroup
 * namespace it is the container's group; the host's root has none). */
static int find_v2(struct memcg *m)
{
    char why[ERR_LEN];
    if (cgroup_self_dir(NULL, m->dir, m->mnt, why) < 0) return -1;
    size_t ml = strlen(m->mnt);
    for (;;) {
        if (has(m->dir, "memory.current")) return 0;
        char *slash = strrchr(m->dir, '/');
        if (strlen(m->dir) <= ml || !slash || (size_t)(slash - m->dir) < ml) return -1;
        *slash = '\0';
    }
}

/* v1: the memory hierarchy's group of the agent, unless it is the root. */
static int find_v1(struct memcg *m)
{
    char why[ERR_LEN];
    if (cgroup_self_dir("memory", m->dir, m->mnt, why) != 0) return -1;
    return has(m->dir, "memory.usage_in_bytes") ? 0 : -1;
}

const struct memcg *memcg_self(void)
{
    if (self_done) return &self;
    self_done = 1;
    if (find_v2(&self) == 0) self.kind = MEMCG_V2;
    else if (find_v1(&self) == 0) self.kind = MEMCG_V1;
    else memset(&self, 0, sizeof self);
    return &self;
}
