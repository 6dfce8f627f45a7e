/*
 * test_cgroup.c - the pure parts of agent/core/cgroup.c: the group path of
 * a hierarchy in /proc/self/cgroup (v2's "0::" line, a v1 controller in a
 * list), its mount in /proc/self/mountinfo (cgroup2 or a cgroup mount with
 * that controller, optional fields, octal escapes), the directory of a
 * group under a mount whose root is not the hierarchy's, and the values of
 * SANDBOX_AGENT_CGROUPS. Then, where this machine lets the test make v2
 * cgroups (in a group of the test's own, which it joins): a group made,
 * joined, a group below it joined too, all listed, killed and removed; the
 * agent's directory named after its pid and start time and locked; and
 * what earlier agents left reclaimed only when theirs (by name), unlocked,
 * their maker not running, and empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/cgroup.h"
#include "agent/core/cgtree.h"
#include "agent/core/err.h"
#include "agent/core/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char self_hybrid[] =
    "9:name=systemd:/\n"
    "8:pids:/user.slice/a\n"
    "6:freezer:/f/g\n"
    "4:memory:/process_api/625c\n"
    "2:cpu,cpuacct:/c\n"
    "0::/unified/x\n";

static void test_parse_self(void **state)
{
    (void)state;
    char p[64];
    size_t n = sizeof self_hybrid - 1;
    assert_int_equal(cgroup_parse_self(self_hybrid, n, NULL, p, sizeof p), 0);
    assert_string_equal(p, "/unified/x");
    assert_int_equal(cgroup_parse_self(self_hybrid, n, "freezer", p, sizeof p), 0);
    assert_string_equal(p, "/f/g");
    assert_int_equal(cgroup_parse_self(self_hybrid, n, "cpuacct", p, sizeof p), 0);
    assert_string_equal(p, "/c");
    assert_int_equal(cgroup_parse_self(self_hybrid, n, "name=systemd", p, sizeof p), 0);
    assert_string_equal(p, "/");
    /* No such controller; a word that is only part of one; no v2 line. */
    assert_int_equal(cgroup_parse_self(self_hybrid, n, "blkio", p, sizeof p), -1);
    assert_int_equal(cgroup_parse_self(self_hybrid, n, "cpuac", p, sizeof p), -1);
    const char *v1 = "3:pids:/a\n";
    assert_int_equal(cgroup_parse_self(v1, strlen(v1), NULL, p, sizeof p), -1);
    /* Pure v2, no newline at the end; a path too long for the buffer. */
    const char *v2 = "0::/system.slice/sa.service";
    assert_int_equal(cgroup_parse_self(v2, strlen(v2), NULL, p, sizeof p), 0);
    assert_string_equal(p, "/system.slice/sa.service");
    assert_int_equal(cgroup_parse_self(v2, strlen(v2), NULL, p, 8), -1);
    assert_int_equal(cgroup_parse_self("", 0, NULL, p, sizeof p), -1);
    assert_int_equal(cgroup_parse_self("garbage\n::\n", 11, "x", p, sizeof p), -1);
}

static const char mountinfo[] =
    "22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime shared:9 master:2 - cgroup cgroup rw,freezer\n"
    "39 31 0:36 /docker/abc /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/un\\040ified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_parse_mount(void **state)
{
    (void)state;
    char root[64], mnt[64];
    size_t n = sizeof mountinfo - 1;
    assert_int_equal(cgroup_parse_mount(mountinfo, n, NULL, root, mnt, sizeof root), 0);
    assert_string_equal(root, "/");
    assert_string_equal(mnt, "/sys/fs/cgroup/un ified");
    assert_int_equal(cgroup_parse_mount(mountinfo, n, "freezer", root, mnt, sizeof root), 0);
    assert_string_equal(mnt, "/sys/fs/cgroup/freezer");
    assert_int_equal(cgroup_parse_mount(mountinfo, n, "pids", root, mnt, sizeof root), 0);
    assert_string_equal(root, "/docker/abc");
    assert_string_equal(mnt, "/sys/fs/cgroup/pids");
    /* "rw" is an option of every mount, never a controller's mount. */
    assert_int_equal(cgroup_parse_mount(mountinfo, n, "memory", root, mnt, sizeof root), -1);
    assert_int_equal(cgroup_parse_mount(mountinfo, n, "mode=755", root, mnt, sizeof root), -1);
    /* A line without the separator, or cut after it. */
    const char *bad = "1 2 3:4 / /x rw - cgroup2\n5 6 7:8 / /y rw\n";
    assert_int_equal(cgroup_parse_mount(bad, strlen(bad), NULL, root, mnt, sizeof root), -1);
    /* A mount point that does not fit. */
    assert_int_equal(cgroup_parse_mount(mountinfo, n, "freezer", root, mnt, 8), -1);
}

static void test_dir_of(void **state)
{
    (void)state;
    char d[64];
    assert_int_equal(cgroup_dir_of("/sys/fs/cgroup", "/", "/a/b", d, sizeof d), 0);
    assert_string_equal(d, "/sys/fs/cgroup/a/b");
    assert_int_equal(cgroup_dir_of("/sys/fs/cgroup", "/", "/", d, sizeof d), 0);
    assert_string_equal(d, "/sys/fs/cgroup");
    /* A container's mount of its own subtree. */
    assert_int_equal(cgroup_dir_of("/sys/fs/cgroup/pids", "/docker/abc", "/docker/abc/x", d, sizeof d), 0);
    assert_string_equal(d, "/sys/fs/cgroup/pids/x");
    assert_int_equal(cgroup_dir_of("/m", "/docker/abc", "/docker/abc", d, sizeof d), 0);
    assert_string_equal(d, "/m");
    /* Not below the mount's root: it cannot reach the group. */
    assert_int_equal(cgroup_dir_of("/m", "/docker/abc", "/docker/abcd", d, sizeof d), -1);
    assert_int_equal(cgroup_dir_of("/m", "/docker/abc", "/other", d, sizeof d), -1);
    assert_int_equal(cgroup_dir_of("/a-long-mount-point", "/", "/a/b", d, 8), -1);
}

static void test_want(void **state)
{
    (void)state;
    enum cgroup_want w;
    assert_int_equal(cgroup_want_parse(NULL, &w), 0);
    assert_int_equal(w, CGROUP_WANT_AUTO);
    assert_int_equal(cgroup_want_parse("", &w), 0);
    assert_int_equal(w, CGROUP_WANT_AUTO);
    assert_int_equal(cgroup_want_parse("1", &w), 0);
    assert_int_equal(w, CGROUP_WANT_AUTO);
    assert_int_equal(cgroup_want_parse("0", &w), 0);
    assert_int_equal(w, CGROUP_WANT_OFF);
    assert_int_equal(cgroup_want_parse("v2", &w), 0);
    assert_int_equal(w, CGROUP_WANT_V2);
    assert_int_equal(cgroup_want_parse("v1", &w), 0);
    assert_int_equal(w, CGROUP_WANT_V1);
    assert_int_equal(cgroup_want_parse("auto", &w), -1);
    assert_int_equal(cgroup_want_parse("00", &w), -1);
    assert_int_equal(cgroup_want_parse("V2", &w), -1);
    char err[ERR_LEN];
    struct cgroup_base b;
    assert_int_equal(cgroup_base_open(&b, CGROUP_WANT_OFF, err), -1);
    assert_int_equal(b.kind, CGROUP_NONE);
    assert_non_null(strstr(err, "SANDBOX_AGENT_CGROUPS=0"));
}

/* ---- where this machine lets the test make cgroups ---- */

/* A group of the test's own that the test process moves into, so that the
 * agent's directories are made (and reclaimed) where no one else's are;
 * out of it again and removed at the end. */
static char own[CGROUP_PATH_MAX], priv[CGROUP_PATH_MAX + 64];
/* What a test started, ended by the teardown should an assertion fail. */
static pid_t kids[4];
static int nkids;

static int join(const char *dir)
{
    char p[CGROUP_PATH_MAX + 80];
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    int ok = fprintf(f, "0") == 1;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int enter_private(void)
{
    char mnt[CGROUP_PATH_MAX], why[ERR_LEN];
    if (cgroup_self_dir(NULL, own, mnt, why) < 0) {
        printf("skipped: %s\n", why);
        return -1;
    }
    snprintf(priv, sizeof priv, "%s/sa-unit-cgroup-%d", own, (int)getpid());
    if (mkdir(priv, 0755) < 0 || join(priv) < 0) {
        printf("skipped: cannot make and join a v2 group in %s: %s\n", own, strerror(errno));
        rmdir(priv);
        return -1;
    }
    return 0;
}

/* The teardown: every child killed and reaped, out of the group, which is
 * removed with whatever a test left in it. */
static int leave_private(void **state)
{
    (void)state;
    struct cgtree w = {0};
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    nkids = 0;
    if (!*priv) return 0;
    int rc = join(own) == 0 && cgtree_walk(priv, CGTREE_REMOVE, NULL, &w) == 0 ? 0 : -1;
    *priv = '\0';
    return rc;
}

static void in_priv(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", priv, name);
}

static int there(const char *name)
{
    char p[2 * CGROUP_PATH_MAX + 80];
    in_priv(p, sizeof p, name);
    return access(p, F_OK) == 0;
}

static void make(const char *name)
{
    char p[2 * CGROUP_PATH_MAX + 80];
    in_priv(p, sizeof p, name);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* A child that joins dir and waits to be killed. */
static pid_t member_of(const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (join(dir) < 0) _exit(3);
        for (;;) pause();
    }
    assert_true(pid > 0);
    kids[nkids++] = pid;
    struct pid_list l = {NULL, 0, 0};
    struct cgtree w = {0};
    for (int i = 0; i < 2000 && !l.n; i++) { /* it joins at once; bounded */
        cgtree_walk(dir, CGTREE_MEMBERS, &l, &w);
        if (!l.n) nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    assert_int_equal(l.n, 1);
    assert_int_equal(l.pid[0], pid);
    descendants_list_free(&l);
    return pid;
}

static void kill_wait(pid_t pid)
{
    int st;
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    for (int i = 0; i < nkids; i++)
        if (kids[i] == pid) kids[i] = kids[--nkids];
}

/* A group made, joined, a group made below it and joined by another
 * member: both listed, the tree not removable while they live, killed at
 * once where the kind has cgroup.kill, then removed whole. */
static void test_a_group_for_real(void **state)
{
    (void)state;
    char err[ERR_LEN], path[CGROUP_PATH_MAX], sub[CGROUP_PATH_MAX + 16];
    struct cgroup_base b;
    if (enter_private() < 0) return;
    assert_int_equal(cgroup_base_open(&b, CGROUP_WANT_V2, err), 0);
    int fd = cgroup_make(&b, "t1", path, sizeof path, err);
    assert_true(fd > 2);
    close(fd);
    pid_t a = member_of(path);
    snprintf(sub, sizeof sub, "%s/below", path);
    assert_int_equal(mkdir(sub, 0755), 0);
    pid_t c = member_of(sub);
    struct pid_list l = {NULL, 0, 0};
    struct cgtree w = {0};
    assert_int_equal(cgtree_walk(path, CGTREE_MEMBERS, &l, &w), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(w.groups, 1);
    descendants_list_free(&l);
    assert_int_equal(cgtree_walk(path, CGTREE_REMOVE, NULL, &w), -1);
    assert_int_equal(w.busy, 2);
    int st;
    if (cgroup_kill(&b, path) == 0) { /* the member below dies of it too */
        assert_int_equal(waitpid(c, &st, 0), c);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        assert_int_equal(waitpid(a, &st, 0), a);
        nkids = 0;
    } else {
        kill_wait(a);
        kill_wait(c);
    }
    assert_int_equal(cgtree_walk(path, CGTREE_REMOVE, NULL, &w), 0);
    assert_int_equal(w.removed, 2);
    cgroup_base_close(&b);
    assert_int_equal(access(b.dir, F_OK), -1);
}

/* The agent's directory: named after its pid and start time, locked while
 * it runs, never taken by another; what earlier agents left is reclaimed
 * when theirs and empty, and only then. */
static void test_the_agents_directory_and_what_earlier_ones_left(void **state)
{
    (void)state;
    char err[ERR_LEN], name[CGROUP_PATH_MAX + 8], dead_new[64], dead_old[64], live_old[64], self_old[64], held[64], busy[64];
    struct cgroup_base b, b2;
    if (enter_private() < 0) return;
    pid_t dead = fork(); /* a pid no process has now */
    if (dead == 0) _exit(0);
    int st;
    assert_int_equal(waitpid(dead, &st, 0), dead);
    snprintf(dead_new, sizeof dead_new, SA_NAME "-%d-123", (int)dead);
    snprintf(dead_old, sizeof dead_old, SA_NAME "-%d.7", (int)dead);
    snprintf(live_old, sizeof live_old, SA_NAME "-%d", (int)getppid());
    snprintf(self_old, sizeof self_old, SA_NAME "-%d.99", (int)getpid());
    snprintf(held, sizeof held, SA_NAME "-%d-456", (int)dead);
    snprintf(busy, sizeof busy, SA_NAME "-%d-789.2", (int)dead);
    const char *keep[] = {live_old, self_old, held, "not-ours", SA_NAME "-x", SA_NAME "-12-34-56"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) make(keep[i]);
    make(dead_new);
    snprintf(name, sizeof name, "%s/l1", dead_new);
    make(name);
    snprintf(name, sizeof name, "%s/l1/l2", dead_new);
    make(name);
    make(dead_old);
    make(busy);
    snprintf(name, sizeof name, "%s/m", busy);
    make(name);
    snprintf(name, sizeof name, "%s/e", busy);
    make(name);
    char p[2 * CGROUP_PATH_MAX + 80];
    in_priv(p, sizeof p, held);
    int hfd = open(p, O_RDONLY | O_DIRECTORY);
    assert_int_equal(flock(hfd, LOCK_EX | LOCK_NB), 0); /* as a running agent holds it */
    snprintf(name, sizeof name, "%s/m", busy);
    in_priv(p, sizeof p, name);
    pid_t m = member_of(p);

    assert_int_equal(cgroup_base_open(&b, CGROUP_WANT_V2, err), 0);
    char state_c;
    unsigned long long start;
    assert_int_equal(descendants_stat(0, &state_c, &start), 0);
    snprintf(name, sizeof name, "/" SA_NAME "-%d-%llu", (int)getpid(), start);
    assert_non_null(strstr(b.dir, name));
    assert_string_equal(strstr(b.dir, name), name);
    /* Reclaimed: the stale empty ones, whole; of the one with a member,
     * its empty group. Kept: the rest, and the member lives. */
    assert_false(there(dead_new));
    assert_false(there(dead_old));
    snprintf(name, sizeof name, "%s/e", busy);
    assert_false(there(name));
    snprintf(name, sizeof name, "%s/m", busy);
    assert_true(there(name));
    assert_int_equal(kill(m, 0), 0);
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) assert_true(there(keep[i]));
    /* Locked while it runs: another (here, the same process again) neither
     * takes it nor reclaims it, and gets the next name. */
    int lfd = open(b.dir, O_RDONLY | O_DIRECTORY);
    assert_int_equal(flock(lfd, LOCK_EX | LOCK_NB), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    close(lfd);
    assert_int_equal(cgroup_base_open(&b2, CGROUP_WANT_V2, err), 0);
    assert_int_equal(access(b.dir, F_OK), 0);
    snprintf(name, sizeof name, "%s.1", b.dir);
    assert_string_equal(b2.dir, name);
    cgroup_base_close(&b2);
    cgroup_base_close(&b);
    assert_int_equal(access(b.dir, F_OK), -1);
    assert_int_equal(access(b2.dir, F_OK), -1);
    kill_wait(m);
    close(hfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_self),
        cmocka_unit_test(test_parse_mount),
        cmocka_unit_test(test_dir_of),
        cmocka_unit_test(test_want),
        cmocka_unit_test_teardown(test_a_group_for_real, leave_private),
        cmocka_unit_test_teardown(test_the_agents_directory_and_what_earlier_ones_left, leave_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
