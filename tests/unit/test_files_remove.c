/*
 * test_files_remove.c - the tree removal (agent/files/remove.c) when fstat
 * fails on a directory it has just opened: the failure is fstat's own errno
 * and names the directory; nothing is read from the unfilled struct stat
 * (the pre-refactor walk read it to decide between EBUSY and errno).
 *
 * fstat is made to fail with a seccomp filter in a forked child: EIO for
 * fstat(fd) (glibc issues it as fstat or newfstatat(fd, "", AT_EMPTY_PATH),
 * statx likewise) of one chosen fd number, the one the walk's root or first
 * subdirectory gets. The child reports by exit status, and an alarm bounds it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/files/files.h"
#include "agent/files/files_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static char dir[64], top[96];

static int setup(void **s)
{
    (void)s;
    strcpy(dir, "/tmp/test_fsremove.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(top, sizeof top, "%s/t", dir);
    char p[160];
    assert_int_equal(mkdir(top, 0700), 0);
    snprintf(p, sizeof p, "%s/sub", top);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/sub/f", top);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#ifdef ARCH
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + (i) * sizeof(__u64))
#define FAIL_EIO BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* fstat(fd), newfstatat(fd, "", AT_EMPTY_PATH) and statx(fd, "",
 * AT_EMPTY_PATH) fail with EIO; everything else goes through. */
static int fail_fstat_of(int fd)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        ALLOW,
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)fd, 1, 0),
        ALLOW,
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef SYS_fstat
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fstat, 0, 1),
        FAIL_EIO,
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(3)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 1),
        FAIL_EIO,
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 1),
        FAIL_EIO,
        ALLOW,
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* In a child: fstat fails for the walk's nth opened directory (0: the root);
 * files_remove must fail with EIO naming `want`, and leave the tree. */
static int child(int nth, const char *want)
{
    alarm(20);
    int probe = dup(0); /* the lowest free fd: what the walk's root gets */
    if (probe < 0) return 10;
    close(probe);
    if (fail_fstat_of(probe + nth) < 0) return 11;
    struct files_err e;
    if (files_remove(top, 1, &e) != -1) return 12;
    if (e.errnum != EIO) return 13;
    if (!e.path || strcmp(e.path, want) != 0) return 14;
    if (strcmp(e.message, strerror(EIO)) != 0) return 15;
    files_err_free(&e);
    return 0;
}

static void run_child(int nth, const char *want)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child(nth, want));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct stat st;
    assert_int_equal(stat(top, &st), 0); /* nothing removed */
}

static void test_fstat_fails_on_the_root(void **s)
{
    (void)s;
    run_child(0, top);
}

static void test_fstat_fails_on_a_subdirectory(void **s)
{
    (void)s;
    char want[160];
    snprintf(want, sizeof want, "%s/sub", top);
    run_child(1, want);
}
#else
static void test_fstat_fails_on_the_root(void **s)
{
    (void)s;
    skip();
}

static void test_fstat_fails_on_a_subdirectory(void **s)
{
    (void)s;
    skip();
}
#endif

/* And with fstat working, the same tree goes. */
static void test_removes_the_tree(void **s)
{
    (void)s;
    struct files_err e;
    assert_int_equal(files_remove(top, 1, &e), 0);
    struct stat st;
    assert_int_equal(lstat(top, &st), -1);
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fstat_fails_on_the_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fstat_fails_on_a_subdirectory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removes_the_tree, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
