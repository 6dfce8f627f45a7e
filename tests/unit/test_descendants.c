/*
 * test_descendants.c - reading /proc children files and killing every
 * descendant (agent/core/descendants.c): only whole numbers are parsed; a
 * file longer than any fixed buffer (thousands of pids) is read whole, a pid
 * across the 4 KiB mark included; 700 real children (over 4 KiB of pids) are listed and
 * all killed and reaped within the deadline, and so is a chain of processes
 * that each wait for the next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/descendants.h"
#include "agent/core/spawn.h"

#include <ev.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void test_parse_whole_numbers_only(void **state)
{
    (void)state;
    struct pid_list l = {NULL, 0, 0};
    const char *t = "12 345 6789 ";
    assert_int_equal(descendants_parse(t, strlen(t), &l), 3);
    assert_int_equal(l.pid[0], 12);
    assert_int_equal(l.pid[2], 6789);
    /* Cut short: the last number may be the start of a longer one. */
    t = "12 345 67";
    assert_int_equal(descendants_parse(t, strlen(t), &l), 2);
    assert_int_equal(l.n, 5);
    assert_int_equal(l.pid[4], 345);
    /* Zero, and pids past the kernel's limit, are not pids. */
    t = "0 99999999999999999999 4194304 ";
    assert_int_equal(descendants_parse(t, strlen(t), &l), 1);
    assert_int_equal(l.pid[5], 4194304);
    assert_int_equal(descendants_parse("", 0, &l), 0);
    descendants_list_free(&l);
}

static void test_read_a_file_longer_than_4k(void **state)
{
    (void)state;
    char path[] = "/tmp/test_descendants.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    /* "100000 " is 7 bytes: a pid spans byte 4096 (and 8192). */
    size_t bytes = 0;
    int n = 3000;
    for (int i = 0; i < n; i++) bytes += (size_t)fprintf(f, "%d ", 100000 + i);
    fclose(f);
    assert_true(bytes > 3 * 4096);
    struct pid_list l = {NULL, 0, 0};
    assert_int_equal(descendants_read(path, &l), n);
    for (int i = 0; i < n; i++) assert_int_equal(l.pid[i], 100000 + i);
    descendants_list_free(&l);
    unlink(path);
    assert_int_equal(descendants_read(path, &l), -1);
}

static struct ev_loop *loop;

static void children_of_self(struct pid_list *l)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    assert_true(descendants_read(path, l) >= 0);
}

static void test_hundreds_of_children_listed_and_killed(void **state)
{
    (void)state;
    enum { N = 700 };
    static pid_t kids[N];
    char *argv[] = {"sleep", "1000", NULL};
    for (int i = 0; i < N; i++) assert_int_equal(posix_spawnp(&kids[i], "sleep", NULL, NULL, argv, environ), 0);
    struct pid_list l = {NULL, 0, 0};
    children_of_self(&l);
    assert_int_equal(l.n, N);
    for (int i = 0; i < N; i++) assert_int_equal(l.pid[i], kids[i]);
    descendants_list_free(&l);

    assert_int_equal(descendants_kill(loop, 10.0), 0);
    children_of_self(&l);
    assert_int_equal(l.n, 0);
    descendants_list_free(&l);
}

static void test_a_deep_chain_killed(void **state)
{
    (void)state;
    /* Each shell forks the next and waits for it; the bottom says it is
     * there through fd 3. We are a subreaper, as the agent is. */
    int p[2];
    assert_int_equal(pipe(p), 0);
    char *argv[] = {"sh", "-c", "f() { if [ $1 -gt 0 ]; then f $(($1 - 1)) & wait; else echo x >&3; sleep 1000; fi; }; f 300",
                    NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 3);
    pid_t top;
    assert_int_equal(posix_spawnp(&top, "sh", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    assert_int_equal(descendants_kill(loop, 10.0), 0);
    struct pid_list l = {NULL, 0, 0};
    children_of_self(&l);
    assert_int_equal(l.n, 0);
    descendants_list_free(&l);
}

/* State and start time: ours, a child's (later, or the same tick), none
 * for a pid that is not there; a name with ") " in it does not fool it. */
static void test_stat_state_and_start_time(void **state)
{
    (void)state;
    char st;
    unsigned long long mine, its;
    assert_int_equal(descendants_stat(getpid(), &st, &mine), 0);
    assert_int_equal(st, 'R');
    assert_true(mine > 0);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_NAME, "a) b c d");
        pause();
        _exit(0);
    }
    /* Until the child has renamed itself (bounded). */
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    for (int i = 0; i < 2000 && !strstr(comm, "a) b"); i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
            fclose(f);
        }
        if (!strstr(comm, "a) b")) usleep(1000);
    }
    assert_non_null(strstr(comm, "a) b"));
    assert_int_equal(descendants_stat(pid, &st, &its), 0);
    assert_true(st == 'S' || st == 'R');
    assert_true(its >= mine);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(descendants_stat(pid, &st, &its), -1);
}

int main(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    loop = ev_default_loop(EVFLAG_AUTO);
    reaper_init(loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_whole_numbers_only),
        cmocka_unit_test(test_read_a_file_longer_than_4k),
        cmocka_unit_test(test_hundreds_of_children_listed_and_killed),
        cmocka_unit_test(test_a_deep_chain_killed),
        cmocka_unit_test(test_stat_state_and_start_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
