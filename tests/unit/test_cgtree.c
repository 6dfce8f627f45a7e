/*
 * test_cgtree.c - the subtree walk of agent/core/cgtree.c against a fake
 * tree in a temporary directory (directories as groups, cgroup.procs files
 * as member lists; a directory holding a file cannot be removed, as a group
 * with members cannot): the members of every level listed, a thread list
 * where the process list cannot be read; a tree of empty groups removed
 * bottom-up, also 3000 levels deep (deeper than any path: no path is
 * built); a walk cut at its count and at its time, saying so, each cut walk
 * removing more until the tree is gone; no symlink followed and, where the
 * test may mount, no mount point entered; a top that does not exist.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/cgtree.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char top[64];

/* In /dev/shm where there is one: a tmpfs, where 3000 rmdirs take
 * milliseconds (a journalled /tmp takes seconds). */
static int setup(void **state)
{
    (void)state;
    snprintf(top, sizeof top, "%s/test_cgtree.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    return mkdtemp(top) ? 0 : -1;
}

/* Remove what a test left (files too): rm -r of the fake tree. */
static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void dir(const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static int exists(const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    return access(p, F_OK) == 0;
}

static int has(const struct pid_list *l, pid_t p)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->pid[i] == p) return 1;
    return 0;
}

static void test_members_of_every_level(void **state)
{
    (void)state;
    put("cgroup.procs", "10\n");
    dir("a");
    put("a/cgroup.procs", "11\n12\n");
    dir("a/b");
    dir("a/b/c");
    put("a/b/c/cgroup.procs", "13\n");
    dir("a/e");
    dir("a/e/f");
    dir("d");
    /* A threaded group: its process list cannot be read, its threads can. */
    dir("d/cgroup.procs");
    put("d/cgroup.threads", "14\n");
    struct pid_list l = {NULL, 0, 0};
    struct cgtree w = {0};
    assert_int_equal(cgtree_walk(top, CGTREE_MEMBERS, &l, &w), 0);
    assert_int_equal(l.n, 5);
    for (pid_t p = 10; p <= 14; p++) assert_true(has(&l, p));
    assert_int_equal(w.groups, 7); /* a, a/b, a/b/c, a/e, a/e/f, d, d/cgroup.procs */
    assert_int_equal(w.cut, 0);
    descendants_list_free(&l);
    /* Removal: the groups with members stay, and those above them; the
     * empty ones go, the deepest first. */
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE, NULL, &w), -1);
    assert_false(exists("a/e"));
    assert_false(exists("d/cgroup.procs"));
    assert_true(exists("a/b/c") && exists("d"));
    assert_int_equal(w.removed, 3);
    assert_int_equal(w.busy, 5); /* a/b/c, a/b, a, d and the top */
    char why[128];
    assert_non_null(strstr(cgtree_why(&w, why, sizeof why), "5 of its groups are not empty"));
}

/* A chain of n empty groups named x below top, made with fds (its path is
 * longer than PATH_MAX). */
static void chain(int n)
{
    int fd = open(top, O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < n; i++) {
        assert_int_equal(mkdirat(fd, "x", 0755), 0);
        int next = openat(fd, "x", O_RDONLY | O_DIRECTORY);
        assert_true(next >= 0);
        close(fd);
        fd = next;
    }
    close(fd);
}

static void test_a_tree_deeper_than_any_path_is_removed(void **state)
{
    (void)state;
    chain(3000);
    for (int i = 0; i < 20; i++) {
        char n[16];
        snprintf(n, sizeof n, "w%d", i);
        dir(n);
    }
    struct cgtree w = {.seconds = 60}; /* depth is what is tested, not time (ASan, a loaded machine) */
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE | CGTREE_MEMBERS, NULL, &w), 0);
    printf("3021 groups walked and removed in %.1f ms\n", w.took * 1e3);
    assert_int_equal(w.groups, 3020);
    assert_int_equal(w.removed, 3021);
    assert_int_equal(access(top, F_OK), -1);
    assert_int_equal(mkdir(top, 0700), 0); /* for the teardown */
}

static void test_a_walk_cut_at_its_count_says_so_and_the_next_goes_on(void **state)
{
    (void)state;
    for (int i = 0; i < 25; i++) {
        char n[16];
        snprintf(n, sizeof n, "g%d", i);
        dir(n);
    }
    struct cgtree w = {.max = 10, .seconds = 60};
    char why[128];
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE, NULL, &w), -1);
    assert_int_equal(w.cut, CGTREE_CUT_COUNT);
    assert_int_equal(w.groups, 10);
    assert_int_equal(w.removed, 10);
    assert_true(exists("."));
    assert_non_null(strstr(cgtree_why(&w, why, sizeof why), "more than 10 groups"));
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE, NULL, &w), -1);
    assert_int_equal(w.cut, CGTREE_CUT_COUNT);
    assert_int_equal(w.removed, 10);
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE, NULL, &w), 0);
    assert_int_equal(w.removed, 6);
    assert_int_equal(access(top, F_OK), -1);
    assert_int_equal(mkdir(top, 0700), 0);
}

static void test_a_walk_cut_at_its_time_says_so(void **state)
{
    (void)state;
    dir("a");
    dir("b");
    struct cgtree w = {.seconds = 1e-9};
    char why[128];
    assert_int_equal(cgtree_walk(top, CGTREE_REMOVE, NULL, &w), -1);
    assert_int_equal(w.cut, CGTREE_CUT_TIME);
    assert_int_equal(w.groups, 0);
    assert_true(exists("a") && exists("b"));
    assert_non_null(strstr(cgtree_why(&w, why, sizeof why), "took more than"));
}

static void test_a_symlink_is_not_followed(void **state)
{
    (void)state;
    char other[80], link[96];
    snprintf(other, sizeof other, "%s.other", top);
    assert_int_equal(mkdir(other, 0755), 0);
    char p[128];
    snprintf(p, sizeof p, "%s/cgroup.procs", other);
    FILE *f = fopen(p, "w");
    fputs("99\n", f);
    fclose(f);
    dir("a");
    snprintf(link, sizeof link, "%s/a/s", top);
    assert_int_equal(symlink(other, link), 0);
    struct pid_list l = {NULL, 0, 0};
    struct cgtree w = {0};
    assert_int_equal(cgtree_walk(top, CGTREE_MEMBERS, &l, &w), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(w.groups, 1);
    descendants_list_free(&l);
    unlink(p);
    rmdir(other);
}

/* In a child with a mount namespace of its own: a tmpfs mounted on a
 * group below holds a member list that must not be read. */
static void test_a_mount_point_is_not_entered(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char m[128], p[160];
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) _exit(77);
        snprintf(m, sizeof m, "%s/m", top);
        if (mkdir(m, 0755) < 0 || mount("tmpfs", m, "tmpfs", 0, NULL) < 0) _exit(77);
        snprintf(p, sizeof p, "%s/cgroup.procs", m);
        FILE *f = fopen(p, "w");
        if (!f) _exit(2);
        fputs("98\n", f);
        fclose(f);
        struct pid_list l = {NULL, 0, 0};
        struct cgtree w = {0};
        int r = cgtree_walk(top, CGTREE_MEMBERS | CGTREE_REMOVE, &l, &w);
        /* Not entered, not removable (a mount point is busy). */
        _exit(r == -1 && l.n == 0 && w.groups == 0 && w.busy == 1 ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        printf("skipped: no mount namespace for the test: %s\n", strerror(EPERM));
        return;
    }
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_a_top_that_is_gone_is_an_empty_walk(void **state)
{
    (void)state;
    char p[96];
    snprintf(p, sizeof p, "%s/none", top);
    struct pid_list l = {NULL, 0, 0};
    struct cgtree w = {0};
    assert_int_equal(cgtree_walk(p, CGTREE_MEMBERS | CGTREE_REMOVE, &l, &w), 0);
    assert_int_equal(l.n + w.groups + w.removed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_members_of_every_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_tree_deeper_than_any_path_is_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_walk_cut_at_its_count_says_so_and_the_next_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_walk_cut_at_its_time_says_so, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_symlink_is_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_mount_point_is_not_entered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_top_that_is_gone_is_an_empty_walk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
