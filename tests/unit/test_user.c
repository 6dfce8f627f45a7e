/*
 * test_user.c - users from passwd and group files (agent/core/user.h),
 * against files the test writes: fields, supplementary groups, skipped and
 * malformed lines, a last line without newline, unknown users, lookup by
 * uid, missing files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/core/user.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], passwd[96], group[96];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **st)
{
    (void)st;
    strcpy(dir, "/tmp/test_user.XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(passwd, sizeof passwd, "%s/passwd", dir);
    snprintf(group, sizeof group, "%s/group", dir);
    write_file(passwd, "# comment\n"
                       "root:x:0:0:root:/root:/bin/bash\n"
                       "\n"
                       "+nis\n"
                       "broken:x:notanumber:1:x:/nowhere:/bin/sh\n"
                       "short:x:5:5\n"
                       "alice:x:1000:1000:Alice A,,,:/home/alice:/bin/zsh\n"
                       "twin:x:1000:1000::/home/twin:/bin/sh\n"
                       "noshell:x:1001:100::/home/noshell:\n"
                       "last:x:1002:1002::/home/last:/bin/sh"); /* no newline */
    write_file(group, "root:x:0:\n"
                      "users:x:100:alice,bob\n"
                      "wheel:x:10:bob,alice\n"
                      "alicegrp:x:1000:\n"
                      "notalice:x:2000:alice2,malice\n"
                      "dup:x:100:alice\n"
                      "bad:x:zz:alice\n"
                      "audio:x:29:last");
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    unlink(passwd);
    unlink(group);
    rmdir(dir);
    return 0;
}

static void test_fields_and_groups(void **st)
{
    (void)st;
    struct user_info u;
    char err[ERR_LEN];
    assert_int_equal(user_lookup("alice", passwd, group, &u, err), 0);
    assert_int_equal(u.uid, 1000);
    assert_int_equal(u.gid, 1000);
    assert_string_equal(u.name, "alice");
    assert_string_equal(u.home, "/home/alice");
    assert_string_equal(u.shell, "/bin/zsh");
    /* Primary first, then each group naming her once, in file order. */
    assert_int_equal(u.ngroups, 3);
    assert_int_equal(u.groups[0], 1000);
    assert_int_equal(u.groups[1], 100);
    assert_int_equal(u.groups[2], 10);

    assert_int_equal(user_lookup("root", passwd, group, &u, err), 0);
    assert_int_equal(u.uid, 0);
    assert_string_equal(u.home, "/root");
    assert_int_equal(u.ngroups, 1);
    assert_int_equal(u.groups[0], 0);
}

static void test_empty_shell_and_last_line(void **st)
{
    (void)st;
    struct user_info u;
    char err[ERR_LEN];
    assert_int_equal(user_lookup("noshell", passwd, group, &u, err), 0);
    assert_string_equal(u.shell, "/bin/sh");
    assert_int_equal(u.gid, 100);
    assert_int_equal(u.ngroups, 1);
    assert_int_equal(user_lookup("last", passwd, group, &u, err), 0);
    assert_int_equal(u.uid, 1002);
    assert_string_equal(u.home, "/home/last");
    assert_int_equal(u.ngroups, 2);
    assert_int_equal(u.groups[1], 29);
}

static void test_unknown_and_malformed(void **st)
{
    (void)st;
    struct user_info u;
    char err[ERR_LEN];
    const char *names[] = {"nobody", "broken", "short", "nis", "+nis", "", "alic", "alice "};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        errno = 0;
        assert_int_equal(user_lookup(names[i], passwd, group, &u, err), -1);
        assert_int_equal(errno, ENOENT);
        char want[ERR_LEN];
        snprintf(want, sizeof want, "unknown user '%s'", names[i]);
        assert_string_equal(err, want);
    }
}

static void test_by_uid(void **st)
{
    (void)st;
    struct user_info u;
    char err[ERR_LEN];
    /* The first entry with the uid wins. */
    assert_int_equal(user_lookup_uid(1000, passwd, group, &u, err), 0);
    assert_string_equal(u.name, "alice");
    assert_int_equal(user_lookup_uid(4242, passwd, group, &u, err), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(err, "no user with uid 4242");
}

static void test_missing_files(void **st)
{
    (void)st;
    struct user_info u;
    char err[ERR_LEN], missing[128];
    snprintf(missing, sizeof missing, "%s/none", dir);
    assert_int_equal(user_lookup("alice", missing, group, &u, err), -1);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err, "cannot read "));
    assert_non_null(strstr(err, "/none: No such file or directory"));
    /* Without a group file only the primary group is known. */
    assert_int_equal(user_lookup("alice", passwd, missing, &u, err), 0);
    assert_int_equal(u.ngroups, 1);
    assert_int_equal(u.groups[0], 1000);
}

static void test_self(void **st)
{
    (void)st;
    struct user_info u;
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none", dir);
    user_self(missing, missing, &u);
    assert_int_equal(u.uid, geteuid());
    assert_int_equal(u.gid, getegid());
    assert_string_equal(u.home, "/");
    assert_true(u.ngroups >= 1);
    assert_int_equal(u.groups[0], getegid());
    user_self(passwd, group, &u);
    assert_int_equal(u.uid, geteuid());
}

/* Names by id, for listings (user_names). */
static void test_names(void **s)
{
    (void)s;
    char tmp[] = "/tmp/test_user_names.XXXXXX", pw[256], gr[256];
    assert_non_null(mkdtemp(tmp));
    snprintf(pw, sizeof pw, "%s/passwd", tmp);
    snprintf(gr, sizeof gr, "%s/group", tmp);
    FILE *f = fopen(pw, "w");
    fputs("# comment\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/\ndup:x:1000:1:::\n", f);
    fclose(f);
    f = fopen(gr, "w");
    fputs("staff:x:1000:alice\nnoend:x:1001:", f);
    fclose(f);
    struct user_names n;
    user_names_init(&n, pw, gr);
    assert_string_equal(user_names_get(&n, 1000, 0), "alice"); /* the first line wins */
    assert_string_equal(user_names_get(&n, 1001, 0), "bob");
    assert_string_equal(user_names_get(&n, 1000, 1), "staff");
    assert_string_equal(user_names_get(&n, 1001, 1), "noend"); /* a last line without newline */
    assert_string_equal(user_names_get(&n, 4242, 0), "4242");
    assert_string_equal(user_names_get(&n, 1000, 0), "alice"); /* from the cache */
    for (unsigned i = 0; i < USER_NAMES_CACHE * 2; i++) user_names_get(&n, 5000 + i, 1); /* the cache wraps */
    assert_string_equal(user_names_get(&n, 1000, 1), "staff");
    unlink(pw);
    unlink(gr);
    rmdir(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_groups),
        cmocka_unit_test(test_empty_shell_and_last_line),
        cmocka_unit_test(test_unknown_and_malformed),
        cmocka_unit_test(test_by_uid),
        cmocka_unit_test(test_missing_files),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
