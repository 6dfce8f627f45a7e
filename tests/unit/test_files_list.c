/*
 * test_files_list.c - the file service's listing and stat (agent/files/list.c):
 * what the callback gets, how it stops a listing, the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **s)
{
    (void)s;
    strcpy(dir, "/tmp/test_fslist.XXXXXX");
    assert_non_null(mkdtemp(dir));
    char p[128];
    snprintf(p, sizeof p, "%s/file", dir);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0640);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello", 5), 5);
    close(fd);
    snprintf(p, sizeof p, "%s/link", dir);
    assert_int_equal(symlink("file", p), 0);
    snprintf(p, sizeof p, "%s/sub", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char p[128];
    const char *names[] = {"file", "link", "sub"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (unlink(p) < 0) rmdir(p);
    }
    rmdir(dir);
    return 0;
}

struct seen {
    int n, stop_at, stop_with;
    int file, link, sub;
};

static int collect(void *ctx, const struct files_entry *ent)
{
    struct seen *c = ctx;
    char want[128];
    snprintf(want, sizeof want, "%s/%.*s", dir, (int)ent->nlen, ent->name);
    assert_string_equal(ent->path, want);
    assert_int_equal(ent->plen, strlen(want));
    if (!strcmp(ent->name, "file")) {
        c->file = 1;
        assert_true(S_ISREG(ent->st.st_mode));
        assert_int_equal(ent->st.st_size, 5);
        assert_null(ent->target);
    } else if (!strcmp(ent->name, "link")) {
        c->link = 1;
        assert_true(S_ISLNK(ent->st.st_mode)); /* lstat'ed */
        assert_int_equal(ent->tlen, 4);
        assert_memory_equal(ent->target, "file", 4);
    } else if (!strcmp(ent->name, "sub")) {
        c->sub = 1;
        assert_true(S_ISDIR(ent->st.st_mode));
    } else {
        fail_msg("unexpected entry '%s'", ent->name);
    }
    return ++c->n == c->stop_at ? c->stop_with : 0;
}

static void test_list_all(void **s)
{
    (void)s;
    struct seen c = {0, 0, 0, 0, 0, 0};
    struct files_err e;
    assert_int_equal(files_list(dir, collect, &c, &e), 0);
    assert_int_equal(c.n, 3);
    assert_true(c.file && c.link && c.sub);
    /* A trailing slash is not doubled in entry paths. */
    char slashed[80];
    snprintf(slashed, sizeof slashed, "%s/", dir);
    c = (struct seen){0, 0, 0, 0, 0, 0};
    assert_int_equal(files_list(slashed, collect, &c, &e), 0);
    assert_int_equal(c.n, 3);
}

static void test_list_stops(void **s)
{
    (void)s;
    struct seen c = {0, 2, ENOSPC, 0, 0, 0};
    struct files_err e;
    assert_int_equal(files_list(dir, collect, &c, &e), -1);
    assert_int_equal(c.n, 2);
    assert_int_equal(e.errnum, ENOSPC);
    assert_string_equal(e.path, dir);
    files_err_free(&e);
}

static void test_list_errors(void **s)
{
    (void)s;
    struct seen c = {0, 0, 0, 0, 0, 0};
    struct files_err e;
    char p[128];
    snprintf(p, sizeof p, "%s/file", dir);
    assert_int_equal(files_list(p, collect, &c, &e), -1);
    assert_int_equal(e.errnum, ENOTDIR);
    assert_string_equal(e.path, p);
    assert_string_equal(e.message, strerror(ENOTDIR));
    files_err_free(&e);
    assert_int_equal(files_list("", collect, &c, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    files_err_free(&e);
    assert_int_equal(c.n, 0);
}

static void test_stat(void **s)
{
    (void)s;
    char p[128];
    struct files_entry ent;
    struct files_err e;
    snprintf(p, sizeof p, "%s/link", dir);
    assert_int_equal(files_stat(p, 0, &ent, &e), 0);
    assert_true(S_ISLNK(ent.st.st_mode));
    assert_int_equal(ent.nlen, 4);
    assert_memory_equal(ent.name, "link", 4);
    assert_string_equal(ent.path, p);
    assert_memory_equal(ent.target, "file", 4);
    files_entry_free(&ent);
    assert_int_equal(files_stat(p, 1, &ent, &e), 0);
    assert_true(S_ISREG(ent.st.st_mode));
    assert_null(ent.target);
    files_entry_free(&ent);
    /* "sub/": the name without the slash, the path as given. */
    snprintf(p, sizeof p, "%s/sub/", dir);
    assert_int_equal(files_stat(p, 0, &ent, &e), 0);
    assert_int_equal(ent.nlen, 3);
    assert_memory_equal(ent.name, "sub", 3);
    assert_int_equal(ent.plen, strlen(p));
    files_entry_free(&ent);
    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(files_stat(p, 0, &ent, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_string_equal(e.path, p);
    files_err_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_all),
        cmocka_unit_test(test_list_stops),
        cmocka_unit_test(test_list_errors),
        cmocka_unit_test(test_stat),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
