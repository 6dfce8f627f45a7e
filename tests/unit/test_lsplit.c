/*
 * test_lsplit.c - the bounded line splitter (agent/core/lsplit.c): partial
 * lines, stopping mid-chunk, resets, and too-long lines in bounded memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/lsplit.h"

#include <string.h>

#define S(x) x, sizeof(x) - 1

struct got {
    int lines, large, stop_after;
    char last[64];
    size_t last_len;
};

static int collect(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct got *g = ctx;
    if (kind == LSPLIT_LINE) g->lines++;
    else g->large++;
    g->last_len = n;
    memcpy(g->last, p, n < sizeof g->last ? n : sizeof g->last);
    return g->stop_after && g->lines + g->large >= g->stop_after;
}

static void test_lsplit_partial_and_stop(void **st)
{
    (void)st;
    struct lsplit s;
    struct got g;
    memset(&g, 0, sizeof g);
    lsplit_init(&s, 100);
    assert_int_equal(lsplit_feed(&s, S("ab"), collect, &g), 2);
    assert_int_equal(g.lines, 0);
    assert_int_equal(lsplit_pending(&s), 2);
    assert_int_equal(lsplit_feed(&s, S("c\nde\n"), collect, &g), 5);
    assert_int_equal(g.lines, 2);
    assert_memory_equal(g.last, "de", 2);
    g.stop_after = 3;
    assert_int_equal(lsplit_feed(&s, S("f\ng\n"), collect, &g), 2);
    assert_int_equal(g.lines, 3);
    lsplit_feed(&s, S("partial"), collect, &g);
    lsplit_reset(&s);
    g.stop_after = 0;
    lsplit_feed(&s, S("new\n"), collect, &g);
    assert_memory_equal(g.last, "new", 3);
    lsplit_free(&s);
}

static void test_lsplit_too_large_bounded(void **st)
{
    (void)st;
    struct lsplit s;
    struct got g;
    memset(&g, 0, sizeof g);
    lsplit_init(&s, 10);
    /* Exactly the bound is a line. */
    lsplit_feed(&s, S("0123456789\n"), collect, &g);
    assert_int_equal(g.lines, 1);
    /* Known too long before its newline: reported once, head kept, rest skipped. */
    lsplit_feed(&s, S("{\"id\": \"k\""), collect, &g);
    lsplit_feed(&s, S("zzzzzzzzzzzzzzzzzzzz"), collect, &g);
    assert_int_equal(g.large, 1);
    assert_memory_equal(g.last, "{\"id\": \"k\"", 10);
    assert_int_equal(lsplit_pending(&s), 0); /* nothing of it is held */
    assert_true(s.part.cap <= 256);
    lsplit_feed(&s, S("zzzz\nok\n"), collect, &g);
    assert_int_equal(g.large, 1);
    assert_int_equal(g.lines, 2);
    assert_memory_equal(g.last, "ok", 2);
    /* A complete too-long line in one chunk. */
    lsplit_feed(&s, S("0123456789A\nok2\n"), collect, &g);
    assert_int_equal(g.large, 2);
    assert_int_equal(g.lines, 3);
    lsplit_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lsplit_partial_and_stop),
        cmocka_unit_test(test_lsplit_too_large_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
