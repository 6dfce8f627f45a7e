/*
 * test_asuser_path.c - a request's path against the user's home (agent/api/asuser/path.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/path.h"

#include <string.h>

static struct buf b; /* the last result */

static const char *resolve(const char *home, const char *path)
{
    const char *why = NULL;
    buf_free(&b);
    buf_init(&b, ASUSER_PATH_MAX);
    if (asuser_path_resolve(home, path, &b, &why) < 0) return why;
    return b.data;
}

static void test_resolve(void **s)
{
    (void)s;
    assert_string_equal(resolve("/home/user", "a.txt"), "/home/user/a.txt");
    assert_string_equal(resolve("/home/user", ""), "/home/user");
    assert_string_equal(resolve("/home/user", "~"), "/home/user");
    assert_string_equal(resolve("/home/user/", "~/x//y/./z/"), "/home/user/x/y/z");
    assert_string_equal(resolve("/home/user", "../../../etc"), "/etc");
    assert_string_equal(resolve("/", "a/../.."), "/");
    assert_string_equal(resolve("/home/user", "-dash\nnew\xff"), "/home/user/-dash\nnew\xff");
    /* An absolute path is taken as given. */
    assert_string_equal(resolve("/home/user", "/tmp//x/../y/"), "/tmp//x/../y/");
    assert_string_equal(resolve("/home/user", "~root/x"), "cannot expand another user's home (~user)");
    assert_string_equal(resolve("relative", "x"), "the user's home is not an absolute path");
    assert_string_equal(resolve("/h", "..."), "/h/...");
    buf_free(&b);
}

static void test_clean_and_base(void **s)
{
    (void)s;
    char p[] = "//a/./b/../../c/d/..";
    asuser_path_clean(p);
    assert_string_equal(p, "/c");
    char q[] = "/";
    asuser_path_clean(q);
    assert_string_equal(q, "/");
    assert_string_equal(asuser_path_base("/a/b"), "b");
    assert_string_equal(asuser_path_base("/"), "/");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolve), cmocka_unit_test(test_clean_and_base)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
