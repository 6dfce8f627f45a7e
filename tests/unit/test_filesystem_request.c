/*
 * test_filesystem_request.c - filesystem request messages (agent/api/filesystem/request.c): both JSON
 * names, defaults, uint32 as number or string, wrong types refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/filesystem/request.h"
#include "agent/core/err.h"

#include <string.h>

static int decode(enum filesystem_request_kind k, const char *json, struct filesystem_request *r)
{
    static cJSON *msg;
    char err[ERR_LEN] = "";
    cJSON_Delete(msg);
    msg = cJSON_Parse(json);
    int rc = filesystem_request_decode(k, msg, r, err);
    if (rc < 0) assert_true(err[0] != '\0');
    return rc;
}

static void test_decode(void **s)
{
    (void)s;
    struct filesystem_request r;
    assert_int_equal(decode(FSREQ_PATH, "{\"path\": \"a/b\", \"unknown\": [1]}", &r), 0);
    assert_string_equal(r.path, "a/b");
    assert_int_equal(decode(FSREQ_PATH, "{}", &r), 0);
    assert_string_equal(r.path, "");
    assert_int_equal(decode(FSREQ_PATH, "{\"path\": null}", &r), 0);
    assert_int_equal(decode(FSREQ_PATH, "{\"path\": 1}", &r), -1);
    assert_int_equal(decode(FSREQ_PATH, "[]", &r), -1);
    assert_int_equal(decode(FSREQ_LIST, "{\"path\": \"d\", \"depth\": 3}", &r), 0);
    assert_int_equal(r.depth, 3);
    assert_int_equal(decode(FSREQ_LIST, "{\"depth\": \"4294967295\"}", &r), 0);
    assert_int_equal(r.depth, 4294967295u);
    assert_int_equal(decode(FSREQ_LIST, "{\"depth\": 4294967296}", &r), -1);
    assert_int_equal(decode(FSREQ_LIST, "{\"depth\": -1}", &r), -1);
    assert_int_equal(decode(FSREQ_LIST, "{\"depth\": 1.5}", &r), -1);
    assert_int_equal(decode(FSREQ_LIST, "{\"depth\": \"x\"}", &r), -1);
    assert_int_equal(decode(FSREQ_MOVE, "{\"source\": \"s\", \"destination\": \"d\"}", &r), 0);
    assert_string_equal(r.source, "s");
    assert_string_equal(r.destination, "d");
    assert_int_equal(decode(FSREQ_WATCH, "{\"path\": \"w\", \"recursive\": true, \"include_entry\": true}", &r), 0);
    assert_true(r.recursive && r.include_entry && !r.allow_network_mounts);
    assert_int_equal(decode(FSREQ_WATCH, "{\"includeEntry\": true, \"allowNetworkMounts\": true}", &r), 0);
    assert_true(!r.recursive && r.include_entry && r.allow_network_mounts);
    assert_int_equal(decode(FSREQ_WATCH, "{\"recursive\": 1}", &r), -1);
    assert_int_equal(decode(FSREQ_WATCHER, "{\"watcher_id\": \"w1\"}", &r), 0);
    assert_string_equal(r.watcher_id, "w1");
    assert_int_equal(decode(FSREQ_WATCHER, "{\"watcherId\": \"w2\"}", &r), 0);
    assert_string_equal(r.watcher_id, "w2");
    decode(FSREQ_PATH, "{}", &r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_decode)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
