/*
 * test_asuser_perm.c - a user's permissions judged by the agent
 * (agent/api/asuser/perm.c): the mode bits for the owner, a group member (the
 * primary group or a supplementary one) and the others, root; the POSIX
 * access ACL as the kernel reads it (named users and groups, the mask,
 * group entries that match without granting, malformed values); and a path
 * looked up as the user (a directory they may not search, symlinks
 * relative and absolute, "..", loops, protected symlinks), on a tree the
 * test makes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/api/asuser/perm.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RX (ASUSER_PERM_R | ASUSER_PERM_X)

static struct asuser_who who(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
    struct asuser_who w;
    memset(&w, 0, sizeof w);
    w.uid = uid;
    w.gid = gid;
    w.ngroups = n;
    for (size_t i = 0; i < n; i++) w.groups[i] = groups[i];
    return w;
}

static void test_mode_bits(void **s)
{
    (void)s;
    gid_t extra[] = {100, 200};
    struct asuser_who u = who(1000, 1000, extra, 2);
    mode_t dir = S_IFDIR;
    /* The owner's bits, whatever the others'. */
    assert_true(asuser_perm_allows(&u, dir | 0700, 1000, 0, NULL, 0, RX));
    assert_false(asuser_perm_allows(&u, dir | 0077, 1000, 0, NULL, 0, RX));
    assert_false(asuser_perm_allows(&u, dir | 0500 | 0077, 1000, 0, NULL, 0, ASUSER_PERM_W));
    /* A member: the group's bits, even when the others' grant more. */
    assert_true(asuser_perm_allows(&u, dir | 0750, 0, 1000, NULL, 0, RX));
    assert_true(asuser_perm_allows(&u, dir | 0750, 0, 200, NULL, 0, RX)); /* supplementary */
    assert_false(asuser_perm_allows(&u, dir | 0705, 0, 100, NULL, 0, RX));
    assert_false(asuser_perm_allows(&u, dir | 0740, 0, 100, NULL, 0, RX)); /* read, no search */
    /* Anyone else: the others' bits. */
    assert_true(asuser_perm_allows(&u, dir | 0705, 0, 0, NULL, 0, RX));
    assert_false(asuser_perm_allows(&u, dir | 0770, 0, 0, NULL, 0, RX));
    assert_false(asuser_perm_allows(&u, dir | 0704, 0, 0, NULL, 0, RX));
    assert_true(asuser_perm_allows(&u, S_IFREG | 0604, 0, 0, NULL, 0, ASUSER_PERM_R));
    /* Root: everything, but execute a file no one may. */
    struct asuser_who r = who(0, 0, NULL, 0);
    assert_true(asuser_perm_allows(&r, dir | 0000, 1000, 1000, NULL, 0, RX | ASUSER_PERM_W));
    assert_true(asuser_perm_allows(&r, S_IFREG | 0000, 1000, 1000, NULL, 0, ASUSER_PERM_R));
    assert_false(asuser_perm_allows(&r, S_IFREG | 0600, 1000, 1000, NULL, 0, ASUSER_PERM_X));
    assert_true(asuser_perm_allows(&r, S_IFREG | 0001, 1000, 1000, NULL, 0, ASUSER_PERM_X));
}

/* An ACL value: the version, then (tag, perm, id) entries, little-endian. */
struct acl {
    unsigned char b[4 + 8 * 16];
    size_t n;
};

static void acl_init(struct acl *a)
{
    memset(a, 0, sizeof *a);
    a->b[0] = 2;
    a->n = 4;
}

static void acl_add(struct acl *a, unsigned tag, unsigned perm, unsigned id)
{
    unsigned char *e = a->b + a->n;
    e[0] = tag & 0xff, e[1] = tag >> 8, e[2] = perm & 0xff, e[3] = perm >> 8;
    for (int i = 0; i < 4; i++) e[4 + i] = (id >> (8 * i)) & 0xff;
    a->n += 8;
}

#define ANY 0xFFFFFFFFu
enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };

/* user::rwx, user:<uid>:<uperm>, group::<gperm>, group:<gid>:<xperm>,
 * mask::<mask> (none when mask < 0), other::<operm>. */
static void acl_of(struct acl *a, unsigned uid, unsigned uperm, unsigned gperm, unsigned gid, unsigned xperm,
                   int mask, unsigned operm)
{
    acl_init(a);
    acl_add(a, USER_OBJ, 7, ANY);
    acl_add(a, USER, uperm, uid);
    acl_add(a, GROUP_OBJ, gperm, ANY);
    acl_add(a, GROUP, xperm, gid);
    if (mask >= 0) acl_add(a, MASK, (unsigned)mask, ANY);
    acl_add(a, OTHER, operm, ANY);
}

static void test_acl(void **s)
{
    (void)s;
    gid_t g300[] = {300};
    struct asuser_who u = who(1000, 1000, g300, 1), other = who(2000, 2000, NULL, 0);
    mode_t dir = S_IFDIR | 0750; /* the group class: the mask */
    struct acl a;
    /* A named user: its entry, limited by the mask. */
    acl_of(&a, 1000, 5, 0, 999, 0, 5, 0);
    assert_true(asuser_perm_allows(&u, dir, 0, 0, a.b, a.n, RX));
    acl_of(&a, 1000, 7, 0, 999, 0, 4, 0);
    assert_false(asuser_perm_allows(&u, dir, 0, 0, a.b, a.n, RX));
    acl_of(&a, 1000, 5, 0, 999, 0, -1, 0); /* no mask: unlimited */
    assert_true(asuser_perm_allows(&u, dir, 0, 0, a.b, a.n, RX));
    /* A named user refused what the others' entry grants. */
    acl_of(&a, 1000, 0, 5, 999, 5, 5, 5);
    assert_false(asuser_perm_allows(&u, S_IFDIR | 0755, 0, 0, a.b, a.n, RX));
    assert_true(asuser_perm_allows(&other, S_IFDIR | 0755, 0, 0, a.b, a.n, RX));
    /* The owner: the owner's bits, the ACL is not read. */
    assert_true(asuser_perm_allows(&u, S_IFDIR | 0700, 1000, 0, a.b, a.n, RX));
    /* A named group the user is in; the owning group; matching without
     * granting, then the others' entry does not apply. */
    acl_of(&a, 4000, 0, 0, 300, 5, 7, 0);
    assert_true(asuser_perm_allows(&u, dir, 0, 0, a.b, a.n, RX));
    acl_of(&a, 4000, 0, 5, 999, 0, 7, 0);
    assert_true(asuser_perm_allows(&u, dir, 0, 1000, a.b, a.n, RX));
    acl_of(&a, 4000, 0, 4, 300, 1, 7, 5);
    assert_false(asuser_perm_allows(&u, dir, 0, 1000, a.b, a.n, RX));
    assert_true(asuser_perm_allows(&other, dir, 0, 1000, a.b, a.n, RX));
    /* No bit in the group class: the kernel does not read the ACL. */
    acl_of(&a, 1000, 0, 0, 999, 0, 0, 5);
    assert_true(asuser_perm_allows(&u, S_IFDIR | 0705, 0, 0, a.b, a.n, RX));
    /* Malformed: refused. */
    assert_int_equal(asuser_perm_acl(&u, 0, a.b, 3, RX), -1);
    assert_int_equal(asuser_perm_acl(&u, 0, a.b, a.n - 1, RX), -1);
    a.b[0] = 1;
    assert_int_equal(asuser_perm_acl(&u, 0, a.b, a.n, RX), -1);
    assert_false(asuser_perm_allows(&u, dir, 0, 0, a.b, a.n, RX));
    acl_init(&a);
    acl_add(&a, USER_OBJ, 7, ANY);
    assert_int_equal(asuser_perm_acl(&u, 0, a.b, a.n, RX), -1); /* no other entry */
    acl_add(&a, 0x40, 7, ANY);
    assert_int_equal(asuser_perm_acl(&u, 0, a.b, a.n, RX), -1); /* an unknown tag */
}

static void test_who_of(void **s)
{
    (void)s;
    struct user_info *ui = calloc(1, sizeof *ui);
    assert_non_null(ui);
    ui->uid = 7;
    ui->gid = 8;
    ui->ngroups = 2;
    ui->groups[0] = 8;
    ui->groups[1] = 9;
    struct asuser_who w;
    asuser_perm_who_of(ui, &w);
    assert_int_equal(w.uid, 7);
    assert_int_equal(w.gid, 8);
    assert_int_equal(w.ngroups, 2);
    assert_int_equal(w.groups[1], 9);
    free(ui);
}

/* ---- a lookup as the user, on a tree of the test's ----------------------- */

static char dir[64];

static void at(char *out, const char *rel) { snprintf(out, PATH_MAX, "%s/%s", dir, rel); }

static void mk(const char *rel, mode_t mode)
{
    char p[PATH_MAX];
    at(p, rel);
    assert_int_equal(mkdir(p, mode), 0);
    assert_int_equal(chmod(p, mode), 0);
}

static void ln(const char *text, const char *rel)
{
    char p[PATH_MAX];
    at(p, rel);
    assert_int_equal(symlink(text, p), 0);
}

/* asuser_perm_resolve of dir/rel for w: 0 and the path (relative to dir) in
 * *got, or -1 and errno. */
static int resolve(const struct asuser_who *w, const char *rel, char *got)
{
    char p[PATH_MAX], out[PATH_MAX];
    at(p, rel);
    if (asuser_perm_resolve(w, p, out, sizeof out) < 0) return -1;
    size_t dl = strlen(dir);
    assert_memory_equal(out, dir, dl);
    strcpy(got, out[dl] ? out + dl + 1 : "");
    return 0;
}

static void test_resolve(void **s)
{
    (void)s;
    struct asuser_who u = who(1000, 1000, NULL, 0), r = who(0, 0, NULL, 0);
    char got[PATH_MAX];
    mk("open", 0755);
    mk("open/sub", 0755);
    mk("shut", 0700);
    mk("shut/in", 0755);
    mk("sticky", 01777);
    ln("sub", "open/rel");                 /* relative */
    ln("../shut/in", "open/through");      /* through a directory u may not search */
    ln("through", "open/hop");             /* ... one hop further */
    ln("loop2", "open/loop1");
    ln("loop1", "open/loop2");
    ln("../open/sub", "sticky/link");      /* root's, in root's sticky directory */
    char abs[PATH_MAX + 16];
    snprintf(abs, sizeof abs, "%s/open/sub", dir);
    ln(abs, "open/abs");                   /* absolute */
    assert_int_equal(resolve(&u, "open/rel", got), 0);
    assert_string_equal(got, "open/sub");
    assert_int_equal(resolve(&u, "open/abs", got), 0);
    assert_string_equal(got, "open/sub");
    assert_int_equal(resolve(&u, "open/./sub/../rel/", got), 0);
    assert_string_equal(got, "open/sub");
    assert_int_equal(resolve(&u, "open/through", got), -1);
    assert_int_equal(errno, EACCES);
    assert_int_equal(resolve(&u, "open/hop", got), -1);
    assert_int_equal(errno, EACCES);
    assert_int_equal(resolve(&r, "open/hop", got), 0); /* root may */
    assert_string_equal(got, "shut/in");
    assert_int_equal(resolve(&u, "open/loop1", got), -1);
    assert_int_equal(errno, ELOOP);
    assert_int_equal(resolve(&u, "open/missing", got), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(resolve(&u, "sticky/link", got), 0); /* the directory's owner's link */
    assert_string_equal(got, "open/sub");
    char p[PATH_MAX];
    at(p, "sticky/link");
    assert_int_equal(lchown(p, 2000, 2000), 0); /* someone else's: not followed */
    assert_int_equal(resolve(&u, "sticky/link", got), -1);
    assert_int_equal(errno, EACCES);
    assert_int_equal(lchown(p, 1000, 1000), 0); /* u's own */
    assert_int_equal(resolve(&u, "sticky/link", got), 0);
    assert_int_equal(asuser_perm_resolve(&u, "relative", got, sizeof got), -1);
    assert_int_equal(errno, EINVAL);
}

static int setup(void **s)
{
    (void)s;
    strcpy(dir, "/tmp/test_fsperm.XXXXXX");
    if (!mkdtemp(dir)) return -1;
    return chmod(dir, 0755);
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode_bits), cmocka_unit_test(test_acl),
        cmocka_unit_test(test_who_of),    cmocka_unit_test(test_resolve),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
