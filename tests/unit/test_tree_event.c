/*
 * test_tree_event.c - one inotify event against the watched tree
 * (inotify/tree/event.c): which directory and path it is about, and what the
 * service must do with it (deliver, forget, end because ROOT is gone, skip a
 * stale or unknown watch), including the IN_IGNORED ledger it settles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "inotify/tree/event.h"

#include <string.h>

static _Alignas(struct inotify_event) char raw[sizeof(struct inotify_event) + 64];

/* An event as the kernel queues it: the name NUL-padded to 16 bytes. */
static const struct inotify_event *mk(int wd, uint32_t mask, uint32_t cookie, const char *name)
{
    struct inotify_event *ev = (struct inotify_event *)raw;
    memset(raw, 0, sizeof raw);
    ev->wd = wd;
    ev->mask = mask;
    ev->cookie = cookie;
    if (name) {
        ev->len = (uint32_t)((strlen(name) / 16 + 1) * 16);
        memcpy(ev->name, name, strlen(name));
    }
    return ev;
}

static struct tree_model t;
static struct tree_node *r, *a, *b;

static int setup(void **st)
{
    (void)st;
    assert_int_equal(tree_model_init(&t, "/r", 2, 100), 0);
    r = tree_model_add(&t, NULL, "", 0, 1);
    a = tree_model_add(&t, r, "a", 1, 2);
    b = tree_model_add(&t, a, "b", 1, 3);
    assert_non_null(b);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    tree_model_free(&t);
    return 0;
}

static const char *path_of(const struct tree_event *e)
{
    static struct buf p;
    buf_free(&p);
    buf_init(&p, 1 << 16);
    assert_int_equal(tree_model_path(&t, e->n, e->name, e->name_len, &p), 0);
    return buf_cstr(&p);
}

static void test_report_maps_to_the_path(void **st)
{
    (void)st;
    struct tree_event e;
    assert_int_equal(tree_event_map(&t, mk(3, IN_CLOSE_WRITE, 0, "f.txt"), 1, &e), TREE_EVENT_REPORT);
    assert_ptr_equal(e.n, b);
    assert_int_equal(e.mask, IN_CLOSE_WRITE);
    assert_int_equal(e.name_len, 5); /* the padding is not the name */
    assert_string_equal(path_of(&e), "/r/a/b/f.txt");
    assert_int_equal(e.subdir, 0);
    /* An event about the watched directory itself has no name. */
    assert_int_equal(tree_event_map(&t, mk(2, IN_MODIFY, 0, NULL), 1, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.name_len, 0);
    assert_string_equal(path_of(&e), "/r/a");
    /* A name of exactly 16 bytes fills its padding. */
    assert_int_equal(tree_event_map(&t, mk(1, IN_DELETE, 0, "0123456789abcdef"), 1, &e), TREE_EVENT_REPORT);
    assert_string_equal(path_of(&e), "/r/0123456789abcdef");
}

static void test_directories_are_followed_when_recursive(void **st)
{
    (void)st;
    struct tree_event e;
    assert_int_equal(tree_event_map(&t, mk(2, IN_CREATE | IN_ISDIR, 0, "new"), 1, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.subdir, 1);
    assert_int_equal(e.mask, IN_CREATE | IN_ISDIR);
    assert_string_equal(path_of(&e), "/r/a/new");
    assert_int_equal(tree_event_map(&t, mk(2, IN_CREATE | IN_ISDIR, 0, "new"), 0, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.subdir, 0);
    assert_int_equal(tree_event_map(&t, mk(1, IN_MOVED_FROM | IN_ISDIR, 77, "a"), 1, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.subdir, 1);
    assert_int_equal(e.cookie, 77);
    assert_int_equal(tree_event_map(&t, mk(1, IN_CREATE, 0, "file"), 1, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.subdir, 0);
}

static void test_unreported_and_unknown_are_skipped(void **st)
{
    (void)st;
    struct tree_event e;
    assert_int_equal(tree_event_map(&t, mk(2, IN_ATTRIB, 0, "f"), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(2, IN_OPEN, 0, "f"), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(2, IN_DELETE_SELF, 0, NULL), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(99, IN_CREATE, 0, "f"), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(99, IN_IGNORED, 0, NULL), 1, &e), TREE_EVENT_SKIP);
}

/* A front-end that asked for attribute changes gets them for entries, not
 * for a watched directory's own (its parent reports those under its name). */
static void test_attrib_when_asked(void **st)
{
    (void)st;
    struct tree_event e;
    t.extra = IN_ATTRIB;
    assert_int_equal(tree_event_map(&t, mk(2, IN_ATTRIB, 0, "f"), 1, &e), TREE_EVENT_REPORT);
    assert_int_equal(e.name_len, 1);
    assert_int_equal(tree_event_map(&t, mk(2, IN_ATTRIB | IN_ISDIR, 0, NULL), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(2, IN_OPEN, 0, "f"), 1, &e), TREE_EVENT_SKIP);
    t.extra = 0;
}

static void test_overflow(void **st)
{
    (void)st;
    struct tree_event e;
    assert_int_equal(tree_event_map(&t, mk(-1, IN_Q_OVERFLOW, 0, NULL), 1, &e), TREE_EVENT_OVERFLOW);
}

static void test_ignored_and_the_ledger(void **st)
{
    (void)st;
    struct tree_event e;
    /* A watch the service removed: its IN_IGNORED is consumed, and until then
     * its events are stale even though a node holds the number again. */
    assert_int_equal(tree_model_pend_add(&t, 3), 0);
    assert_int_equal(tree_event_map(&t, mk(3, IN_CREATE, 0, "f"), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_event_map(&t, mk(3, IN_IGNORED, 0, NULL), 1, &e), TREE_EVENT_SKIP);
    assert_int_equal(tree_model_pend_due(&t, 3), 0);
    assert_int_equal(tree_event_map(&t, mk(3, IN_CREATE, 0, "f"), 1, &e), TREE_EVENT_REPORT);
    /* The kernel's own IN_IGNORED: the directory is forgotten... */
    assert_int_equal(tree_event_map(&t, mk(3, IN_IGNORED, 0, NULL), 1, &e), TREE_EVENT_FORGET);
    assert_ptr_equal(e.n, b);
    /* ... unless it is ROOT. */
    assert_int_equal(tree_event_map(&t, mk(1, IN_IGNORED, 0, NULL), 1, &e), TREE_EVENT_ROOT_GONE);
    assert_string_equal(e.why, "ROOT was deleted");
}

static void test_a_directory_s_own_fate(void **st)
{
    (void)st;
    struct tree_event e;
    assert_int_equal(tree_event_map(&t, mk(2, IN_UNMOUNT, 0, NULL), 1, &e), TREE_EVENT_UNMOUNT);
    assert_ptr_equal(e.n, a);
    assert_int_equal(tree_event_map(&t, mk(1, IN_MOVE_SELF, 0, NULL), 1, &e), TREE_EVENT_ROOT_GONE);
    assert_string_equal(e.why, "ROOT was moved");
    /* Renamed inside the tree (its IN_MOVED_TO came first): nothing to do. */
    assert_int_equal(tree_event_map(&t, mk(2, IN_MOVE_SELF, 0, NULL), 1, &e), TREE_EVENT_SKIP);
    /* Still marked moving: it went somewhere not watched. */
    a->moving = 1;
    assert_int_equal(tree_event_map(&t, mk(2, IN_MOVE_SELF, 0, NULL), 1, &e), TREE_EVENT_MOVED_OUT);
    assert_ptr_equal(e.n, a);
    a->moving = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report_maps_to_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directories_are_followed_when_recursive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreported_and_unknown_are_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attrib_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignored_and_the_ledger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_directory_s_own_fate, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
