/*
 * test_files_write.c - the atomic write's temporary file (agent/files/write.c):
 * its name carries whether it replaces a file (and is marked again when
 * that changed meanwhile), the named hook hears every name before the file
 * exists, a refusing hook aborts the write, and
 * nothing is left beside the target either way.
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

static char dir[] = "/tmp/test_fswrite.XXXXXX";

struct heard {
    char names[4][PATH_MAX + 64];
    int n, existed, refuse;
};

static int named(void *ctx, const char *tmp)
{
    struct heard *h = ctx;
    struct stat st;
    if (h->n < 4) snprintf(h->names[h->n], sizeof h->names[0], "%s", tmp);
    h->n++;
    h->existed |= lstat(tmp, &st) == 0; /* told before it is made */
    return h->refuse;
}

static int temp_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".sbx-")) n++;
    closedir(d);
    return n;
}

/* A prepare that makes the target meanwhile, as another writer could. */
static const char *made_meanwhile;

static int make_target(void *ctx, int fd, const char *replaced)
{
    (void)ctx, (void)fd, (void)replaced;
    if (made_meanwhile) close(open(made_meanwhile, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    return 0;
}

/* Write "data" to path through the hooks from a pipe. */
static int write_via(const char *path, struct heard *h, struct files_err *e)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "data", 4), 4);
    close(p[1]);
    struct files_write_opts o = {0};
    struct files_write_hooks hooks = {.prepare = make_target, .named = named, .ctx = h};
    long long bytes;
    int r = files_write_hooked(path, p[0], &o, &hooks, &bytes, e);
    close(p[0]);
    return r;
}

static enum files_tmp_kind kind_of(const char *tmp)
{
    size_t n, tl;
    const char *name = files_last_name(tmp, &n), *t;
    return files_tmp_kind(name, n, &t, &tl);
}

static void test_marks(void **s)
{
    (void)s;
    char path[256];
    snprintf(path, sizeof path, "%s/f.txt", dir);
    struct heard h = {0};
    struct files_err e;
    assert_int_equal(write_via(path, &h, &e), 0);
    assert_int_equal(h.n, 1);
    assert_false(h.existed);
    assert_int_equal(kind_of(h.names[0]), FILES_TMP_NEW);
    assert_int_equal(strncmp(h.names[0], dir, strlen(dir)), 0); /* beside the target */
    assert_int_equal(temp_files(), 0);

    struct heard again = {0};
    assert_int_equal(write_via(path, &again, &e), 0);
    assert_int_equal(kind_of(again.names[0]), FILES_TMP_REPLACES);
    assert_string_not_equal(again.names[0], h.names[0]);
    assert_int_equal(temp_files(), 0);
    FILE *f = fopen(path, "r");
    char got[8] = {0};
    assert_int_equal(fread(got, 1, sizeof got, f), 4);
    fclose(f);
    assert_string_equal(got, "data");
    unlink(path);
}

static void test_remarked(void **s)
{
    (void)s;
    char path[256];
    snprintf(path, sizeof path, "%s/late.txt", dir);
    struct heard h = {0};
    struct files_err e;
    made_meanwhile = path; /* the target appears while the file is written */
    assert_int_equal(write_via(path, &h, &e), 0);
    made_meanwhile = NULL;
    assert_int_equal(h.n, 2);
    assert_int_equal(kind_of(h.names[0]), FILES_TMP_NEW);
    assert_int_equal(kind_of(h.names[1]), FILES_TMP_REPLACES); /* renamed to the other mark first */
    assert_int_equal(temp_files(), 0);
    unlink(path);
}

static void test_refusal(void **s)
{
    (void)s;
    char path[256];
    snprintf(path, sizeof path, "%s/g.txt", dir);
    struct heard h = {.refuse = EAGAIN};
    struct files_err e;
    assert_int_equal(write_via(path, &h, &e), -1);
    assert_int_equal(e.errnum, EAGAIN);
    files_err_free(&e);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(temp_files(), 0);
}

static int setup(void **s)
{
    (void)s;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_remarked),
        cmocka_unit_test(test_refusal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
