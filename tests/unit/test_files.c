/*
 * test_files.c - the file service's shared pieces (agent/files/files.c):
 * path helpers, the temporary names and their marks, entry helpers, the
 * error record, mkdir -p of a parent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/files/files.h"
#include "agent/files/files_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void join_is(const char *dir, const char *name, const char *want)
{
    char *p = files_join(dir, name);
    assert_non_null(p);
    assert_string_equal(p, want);
    free(p);
}

static void test_join(void **s)
{
    (void)s;
    /* As os.path.join(dir, name) for a relative name. */
    join_is("a", "b", "a/b");
    join_is("a/", "b", "a/b");
    join_is("a//", "b", "a//b");
    join_is("/", "b", "/b");
    join_is("", "b", "b");
    join_is("a", "", "a/");
    join_is("d\xff", "n\n", "d\xff/n\n");
}

static void last_is(const char *path, const char *want)
{
    size_t n;
    const char *p = files_last_name(path, &n);
    assert_true(p >= path && p + n <= path + strlen(path));
    if (n != strlen(want) || memcmp(p, want, n)) fail_msg("last name of '%s': '%.*s', want '%s'", path, (int)n, p, want);
}

static void test_last_name(void **s)
{
    (void)s;
    last_is("a/b", "b");
    last_is("a/b//", "b");
    last_is("b", "b");
    last_is("/a", "a");
    last_is("/", "/");
    last_is("//", "/");
    last_is("a/..", "..");
    last_is(".", ".");
}

static void strip_is(const char *path, const char *want)
{
    char *p = files_strip_slashes(path);
    assert_non_null(p);
    assert_string_equal(p, want);
    free(p);
}

static void test_strip_slashes(void **s)
{
    (void)s;
    strip_is("a/b//", "a/b");
    strip_is("a", "a");
    strip_is("/", "/");
    strip_is("//", "/");
    strip_is("", "");
    strip_is("a//b", "a//b");
}

static void test_tmp_prefix(void **s)
{
    (void)s;
    char out[PATH_MAX + 64];
    assert_int_equal(files_tmp_prefix(out, sizeof out, "d/e/name", 16), 9);
    assert_string_equal(out, "d/e/.name");
    assert_int_equal(files_tmp_prefix(out, sizeof out, "name", 16), 5);
    assert_string_equal(out, ".name");
    /* The name part is cut to 200 bytes, so the whole stays under NAME_MAX. */
    char longname[300];
    memset(longname, 'n', 299);
    longname[299] = '\0';
    assert_int_equal(files_tmp_prefix(out, sizeof out, longname, 16), 201);
    assert_int_equal(strlen(out), 201);
    /* Without room for the suffix: refused. */
    assert_int_equal(files_tmp_prefix(out, 10, "d/name", 4), -1);
    assert_int_equal(files_tmp_prefix(out, 11, "d/name", 4), 7);
}

static void test_tmp_name(void **s)
{
    (void)s;
#define TMP(x) files_is_tmp_name(x, sizeof x - 1)
    assert_true(TMP(".a.txt.sbx-Ab12yZ"));   /* files_write's */
    assert_true(TMP(".dir.sbx-1234-7f"));     /* files_move's copy */
    assert_true(TMP("..sbx-x"));
    assert_false(TMP("a.txt.sbx-Ab12yZ"));   /* not hidden */
    assert_false(TMP(".a.txt.sbx-"));
    assert_false(TMP(".a.sbx-ab/c"));
    assert_false(TMP(".a.sbx-ab.c"));
    assert_false(TMP(".sbx-abc"));           /* no NAME */
    assert_false(TMP(".plain"));
    assert_false(files_is_tmp_name("", 0));
#undef TMP
}

static void kind_is(const char *name, enum files_tmp_kind want, const char *target)
{
    const char *t = NULL;
    size_t tl = 0;
    enum files_tmp_kind k = files_tmp_kind(name, strlen(name), &t, &tl);
    if (k != want) fail_msg("kind of '%s': %d, want %d", name, (int)k, (int)want);
    if (target && (tl != strlen(target) || memcmp(t, target, tl)))
        fail_msg("target of '%s': '%.*s', want '%s'", name, (int)tl, t, target);
}

static void test_tmp_kind(void **s)
{
    (void)s;
    kind_is(".a.txt.sbx-N-Ab12yZAb12yZ", FILES_TMP_NEW, "a.txt");       /* a write making a.txt */
    kind_is(".a.txt.sbx-R-Ab12yZAb12yZ", FILES_TMP_REPLACES, "a.txt");  /* one replacing it */
    kind_is(".a.sbx-b.sbx-R-q", FILES_TMP_REPLACES, "a.sbx-b");         /* the last mark counts */
    kind_is(".a.txt.sbx-Ab12yZ", FILES_TMP_OTHER, "a.txt");              /* a write without a mark */
    kind_is(".dir.sbx-1234-7f", FILES_TMP_OTHER, "dir");                 /* a move's copy */
    kind_is(".a.sbx-N-", FILES_TMP_OTHER, "a");                          /* a mark and nothing after */
    kind_is(".a.sbx-X-abc", FILES_TMP_OTHER, "a");                       /* no such mark */
    kind_is("a.sbx-N-abc", FILES_TMP_NONE, NULL);                        /* not hidden */
    kind_is(".a.sbx-N-ab.c", FILES_TMP_NONE, NULL);
    kind_is(".sbx-N-abc", FILES_TMP_NONE, NULL);                         /* no NAME */
    kind_is(".plain", FILES_TMP_NONE, NULL);
    /* A name as files_tmp_prefix cuts it keeps FILES_TMP_NAME_CUT bytes. */
    char longname[300], tmp[PATH_MAX + 64];
    memset(longname, 'n', 299);
    longname[299] = '\0';
    int pre = files_tmp_prefix(tmp, sizeof tmp, longname, 20);
    memcpy(tmp + pre, ".sbx-N-abc", sizeof ".sbx-N-abc");
    const char *t;
    size_t tl;
    assert_int_equal(files_tmp_kind(tmp, strlen(tmp), &t, &tl), FILES_TMP_NEW);
    assert_int_equal(tl, FILES_TMP_NAME_CUT);
    assert_true(files_is_tmp_name(tmp, strlen(tmp)));
}

static void test_dots(void **s)
{
    (void)s;
    assert_true(files_is_dots("."));
    assert_true(files_is_dots(".."));
    assert_false(files_is_dots("..."));
    assert_false(files_is_dots(".a"));
    assert_false(files_is_dots(""));
}

static void test_entry_helpers(void **s)
{
    (void)s;
    assert_string_equal(files_type_name(S_IFREG | 0644), "file");
    assert_string_equal(files_type_name(S_IFDIR), "dir");
    assert_string_equal(files_type_name(S_IFLNK), "symlink");
    assert_string_equal(files_type_name(S_IFIFO), "fifo");
    assert_string_equal(files_type_name(S_IFSOCK), "socket");
    assert_string_equal(files_type_name(S_IFCHR), "char");
    assert_string_equal(files_type_name(S_IFBLK), "block");
    assert_string_equal(files_type_name(0), "unknown");
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mtim.tv_sec = 1700000000;
    st.st_mtim.tv_nsec = 123456789;
    /* CPython's fill_time(): sec + nsec * 1e-9, in that order. */
    assert_true(files_mtime(&st) == (double)1700000000 + (double)123456789 * 1e-9);
}

static void test_errors(void **s)
{
    (void)s;
    struct files_err e;
    assert_int_equal(files_fail(&e, ENOENT, "/a"), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_false(e.at_fd);
    assert_string_equal(e.path, "/a");
    assert_string_equal(e.message, strerror(ENOENT));
    files_err_free(&e);
    assert_null(e.path);

    assert_int_equal(files_fail_msg(&e, EBUSY, "/", "Refusing to remove /"), -1);
    assert_int_equal(e.errnum, EBUSY);
    assert_string_equal(e.message, "Refusing to remove /");
    files_err_free(&e);

    assert_int_equal(files_fail(&e, FILES_ENOTREG, "/dev/null"), -1);
    assert_string_equal(e.message, "Not a regular file");
    assert_string_equal(files_strerror(FILES_ENOTREG), "Not a regular file");
    files_err_free(&e);

    assert_int_equal(files_fail_fd(&e, EPIPE), -1);
    assert_true(e.at_fd);
    assert_null(e.path);
    assert_string_equal(e.message, strerror(EPIPE));

    /* A path the caller already allocated; NULL is out of memory. */
    assert_int_equal(files_fail_take(&e, EIO, strdup("x/y")), -1);
    assert_string_equal(e.path, "x/y");
    files_err_free(&e);
    assert_int_equal(files_fail_take(&e, EIO, NULL), -1);
    assert_int_equal(e.errnum, ENOMEM);
    assert_null(e.path);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One-character parents, relative (the one that was taken for "/"). */
static void test_make_parents(void **s)
{
    (void)s;
    char tmpl[] = "/tmp/test_files.XXXXXX", cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_non_null(mkdtemp(tmpl));
    assert_int_equal(chdir(tmpl), 0);
    assert_int_equal(files_make_parents("a/f"), 0);
    assert_true(is_dir("a"));
    assert_int_equal(files_make_parents("b//f/"), 0);
    assert_true(is_dir("b"));
    assert_int_equal(files_make_parents("c/d/e/f"), 0);
    assert_true(is_dir("c/d/e"));
    assert_false(is_dir("c/d/e/f"));
    assert_int_equal(files_make_parents("f"), 0);   /* no parent */
    assert_int_equal(files_make_parents("/f"), 0);  /* "/" */
    assert_int_equal(files_make_parents("//f"), 0);
    assert_int_equal(system("rm -rf a b c"), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rmdir(tmpl), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),      cmocka_unit_test(test_last_name),
        cmocka_unit_test(test_strip_slashes), cmocka_unit_test(test_tmp_prefix),
        cmocka_unit_test(test_dots),      cmocka_unit_test(test_entry_helpers),
        cmocka_unit_test(test_tmp_name),  cmocka_unit_test(test_tmp_kind),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_make_parents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
