/*
 * tests/bench/freezefloor.c - the floor of `make bench`'s /freeze rows: the
 * least a freeze of N cgroups costs, with no server around it. Writes
 * cgroup.freeze (v2) or freezer.state (v1) of each directory given, then
 * reads cgroup.events / freezer.state again until every one reads frozen;
 * then the thaw the same way. Prints {"freeze_ms", "thaw_ms"} of the median
 * of R rounds. libc only.
 *
 *   freezefloor v2|v1 ROUNDS DIR...
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void put(const char *dir, const char *file, const char *text)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) {
        perror(p);
        exit(1);
    }
    close(fd);
}

static int reads(const char *dir, const char *file, const char *want)
{
    char p[4096], t[256];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, t, sizeof t - 1);
    if (fd >= 0) close(fd);
    if (n < 0) return 0;
    t[n] = '\0';
    return strstr(t, want) != NULL;
}

static double step(int v2, int on, char **dirs, int n)
{
    double t0 = now();
    for (int i = 0; i < n; i++)
        put(dirs[i], v2 ? "cgroup.freeze" : "freezer.state", v2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED"));
    for (int i = 0; i < n; i++)
        while (!reads(dirs[i], v2 ? "cgroup.events" : "freezer.state",
                      v2 ? (on ? "frozen 1" : "frozen 0") : (on ? "FROZEN" : "THAWED"))) {}
    return now() - t0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: freezefloor v2|v1 ROUNDS DIR...\n");
        return 2;
    }
    int v2 = !strcmp(argv[1], "v2"), r = atoi(argv[2]), n = argc - 3;
    double *f = calloc((size_t)r, sizeof *f), *t = calloc((size_t)r, sizeof *t);
    for (int i = 0; i < r; i++) {
        f[i] = step(v2, 1, argv + 3, n);
        t[i] = step(v2, 0, argv + 3, n);
    }
    qsort(f, (size_t)r, sizeof *f, cmp);
    qsort(t, (size_t)r, sizeof *t, cmp);
    printf("{\"freeze_ms\": %.3f, \"thaw_ms\": %.3f}\n", f[r / 2], t[r / 2]);
    return 0;
}
