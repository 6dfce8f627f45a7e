/*
 * test_memcg.c - the flat keyed files of cgroups and /proc (agent/core/memcg.c):
 * memory.stat, memory.events, v1's memory.oom_control, /proc/vmstat; and the
 * agent's memory cgroup as this machine shows it (a kind and a directory
 * that holds the kind's files, or none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/memcg.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned long long key(const char *text, const char *k, int *rc)
{
    unsigned long long v = 12345;
    *rc = memcg_parse_key(text, strlen(text), k, &v);
    return v;
}

static void test_parse_key(void **st)
{
    (void)st;
    int rc;
    const char *events = "low 0\nhigh 0\nmax 17\noom 3\noom_kill 2\noom_group_kill 0\n";
    assert_int_equal(key(events, "oom_kill", &rc), 2);
    assert_int_equal(rc, 0);
    assert_int_equal(key(events, "oom", &rc), 3); /* a key, not a prefix */
    assert_int_equal(key(events, "max", &rc), 17);
    const char *v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 5";
    assert_int_equal(key(v1, "oom_kill", &rc), 5); /* no final newline */
    assert_int_equal(rc, 0);
    const char *stat = "cache 4096\nrss 8192\nhierarchical_memory_limit 67108864\ntotal_inactive_file 1024\n";
    assert_int_equal(key(stat, "hierarchical_memory_limit", &rc), 67108864);
    assert_int_equal(key(stat, "total_inactive_file", &rc), 1024);
    key(stat, "inactive_file", &rc);
    assert_int_equal(rc, -1);
    key("oom_kill -1\n", "oom_kill", &rc);
    assert_int_equal(rc, -1);
    key("oom_kill \n", "oom_kill", &rc);
    assert_int_equal(rc, -1);
    key("oom_kill 99999999999999999999999\n", "oom_kill", &rc);
    assert_int_equal(rc, -1);
    key("", "oom_kill", &rc);
    assert_int_equal(rc, -1);
    assert_int_equal(key("a 18446744073709551615\n", "a", &rc), 18446744073709551615ull);
    assert_int_equal(rc, 0);
}

static void test_read(void **st)
{
    (void)st;
    char small[8];
    assert_int_equal(memcg_read(NULL, "/proc/self/oom_score_adj", small, sizeof small) > 0, 1);
    assert_int_equal(memcg_read(NULL, "/nonexistent/file", small, sizeof small), -1);
    char one[1];
    assert_int_equal(memcg_read(NULL, "/proc/vmstat", one, sizeof one), 0); /* bounded: nothing fits */
    assert_int_equal(one[0], '\0');
    unsigned long long n;
    assert_int_equal(memcg_file_key(NULL, "/proc/vmstat", "nr_free_pages", &n), 0);
}

static void test_self(void **st)
{
    (void)st;
    const struct memcg *m = memcg_self();
    assert_ptr_equal(m, memcg_self()); /* found once */
    if (m->kind == MEMCG_NONE) {
        assert_string_equal(m->dir, "");
        return;
    }
    char path[CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", m->dir, m->kind == MEMCG_V2 ? "memory.current" : "memory.usage_in_bytes");
    assert_int_equal(access(path, R_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_key),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests_name("memcg", tests, NULL, NULL);
}
