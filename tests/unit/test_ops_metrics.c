/*
 * test_ops_metrics.c - GET /metrics' pure parts (agent/api/ops/metrics.c):
 * v2's cpu.max, /proc/meminfo and /proc/stat lines, the CPU share, and
 * envd's Metrics JSON; then one sample of this machine, which must hold
 * together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/ops/metrics.h"

#include <string.h>

static void test_cpu_max(void **st)
{
    (void)st;
    unsigned long long q = 9, p = 9;
    assert_int_equal(ops_metrics_cpu_max("max 100000\n", &q, &p), 0);
    assert_int_equal(q, 0);
    assert_int_equal(p, 100000);
    assert_int_equal(ops_metrics_cpu_max("150000 100000\n", &q, &p), 0);
    assert_int_equal(q, 150000);
    assert_int_equal(p, 100000);
    assert_int_equal(ops_metrics_cpu_max("50000 100000", &q, &p), 0);
    assert_int_equal(ops_metrics_cpu_max("", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("max", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("0 100000\n", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("100 0\n", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("-1 100000\n", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("100  100000\n", &q, &p), -1);
    assert_int_equal(ops_metrics_cpu_max("100 100000 x\n", &q, &p), -1);
}

static void test_meminfo(void **st)
{
    (void)st;
    const char *t = "MemTotal:       16318384 kB\nMemFree:         1000 kB\nMemAvailable:   8000000 kB\n"
                    "Cached:          2048 kB\nHugePages_Total:       0\n";
    unsigned long long v = 0;
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "MemTotal", &v), 0);
    assert_int_equal(v, 16318384ull << 10);
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "MemAvailable", &v), 0);
    assert_int_equal(v, 8000000ull << 10);
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "Cached", &v), 0);
    assert_int_equal(v, 2048ull << 10);
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "HugePages_Total", &v), 0); /* a count: no unit */
    assert_int_equal(v, 0);
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "Mem", &v), -1);
    assert_int_equal(ops_metrics_meminfo(t, strlen(t), "SwapTotal", &v), -1);
    const char *bad = "MemTotal: 12 MB\n";
    assert_int_equal(ops_metrics_meminfo(bad, strlen(bad), "MemTotal", &v), -1);
}

static void test_proc_stat(void **st)
{
    (void)st;
    const char *t = "cpu  100 5 50 1000 20 1 2 3 0 0\ncpu0 50 2 25 500 10 0 1 1 0 0\n";
    unsigned long long busy, total;
    assert_int_equal(ops_metrics_proc_stat(t, strlen(t), &busy, &total), 0);
    assert_int_equal(total, 100 + 5 + 50 + 1000 + 20 + 1 + 2 + 3);
    assert_int_equal(busy, total - 1000 - 20);
    const char *old = "cpu 1 2 3 4 5\n";
    assert_int_equal(ops_metrics_proc_stat(old, strlen(old), &busy, &total), 0);
    assert_int_equal(total, 15);
    assert_int_equal(busy, 6);
    const char *shortl = "cpu 1 2 3 4\n";
    assert_int_equal(ops_metrics_proc_stat(shortl, strlen(shortl), &busy, &total), -1);
    assert_int_equal(ops_metrics_proc_stat("cpu0 1 2 3 4 5\n", 15, &busy, &total), -1);
    assert_int_equal(ops_metrics_proc_stat("", 0, &busy, &total), -1);
}

static void test_pct(void **st)
{
    (void)st;
    assert_true(ops_metrics_pct(1, 4) == 25.0);
    assert_true(ops_metrics_pct(1, 3) == 33.33);
    assert_true(ops_metrics_pct(2, 1) == 100.0); /* clipped */
    assert_true(ops_metrics_pct(0, 1) == 0.0);
    assert_true(ops_metrics_pct(1, 0) == 0.0);   /* no interval */
    assert_true(ops_metrics_pct(-1, 1) == 0.0);
}

static void test_json(void **st)
{
    (void)st;
    struct buf b;
    buf_init(&b, 512);
    struct ops_metrics m = {1700000000, 2, 12.5, 64ull << 20, (3ull << 20) + 5, 1ull << 20, 1000, 4000};
    assert_int_equal(ops_metrics_json(&b, &m), 0);
    assert_string_equal(buf_cstr(&b),
                        "{\"ts\": 1700000000, \"cpu_count\": 2, \"cpu_used_pct\": 12.5, \"mem_total\": 67108864, "
                        "\"mem_used\": 3145733, \"mem_cache\": 1048576, \"mem_total_mib\": 64, \"mem_used_mib\": 3, "
                        "\"disk_used\": 1000, \"disk_total\": 4000}");
    buf_reset(&b);
    struct ops_metrics z = {0};
    assert_int_equal(ops_metrics_json(&b, &z), 0);
    assert_non_null(strstr(buf_cstr(&b), "\"cpu_used_pct\": 0.0,"));
    buf_free(&b);
}

static void test_sample(void **st)
{
    (void)st;
    struct ops_metrics m;
    ops_metrics_start(NULL);
    assert_int_equal(ops_metrics_now(&m), 0);
    assert_true(m.cpu_count >= 1);
    assert_true(m.cpu_used_pct >= 0 && m.cpu_used_pct <= 100);
    assert_true(m.mem_total > 0 && m.mem_used <= m.mem_total);
    assert_true(m.disk_total > 0 && m.disk_used <= m.disk_total);
    ops_metrics_start("/nonexistent/dir");
    assert_int_equal(ops_metrics_now(&m), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_max),  cmocka_unit_test(test_meminfo), cmocka_unit_test(test_proc_stat),
        cmocka_unit_test(test_pct),      cmocka_unit_test(test_json),    cmocka_unit_test(test_sample),
    };
    return cmocka_run_group_tests_name("ops_metrics", tests, NULL, NULL);
}
