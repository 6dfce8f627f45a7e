/*
 * test_files_compose.c - several files into one (agent/files/compose.c):
 * the bytes in order (a large source too, so copy_file_range goes round
 * more than once, and sources on another filesystem, the read/write way),
 * parents made, the sources removed only after, a symlink source read
 * through and removed itself, a symlink destination replaced; and each
 * refusal (a source that is the destination, missing, a directory, a FIFO)
 * before anything is made, leaving the old destination, the sources and
 * no temporary file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/files/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/test_fscompose.XXXXXX";
static char shm[] = "/dev/shm/test_fscompose.XXXXXX";

static char *in(const char *d, const char *name)
{
    static char p[16][PATH_MAX]; /* a ring: enough for one test's paths at once */
    static int k;
    char *out = p[k++ % 16];
    snprintf(out, PATH_MAX, "%s/%s", d, name);
    return out;
}

static void put(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

static size_t get(const char *path, char *out, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd, out + n, cap - n)) > 0) n += (size_t)r;
    close(fd);
    return n;
}

static int temp_files(const char *d)
{
    DIR *dd = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dd && (e = readdir(dd)))
        if (strstr(e->d_name, ".sbx-")) n++;
    if (dd) closedir(dd);
    return n;
}

static int compose(const char **srcs, size_t n, const char *dst, struct files_err *e)
{
    static const struct files_write_hooks none;
    long long bytes;
    return files_compose(srcs, n, dst, &none, &bytes, e);
}

static int setup(void **s)
{
    (void)s;
    assert_non_null(mkdtemp(dir));
    if (!mkdtemp(shm)) shm[0] = '\0';
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, shm);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_in_order(void **s)
{
    (void)s;
    static char big[3 << 20], back[4 << 20];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7 + i / 4096);
    put(in(dir, "a"), "first,", 6);
    put(in(dir, "b"), big, sizeof big);
    put(in(dir, "c"), "", 0);
    put(in(dir, "d"), ",last", 5);
    const char *srcs[] = {in(dir, "a"), in(dir, "b"), in(dir, "c"), in(dir, "d")};
    char *dst = strdup(in(dir, "x/y/out"));
    struct files_err e;
    assert_int_equal(compose(srcs, 4, dst, &e), 0);
    size_t n = get(dst, back, sizeof back);
    assert_int_equal(n, 6 + sizeof big + 5);
    assert_memory_equal(back, "first,", 6);
    assert_memory_equal(back + 6, big, sizeof big);
    assert_memory_equal(back + 6 + sizeof big, ",last", 5);
    struct stat st;
    for (int i = 0; i < 4; i++) assert_int_equal(lstat(srcs[i], &st), -1); /* removed after */
    assert_int_equal(temp_files(in(dir, "x/y")), 0);
    free(dst);
}

static void test_across_filesystems(void **s)
{
    (void)s;
    char back[64];
    if (!shm[0]) skip();
    put(in(shm, "s1"), "from shm;", 9);
    put(in(dir, "s2"), "from tmp", 8);
    const char *srcs[] = {in(shm, "s1"), in(dir, "s2")};
    char *dst = strdup(in(dir, "across"));
    struct files_err e;
    assert_int_equal(compose(srcs, 2, dst, &e), 0);
    assert_int_equal(get(dst, back, sizeof back), 17);
    assert_memory_equal(back, "from shm;from tmp", 17);
    free(dst);
}

static void test_symlinks(void **s)
{
    (void)s;
    char back[64];
    struct stat st;
    put(in(dir, "target"), "T", 1);
    assert_int_equal(symlink("target", in(dir, "link")), 0);
    put(in(dir, "old"), "O", 1);
    assert_int_equal(symlink("old", in(dir, "dlink")), 0);
    const char *srcs[] = {in(dir, "link")};
    char *dst = strdup(in(dir, "dlink"));
    struct files_err e;
    assert_int_equal(compose(srcs, 1, dst, &e), 0);
    assert_int_equal(lstat(dst, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the link at the destination replaced, not written through */
    assert_int_equal(get(in(dir, "old"), back, sizeof back), 1);
    assert_int_equal(lstat(in(dir, "link"), &st), -1);  /* the source's name removed */
    assert_int_equal(lstat(in(dir, "target"), &st), 0); /* not its target */
    free(dst);
}

static void test_refusals_leave_everything(void **s)
{
    (void)s;
    char back[64];
    struct files_err e;
    put(in(dir, "keep"), "KEEP", 4);
    put(in(dir, "r1"), "r1", 2);
    assert_int_equal(mkfifo(in(dir, "fifo"), 0600), 0);
    assert_int_equal(mkdir(in(dir, "sub"), 0755), 0);
    char *dst = strdup(in(dir, "keep"));
    struct {
        const char *second;
        int errnum;
    } cases[] = {{in(dir, "missing"), ENOENT}, {in(dir, "sub"), EISDIR}, {in(dir, "fifo"), FILES_ENOTREG},
                 {dst, EINVAL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *srcs[] = {in(dir, "r1"), cases[i].second};
        assert_int_equal(compose(srcs, 2, dst, &e), -1);
        assert_int_equal(e.errnum, cases[i].errnum);
        assert_string_equal(e.path, cases[i].second);
        files_err_free(&e);
        assert_int_equal(get(dst, back, sizeof back), 4);
        assert_int_equal(get(in(dir, "r1"), back, sizeof back), 2);
        assert_int_equal(temp_files(dir), 0);
    }
    free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_across_filesystems),
        cmocka_unit_test(test_symlinks),
        cmocka_unit_test(test_refusals_leave_everything),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
