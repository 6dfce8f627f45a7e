/*
 * test_files_copy.c - the cross-filesystem copy's file step (agent/files/copy.c,
 * files_copy_fd): it copies only what its own fstat calls a regular file, so a
 * source swapped for /dev/zero or a FIFO after its lstat is refused
 * (FILES_ENOTREG) before any destination file exists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/files/files.h"
#include "agent/files/files_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static int dfd = -1;

static int setup(void **s)
{
    (void)s;
    strcpy(dir, "/tmp/test_fscopy.XXXXXX");
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dfd >= 0 ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    close(dfd);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* What the caller's lstat said: a regular file. */
static struct stat regular(void)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mode = S_IFREG | 0640;
    return st;
}

static void refused(int in, const char *spath)
{
    struct stat st = regular(), out;
    struct files_err e;
    assert_true(in >= 0);
    assert_int_equal(files_copy_fd(in, dfd, "copy", &st, spath, &e), -1);
    assert_int_equal(e.errnum, FILES_ENOTREG);
    assert_string_equal(e.path, spath);
    files_err_free(&e);
    assert_int_equal(fstatat(dfd, "copy", &out, AT_SYMLINK_NOFOLLOW), -1); /* nothing created */
    assert_int_equal(errno, ENOENT);
    close(in);
}

static void test_refuses_dev_zero(void **s)
{
    (void)s;
    refused(open("/dev/zero", O_RDONLY | O_NONBLOCK | O_CLOEXEC), "/src");
}

static void test_refuses_a_fifo(void **s)
{
    (void)s;
    assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
    refused(openat(dfd, "fifo", O_RDONLY | O_NONBLOCK | O_CLOEXEC), "/src-fifo");
}

static void test_refuses_a_directory(void **s)
{
    (void)s;
    refused(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "/");
}

static void test_copies_a_regular_file(void **s)
{
    (void)s;
    int src = openat(dfd, "src", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(src >= 0);
    assert_int_equal(write(src, "hello", 5), 5);
    assert_int_equal(lseek(src, 0, SEEK_SET), 0);
    struct stat st = regular(), out;
    struct files_err e;
    assert_int_equal(files_copy_fd(src, dfd, "copy", &st, "src", &e), 0);
    close(src);
    assert_int_equal(fstatat(dfd, "copy", &out, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISREG(out.st_mode));
    assert_int_equal(out.st_size, 5);
    assert_int_equal(out.st_mode & 07777, 0640); /* st's mode */
    /* Created exclusively: a second copy to the same name is refused. */
    src = openat(dfd, "src", O_RDONLY | O_CLOEXEC);
    assert_int_equal(files_copy_fd(src, dfd, "copy", &st, "src", &e), -1);
    assert_int_equal(e.errnum, EEXIST);
    files_err_free(&e);
    close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refuses_dev_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_a_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copies_a_regular_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
