/*
 * test_tree_model.c - the watched tree's model (inotify/tree/tree_model.c): paths joined
 * as os.path.join does, renames carrying whole subtrees, removal, the
 * IN_IGNORED ledger, the node bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "inotify/tree/model.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *path_of(struct tree_model *t, struct tree_node *n, const char *name)
{
    static struct buf b;
    buf_free(&b);
    buf_init(&b, 1 << 20);
    assert_int_equal(tree_model_path(t, n, name, name ? strlen(name) : 0, &b), 0);
    return buf_cstr(&b);
}

static struct tree_node *add(struct tree_model *t, struct tree_node *p, const char *name, int wd)
{
    struct tree_node *n = tree_model_add(t, p, name, strlen(name), wd);
    assert_non_null(n);
    return n;
}

static void test_join_like_os_path_join(void **st)
{
    (void)st;
    struct tree_model t;
    assert_int_equal(tree_model_init(&t, "/r", 2, 100), 0);
    struct tree_node *r = add(&t, NULL, "", 1), *a = add(&t, r, "a", 2), *b = add(&t, a, "b", 3);
    assert_string_equal(path_of(&t, r, NULL), "/r");
    assert_string_equal(path_of(&t, r, "f"), "/r/f");
    assert_string_equal(path_of(&t, b, NULL), "/r/a/b");
    assert_string_equal(path_of(&t, b, "f g"), "/r/a/b/f g");
    tree_model_free(&t);

    assert_int_equal(tree_model_init(&t, "rel/dir/", 8, 100), 0);
    r = add(&t, NULL, "", 1);
    a = add(&t, r, "a", 2);
    assert_string_equal(path_of(&t, r, NULL), "rel/dir/");
    assert_string_equal(path_of(&t, r, "f"), "rel/dir/f");
    assert_string_equal(path_of(&t, a, "f"), "rel/dir/a/f");
    tree_model_free(&t);

    assert_int_equal(tree_model_init(&t, "/", 1, 100), 0);
    r = add(&t, NULL, "", 1);
    a = add(&t, r, "tmp", 2);
    assert_string_equal(path_of(&t, a, "x"), "/tmp/x");
    assert_string_equal(path_of(&t, r, NULL), "/");
    tree_model_free(&t);
}

static void test_lookup_and_rename_carries_subtree(void **st)
{
    (void)st;
    struct tree_model t;
    assert_int_equal(tree_model_init(&t, "/r", 2, 100), 0);
    struct tree_node *r = add(&t, NULL, "", 1), *a = add(&t, r, "a", 2), *b = add(&t, a, "b", 3);
    struct tree_node *c = add(&t, b, "c", 4), *z = add(&t, r, "z", 5);
    assert_ptr_equal(tree_model_by_wd(&t, 4), c);
    assert_ptr_equal(tree_model_child(&t, a, "b", 1), b);
    assert_null(tree_model_child(&t, r, "b", 1));
    assert_null(tree_model_by_wd(&t, 99));

    assert_int_equal(tree_model_move(&t, a, z, "renamed", 7), 0);
    assert_string_equal(path_of(&t, c, "f"), "/r/z/renamed/b/c/f");
    assert_null(tree_model_child(&t, r, "a", 1));
    assert_ptr_equal(tree_model_child(&t, z, "renamed", 7), a);

    /* Into its own subtree: refused, nothing changed. */
    assert_int_equal(tree_model_move(&t, a, c, "loop", 4), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(path_of(&t, c, NULL), "/r/z/renamed/b/c");
    assert_int_equal(tree_model_is_ancestor(a, c), 1);
    assert_int_equal(tree_model_is_ancestor(c, a), 0);
    /* The root cannot be renamed. */
    assert_int_equal(tree_model_move(&t, r, z, "x", 1), -1);
    tree_model_free(&t);
}

static int removed[16];
static int nremoved;
static void on_removed(const struct tree_node *n, void *ctx)
{
    (void)ctx;
    removed[nremoved++] = n->wd;
}

static void test_remove_subtree(void **st)
{
    (void)st;
    struct tree_model t;
    assert_int_equal(tree_model_init(&t, "/r", 2, 100), 0);
    struct tree_node *r = add(&t, NULL, "", 1), *a = add(&t, r, "a", 2), *b = add(&t, a, "b", 3);
    add(&t, b, "c", 4);
    add(&t, a, "d", 5);
    add(&t, r, "e", 6);
    nremoved = 0;
    tree_model_remove(&t, a, on_removed, NULL);
    assert_int_equal(nremoved, 4);
    assert_int_equal(removed[3], 2); /* the top last: descendants first */
    assert_int_equal(t.count, 2);
    for (int wd = 2; wd <= 5; wd++) assert_null(tree_model_by_wd(&t, wd));
    assert_null(tree_model_child(&t, r, "a", 1));
    assert_non_null(tree_model_child(&t, r, "e", 1));
    /* The name is free again, the number too. */
    add(&t, r, "a", 2);
    nremoved = 0;
    tree_model_remove(&t, r, on_removed, NULL);
    assert_int_equal(nremoved, 3);
    assert_null(t.root);
    assert_int_equal(t.count, 0);
    tree_model_free(&t);
}

static void test_ignored_ledger(void **st)
{
    (void)st;
    struct tree_model t;
    assert_int_equal(tree_model_init(&t, "/r", 2, 100), 0);
    assert_int_equal(tree_model_pend_due(&t, 7), 0);
    assert_int_equal(tree_model_pend_take(&t, 7), 0);
    assert_int_equal(tree_model_pend_add(&t, 7), 0);
    assert_int_equal(tree_model_pend_add(&t, 7), 0);
    assert_int_equal(tree_model_pend_due(&t, 7), 1);
    assert_int_equal(tree_model_pend_take(&t, 7), 1);
    assert_int_equal(tree_model_pend_due(&t, 7), 1);
    assert_int_equal(tree_model_pend_take(&t, 7), 1);
    assert_int_equal(tree_model_pend_due(&t, 7), 0);
    for (int wd = 0; wd < 5000; wd++) assert_int_equal(tree_model_pend_add(&t, wd), 0);
    for (int wd = 0; wd < 5000; wd++) assert_int_equal(tree_model_pend_take(&t, wd), 1);
    assert_int_equal(t.pend.count, 0);
    tree_model_free(&t);
}

static void test_bound_and_growth(void **st)
{
    (void)st;
    struct tree_model t;
    char name[16];
    assert_int_equal(tree_model_init(&t, "/r", 2, 3000), 0);
    struct tree_node *r = add(&t, NULL, "", 1), *p = r;
    for (int i = 2; i <= 3000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        struct tree_node *n = tree_model_add(&t, i % 3 ? p : r, name, strlen(name), i);
        assert_non_null(n);
        if (i % 100 == 0) p = n;
    }
    assert_null(tree_model_add(&t, r, "over", 4, 5000));
    assert_int_equal(errno, ENOSPC);
    for (int i = 2; i <= 3000; i++) {
        struct tree_node *n = tree_model_by_wd(&t, i);
        assert_non_null(n);
        snprintf(name, sizeof name, "n%d", i);
        assert_ptr_equal(tree_model_child(&t, n->parent, name, strlen(name)), n);
    }
    /* A root added twice is refused. */
    assert_null(tree_model_add(&t, NULL, "", 0, 9999));
    tree_model_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_like_os_path_join),
        cmocka_unit_test(test_lookup_and_rename_carries_subtree),
        cmocka_unit_test(test_remove_subtree),
        cmocka_unit_test(test_ignored_ledger),
        cmocka_unit_test(test_bound_and_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
