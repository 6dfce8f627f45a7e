/*
 * test_asuser_path.c - the one resolver of a request's path and a Start's
 * cwd (agent/api/asuser/path.c): the table both routes are tested with
 * (path_table.h), with and without a defaultWorkdir, then the bounds, and
 * the lexical clean and base name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/path.h"

#include <stdio.h>
#include <string.h>

static struct buf b; /* the last result */

static const char *resolve_in(const char *home, const char *workdir, const char *path)
{
    const char *why = NULL;
    buf_free(&b);
    buf_init(&b, ASUSER_PATH_MAX);
    if (asuser_path_resolve(home, workdir, path, &b, &why) < 0) return why;
    return b.data;
}

static const char *resolve(const char *home, const char *path) { return resolve_in(home, NULL, path); }

/* s with $H, $W and $D replaced, into out. */
static void fill(const char *s, const char *h, const char *w, const char *d, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        const char *v = NULL;
        if (s[0] == '$' && (s[1] == 'H' || s[1] == 'W' || s[1] == 'D')) v = s[1] == 'H' ? h : s[1] == 'W' ? w : d;
        if (v) {
            n += (size_t)snprintf(out + n, cap - n, "%s", v);
            s++;
        } else {
            out[n++] = *s;
        }
        assert_true(n < cap);
    }
    out[n] = '\0';
}

static const char *const table[][2] = {
#define PATH_ROW(in, want) {in, want},
#include "path_table.h"
#undef PATH_ROW
};

static void check_table(const char *home, const char *workdir)
{
    const char *w = workdir && *workdir ? workdir : home;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        char in[256], want[256];
        fill(table[i][0], home, w, "d", in, sizeof in);
        fill(table[i][1], home, w, "d", want, sizeof want);
        const char *got = resolve_in(home, workdir, in);
        if (!strcmp(want, "!")) assert_string_equal(got, "cannot expand another user's home (~user)");
        else assert_string_equal(got, want);
    }
}

static void test_table(void **s)
{
    (void)s;
    check_table("/home/user", NULL);
    check_table("/home/user", "");       /* "" is none */
    check_table("/home/user", "/srv/w"); /* only "" moves */
    buf_free(&b);
}

static void test_resolve(void **s)
{
    (void)s;
    assert_string_equal(resolve("/home/user", "a.txt"), "/home/user/a.txt");
    assert_string_equal(resolve("/home/user/", "~/x//y/./z/"), "/home/user/x/y/z");
    assert_string_equal(resolve("/home/user", "../../../etc"), "/etc"); /* never above "/" */
    assert_string_equal(resolve("/", "a/../.."), "/");
    assert_string_equal(resolve("/home/user", "-dash\nnew\xff"), "/home/user/-dash\nnew\xff");
    assert_string_equal(resolve("/home/user", "/tmp//x/../y/"), "/tmp//x/../y/");
    assert_string_equal(resolve("/home/user", "~root/x"), "cannot expand another user's home (~user)");
    assert_string_equal(resolve("relative", "x"), "the user's home is not an absolute path");
    assert_string_equal(resolve("/h", "..."), "/h/...");
    /* The defaultWorkdir is taken as given, as an absolute path is. */
    assert_string_equal(resolve_in("/home/user", "/srv//w/", ""), "/srv//w/");
    assert_string_equal(resolve_in("/home/user", "/srv/w", "x"), "/home/user/x");
    /* Bounded: a hostile path cannot grow the buffer past ASUSER_PATH_MAX. */
    static char longp[ASUSER_PATH_MAX + 2];
    memset(longp, 'x', sizeof longp - 1);
    assert_string_equal(resolve("/home/user", longp), "path too long");
    longp[0] = '/';
    assert_string_equal(resolve("/home/user", longp), "path too long");
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table), cmocka_unit_test(test_resolve),
                                       cmocka_unit_test(test_clean_and_base)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
