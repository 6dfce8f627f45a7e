/*
 * test_ops_collapse.c - POST /collapse's smaps parser, chunks and JSON, and
 * POST /freeze's query integers and FreezeResult (agent/api/ops/collapse.c,
 * agent/api/ops/freeze.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/ops/collapse.h"
#include "agent/api/ops/freeze.h"

#include <string.h>

static const char SMAPS[] =
    "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/agent\n"
    "Size:                328 kB\n"
    "AnonHugePages:         0 kB\n"
    "00651000-00652000 rw-p 00051000 08:02 173521 /usr/bin/agent\n"
    "AnonHugePages:         0 kB\n"
    "01000000-01600000 rw-p 00000000 00:00 0 [heap]\n"
    "Rss:                 100 kB\n"
    "AnonHugePages:      2048 kB\n"
    "7f0000000000-7f0000401000 rw-p 00000000 00:00 0 \n"
    "AnonHugePages:         0 kB\n"
    "7f0000500000-7f0000600000 r--p 00000000 00:00 0 \n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
    "AnonHugePages:         0 kB\n";

static void test_parse(void **s)
{
    (void)s;
    struct ops_collapse_region r[8];
    int n = ops_collapse_parse(SMAPS, strlen(SMAPS), r, 8);
    assert_int_equal(n, 2); /* the heap and the unnamed rw-p one; no file, no stack, no r--p */
    assert_true(r[0].start == 0x01000000 && r[0].end == 0x01600000 && r[0].huge == 2u << 20);
    assert_true(r[1].start == 0x7f0000000000 && r[1].huge == 0);
    assert_int_equal(ops_collapse_parse(SMAPS, strlen(SMAPS), r, 1), 1);
    assert_int_equal(ops_collapse_parse("", 0, r, 8), 0);
    assert_int_equal(ops_collapse_parse("garbage\nmore-\n", 14, r, 8), 0);
}

static void test_chunks(void **s)
{
    (void)s;
    assert_int_equal(ops_collapse_chunks(0x01000000, 0x01600000), 3);
    assert_int_equal(ops_collapse_chunks(0x01000001, 0x01600000), 2);
    assert_int_equal(ops_collapse_chunks(0x7f0000000000, 0x7f0000401000), 2);
    assert_int_equal(ops_collapse_chunks(0x1000, 0x2000), 0);
}

static void assert_text(const struct buf *b, const char *want)
{
    assert_int_equal(b->len, strlen(want));
    assert_memory_equal(b->data, want, b->len);
}

static void test_json(void **s)
{
    (void)s;
    struct buf b;
    struct ops_collapse_result x = {3, 5, 1, 2, 2, 7};
    buf_init(&b, 1024);
    assert_int_equal(ops_collapse_json(&b, &x), 0);
    assert_text(&b, "{\"regions\": 3, \"chunks\": 5, \"collapsed\": 1, \"alreadyHuge\": 2, "
                                "\"skipped\": 2, \"elapsedMs\": 7}");
    buf_free(&b);
    struct freeze_stats st = {.visited = 4, .truncated = 1, .prefrozen = 1, .requested = 3, .frozen = 2,
                              .not_frozen = 0, .failed = 1, .lost = 1};
    buf_init(&b, 1024);
    assert_int_equal(ops_freeze_json(&b, FREEZE_HIERARCHY, &st, "cgroup v2", 3, 9), 0);
    assert_text(&b, "{\"mode\": \"hierarchy\", \"visited\": 4, \"allowlisted\": 0, \"truncated\": true, "
                                "\"preFrozen\": 1, \"requested\": 3, \"frozen\": 2, \"notFrozen\": 0, \"failed\": 2, "
                                "\"unobservable\": 0, \"sweepMs\": 3, \"waitMs\": 9, \"method\": \"cgroup v2\"}");
    buf_free(&b);
}

static void test_int(void **s)
{
    (void)s;
    long long v;
    assert_int_equal(ops_freeze_int("0", &v), 0);
    assert_true(v == 0);
    assert_int_equal(ops_freeze_int("-5", &v), 0);
    assert_true(v == -5);
    assert_int_equal(ops_freeze_int("999999999999999999", &v), 0);
    const char *bad[] = {"", "-", "1.5", "1e3", " 1", "+1", "0x10", "9999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(ops_freeze_int(bad[i], &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
