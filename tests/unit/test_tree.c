/*
 * test_tree.c - the tree service (inotify/tree/tree.c, watch.c, list.c,
 * probe.c, mark.c) read exactly when the test says: nothing is read until
 * tree_drain, so "the watcher is slower than the writer" is a fact here,
 * not a race. The case: mkdir a; mkdir a/x; mv a bN; mkdir a; touch bN/x/f,
 * all before the service reads "a created" - by then the path a names a
 * later directory. Every bN must keep its subtree and its events under its
 * own name, and nothing be reported under a path that never held it; the
 * same with watches added by path (no /proc). Directories renamed back and
 * forth (mv pN rN; mv rN pN) with files written in between, all before the
 * service reads: each event under the name the renames read before it gave
 * its directory, also when a rename's IN_MOVED_FROM ends one read and its
 * IN_MOVED_TO begins the next. And a front-end's admission
 * (tree_set_admit): a refused directory is never watched or listed, in the
 * first walk or when it appears, and a change of its attributes is
 * followed both ways. At the inotify watch limit (a user namespace's own,
 * in a child): every directory is watched or named in an error line - the
 * ones below a directory that cannot be watched too, and a burst read late
 * has every directory it announced watched before any is listed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "inotify/tree/tree.h"
#include "inotify/tree/tree_priv.h" /* no_proc: the fallback without /proc */

#include <ev.h>

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EVENTS 4096
#define ROUNDS 20

struct seen {
    int n;
    uint32_t mask[MAX_EVENTS];
    char *path[MAX_EVENTS];
    int lost, ended;
};

static void on_event(void *ctx, uint32_t mask, const char *path, size_t len, const char *error)
{
    (void)error;
    struct seen *c = ctx;
    if (memmem(path, len, "/fill", 5)) return; /* padding, never looked at */
    if (c->n == MAX_EVENTS) return;
    c->mask[c->n] = mask;
    c->path[c->n] = strndup(path, len);
    c->n++;
}
static void on_lost(void *ctx) { ((struct seen *)ctx)->lost++; }
static void on_settling(void *ctx, int on) { (void)ctx, (void)on; }
static void on_drained(void *ctx) { (void)ctx; }
static void on_end(void *ctx, enum tree_end why, const char *msg)
{
    (void)why, (void)msg;
    ((struct seen *)ctx)->ended++;
}

static const struct tree_ops ops = {on_event, on_lost, on_settling, on_drained, on_end};

static char root[64];

static void at(char *out, size_t cap, const char *fmt, int n)
{
    char rel[64];
    snprintf(rel, sizeof rel, fmt, n);
    snprintf(out, cap, "%s/%s", root, rel);
}

static void mkdir_at(const char *fmt, int n)
{
    char p[160];
    at(p, sizeof p, fmt, n);
    assert_int_equal(mkdir(p, 0700), 0);
}

static void touch_at(const char *fmt, int n)
{
    char p[160];
    at(p, sizeof p, fmt, n);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static void rename_at(const char *from, const char *to_fmt, int n)
{
    char a[160], b[160];
    at(a, sizeof a, from, 0);
    at(b, sizeof b, to_fmt, n);
    assert_int_equal(rename(a, b), 0);
}

static int has(const struct seen *c, uint32_t mask, const char *fmt, int n)
{
    char p[160];
    at(p, sizeof p, fmt, n);
    for (int i = 0; i < c->n; i++)
        if (c->mask[i] == mask && !strcmp(c->path[i], p)) return 1;
    return 0;
}

/* Every path reported is one that existed: a, a/x, bN, bN/x, bN/x/f, bN/x/g. */
static int allowed(const char *path)
{
    size_t rl = strlen(root);
    if (strncmp(path, root, rl) || path[rl] != '/') return 0;
    const char *rel = path + rl + 1;
    if (!strcmp(rel, "a") || !strcmp(rel, "a/x")) return 1;
    int n, end = -1;
    char rest[32] = "";
    if (sscanf(rel, "b%d%n", &n, &end) != 1 || end < 0) return 0;
    snprintf(rest, sizeof rest, "%s", rel + end);
    return n >= 0 && n < ROUNDS &&
           (!*rest || !strcmp(rest, "/x") || !strcmp(rest, "/x/f") || !strcmp(rest, "/x/g"));
}

static void renamed_and_recreated(int no_proc)
{
    strcpy(root, "/tmp/test_wsync.XXXXXX");
    assert_non_null(mkdtemp(root));
    struct seen *c = calloc(1, sizeof *c);
    char err[ERR_LEN];
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct tree *w = tree_new(root, 1, &ops, c, err);
    assert_non_null(w);
    w->no_proc = no_proc;
    assert_int_equal(tree_start(w, loop, err), 0);

    mkdir_at("a", 0);
    for (int n = 0; n < ROUNDS; n++) {
        mkdir_at("a/x", 0);
        rename_at("a", "b%d", n);
        mkdir_at("a", 0);
        touch_at("b%d/x/f", n);
    }
    tree_drain(w); /* all of it at once, long after */
    for (int n = 0; n < ROUNDS; n++) touch_at("b%d/x/g", n);
    tree_drain(w);

    assert_int_equal(c->lost, 0);
    assert_int_equal(c->ended, 0);
    for (int i = 0; i < c->n; i++) {
        if (!allowed(c->path[i])) fail_msg("reported under a path it never had: %s", c->path[i]);
        assert_int_not_equal(c->mask[i], IN_Q_OVERFLOW);
    }
    for (int n = 0; n < ROUNDS; n++) {
        if (!has(c, IN_CREATE, "b%d/x/f", n)) fail_msg("b%d/x/f: no IN_CREATE", n);
        if (!has(c, IN_CREATE, "b%d/x/g", n)) fail_msg("b%d/x/g: no IN_CREATE (x not watched)", n);
    }
    tree_free(w);
    ev_loop_destroy(loop);
    for (int i = 0; i < c->n; i++) free(c->path[i]);
    free(c);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_renamed_and_recreated_before_read(void **s)
{
    (void)s;
    renamed_and_recreated(0);
}

/* Without /proc, watches are added by path: the same outcome when nothing
 * moves between the open and the watch. */
static void test_renamed_and_recreated_without_proc(void **s)
{
    (void)s;
    renamed_and_recreated(1);
}

/* ---- renamed back and forth ---------------------------------------------- */

#define DIRS 10
#define SWAPS 10

static void rename_pair(const char *from_fmt, const char *to_fmt, int n)
{
    char a[160], b[160];
    at(a, sizeof a, from_fmt, n);
    at(b, sizeof b, to_fmt, n);
    assert_int_equal(rename(a, b), 0);
}

static void touch_in(const char *dir_fmt, int n, const char *file, int k)
{
    char rel[64];
    snprintf(rel, sizeof rel, "%s/%s%d-%d", dir_fmt, file, n, k);
    touch_at(rel, n);
}

/* One round for directory n: a file, the rename there, a file, the rename
 * back, a file. */
static void swap_round(int n, int k)
{
    touch_in("p%d", n, "a", k);
    rename_pair("p%d", "r%d", n);
    touch_in("r%d", n, "b", k);
    rename_pair("r%d", "p%d", n);
    touch_in("p%d", n, "c", k);
}

static int closed_under(const struct seen *c, char dir, int n, const char *file, int k)
{
    char rel[64];
    snprintf(rel, sizeof rel, "%c%d/%s%d-%d", dir, n, file, n, k);
    return has(c, IN_CLOSE_WRITE, rel, 0);
}

/* The IN_CLOSE_WRITE of file N-k of directory n: under dir N (exact), or
 * under either of its names. */
static void expect_closed(const struct seen *c, char dir, int n, const char *file, int k, int exact)
{
    if (closed_under(c, dir, n, file, k) || (!exact && closed_under(c, dir == 'p' ? 'r' : 'p', n, file, k)))
        return;
    fail_msg("no IN_CLOSE_WRITE for %c%d/%s%d-%d%s", dir, n, file, n, k, exact ? "" : " (nor its other name)");
}

static struct tree *swap_start(struct seen *c, struct ev_loop *loop, int no_proc)
{
    strcpy(root, "/tmp/test_wsync.XXXXXX");
    assert_non_null(mkdtemp(root));
    for (int n = 0; n < DIRS - 1; n++) mkdir_at("p%d", n);
    char err[ERR_LEN];
    struct tree *w = tree_new(root, 1, &ops, c, err);
    assert_non_null(w);
    w->no_proc = no_proc;
    assert_int_equal(tree_start(w, loop, err), 0);
    mkdir_at("p%d", DIRS - 1); /* one that appears while watched */
    /* The marks behind the first walk and behind the new directory's
     * watch: in step from here. */
    tree_drain(w);
    return w;
}

static void swap_end(struct tree *w, struct ev_loop *loop, struct seen *c)
{
    tree_free(w);
    ev_loop_destroy(loop);
    for (int i = 0; i < c->n; i++) free(c->path[i]);
    free(c);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void back_and_forth(int no_proc)
{
    struct seen *c = calloc(1, sizeof *c);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct tree *w = swap_start(c, loop, no_proc);
    for (int k = 0; k < SWAPS; k++)
        for (int n = 0; n < DIRS; n++) swap_round(n, k);
    tree_drain(w); /* every rename read long after the directory came back */
    assert_int_equal(c->lost, 0);
    assert_int_equal(c->ended, 0);
    for (int i = 0; i < c->n; i++) assert_int_not_equal(c->mask[i], IN_Q_OVERFLOW);
    /* Without /proc there is no mark: each rename is checked by inode, and a
     * directory back at its old name by then keeps it (README). */
    for (int k = 0; k < SWAPS; k++)
        for (int n = 0; n < DIRS; n++) {
            expect_closed(c, 'p', n, "a", k, !no_proc);
            expect_closed(c, 'r', n, "b", k, !no_proc);
            expect_closed(c, 'p', n, "c", k, !no_proc);
        }
    swap_end(w, loop, c);
}

static void test_renamed_back_and_forth_before_read(void **s)
{
    (void)s;
    back_and_forth(0);
}

static void test_renamed_back_and_forth_without_proc(void **s)
{
    (void)s;
    back_and_forth(1);
}

/* The IN_MOVED_FROM of p0 -> r0 is the last event of one read (TREE_READ_BUF
 * bytes), its IN_MOVED_TO the first of the next: 8,191 events of 32 bytes
 * (names of 8 bytes) queued before it. */
static void test_rename_split_across_reads(void **s)
{
    (void)s;
    struct seen *c = calloc(1, sizeof *c);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct tree *w = swap_start(c, loop, 0);
    size_t ev = sizeof(struct inotify_event) + 16, fill = TREE_READ_BUF / ev - 1;
    for (size_t i = 0; i < fill / 2; i++) touch_at("fill%04d", (int)i); /* IN_CREATE, IN_CLOSE_WRITE */
    char p[160];
    at(p, sizeof p, "fill%04d", 0);
    assert_int_equal(unlink(p), 0); /* IN_DELETE: the odd one */
    int queued = -1;
    assert_int_equal(ioctl(w->fd, FIONREAD, &queued), 0);
    assert_int_equal((size_t)queued, fill * ev);
    swap_round(0, 0);
    tree_drain(w);
    assert_int_equal(c->lost, 0);
    expect_closed(c, 'p', 0, "a", 0, 1);
    expect_closed(c, 'r', 0, "b", 0, 1);
    expect_closed(c, 'p', 0, "c", 0, 1);
    assert_true(has(c, IN_MOVED_FROM | IN_ISDIR, "p%d", 0) && has(c, IN_MOVED_TO | IN_ISDIR, "r%d", 0));
    swap_end(w, loop, c);
}

/* ---- admission ------------------------------------------------------------ */

/* The test's rule: a directory of mode 0711 is refused. */
static int admit(void *ctx, int fd, const struct stat *st)
{
    (void)ctx;
    assert_true(fd >= 0); /* root opens everything */
    return (st->st_mode & 07777) != 0711;
}

static void chmod_at(const char *rel, mode_t mode)
{
    char p[160];
    at(p, sizeof p, rel, 0);
    assert_int_equal(chmod(p, mode), 0);
}

/* Something reported at or below rel. */
static int any_under(const struct seen *c, const char *rel)
{
    char p[160];
    at(p, sizeof p, rel, 0);
    size_t n = strlen(p);
    for (int i = 0; i < c->n; i++)
        if (!strncmp(c->path[i], p, n) && c->path[i][n] == '/') return 1;
    return 0;
}

static void test_admission_refuses_and_follows_attributes(void **s)
{
    (void)s;
    strcpy(root, "/tmp/test_wsync.XXXXXX");
    assert_non_null(mkdtemp(root));
    mkdir_at("old", 0);
    mkdir_at("old/x", 0);
    touch_at("old/f", 0);
    chmod_at("old", 0711);
    struct seen *c = calloc(1, sizeof *c);
    char err[ERR_LEN];
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct tree *w = tree_new(root, 1, &ops, c, err);
    assert_non_null(w);
    tree_set_admit(w, admit); /* no IN_ATTRIB asked for: watched for admit, never reported */
    assert_int_equal(tree_start(w, loop, err), 0);

    mkdir_at("shut", 0);
    chmod_at("shut", 0711);
    touch_at("shut/f", 0);
    mkdir_at("open", 0);
    touch_at("open/g", 0);
    tree_drain(w);
    assert_true(has(c, IN_CREATE | IN_ISDIR, "shut", 0));
    assert_true(has(c, IN_CREATE, "open/g", 0));
    assert_false(any_under(c, "shut"));

    chmod_at("shut", 0755); /* admitted now: watched and listed */
    tree_drain(w);
    assert_true(has(c, IN_CREATE, "shut/f", 0));
    touch_at("shut/h", 0);
    tree_drain(w);
    assert_true(has(c, IN_CREATE, "shut/h", 0));

    chmod_at("shut", 0711); /* refused again: forgotten */
    int before = c->n;
    touch_at("shut/i", 0);
    touch_at("open/j", 0);
    tree_drain(w);
    assert_false(has(c, IN_CREATE, "shut/i", 0));
    assert_true(has(c, IN_CREATE, "open/j", 0));
    assert_int_equal(c->n, before + 2); /* open/j's IN_CREATE and IN_CLOSE_WRITE only */

    assert_false(any_under(c, "old"));
    chmod_at("old", 0755);
    tree_drain(w);
    assert_true(has(c, IN_CREATE | IN_ISDIR, "old/x", 0));
    assert_true(has(c, IN_CREATE, "old/f", 0));

    /* Changed, then its parent renamed, before the service reads: its path
     * is stale when asked, so it is forgotten, and found again once the
     * rename is read. */
    chmod_at("old/x", 0750);
    rename_at("old", "new%d", 0);
    tree_drain(w);
    touch_at("new0/x/y", 0);
    tree_drain(w);
    assert_true(has(c, IN_CREATE, "new0/x/y", 0));
    for (int i = 0; i < c->n; i++) assert_false(c->mask[i] & (IN_ATTRIB | IN_Q_OVERFLOW));
    assert_int_equal(c->lost, 0);
    assert_int_equal(c->ended, 0);

    tree_free(w);
    ev_loop_destroy(loop);
    for (int i = 0; i < c->n; i++) free(c->path[i]);
    free(c);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* ---- the watch limit ------------------------------------------------------- */

#define LIMIT 30   /* ROOT, the mark's, 28 directories: the mark's is given up for one */
#define NO_USERNS 77

/* The directories, in the order they are made: 5 tops, then 10 in each
 * (`lagged`), or 3 tops with 5 in each and 3 in each of those. */
static int ndirs;
static char dirs[80][48];

static void plan(int lagged)
{
    ndirs = 0;
    for (int t = 0; t < (lagged ? 5 : 3); t++) snprintf(dirs[ndirs++], sizeof dirs[0], "t%d", t);
    for (int t = 0, top = ndirs; t < top; t++)
        for (int k = 0; k < (lagged ? 10 : 5); k++) snprintf(dirs[ndirs++], sizeof dirs[0], "t%d/s%d", t, k);
    for (int t = 0; !lagged && t < 3; t++)
        for (int k = 0; k < 5; k++)
            for (int m = 0; m < 3; m++) snprintf(dirs[ndirs++], sizeof dirs[0], "t%d/s%d/c%d", t, k, m);
}

static int put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0) close(fd);
    return ok ? 0 : -1;
}

/* This process in a user namespace of its own (root mapped to us) whose
 * watch limit is LIMIT. */
static int limited(void)
{
    char map[32];
    unsigned uid = getuid(), gid = getgid();
    if (unshare(CLONE_NEWUSER) < 0 || put("/proc/self/setgroups", "deny") < 0) return -1;
    snprintf(map, sizeof map, "0 %u 1", uid);
    if (put("/proc/self/uid_map", map) < 0) return -1;
    snprintf(map, sizeof map, "0 %u 1", gid);
    if (put("/proc/self/gid_map", map) < 0) return -1;
    snprintf(map, sizeof map, "%d", LIMIT);
    return put("/proc/sys/user/max_inotify_watches", map);
}

static int make_all(const char *file)
{
    char p[160];
    for (int i = 0; i < ndirs; i++) {
        snprintf(p, sizeof p, "%s/%s%s", root, dirs[i], file);
        int fd = *file ? open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600) : mkdir(p, 0700);
        if (fd < 0) return -1;
        if (*file) close(fd);
    }
    return 0;
}

/* The child: the scenario, and what went wrong as its exit status (no
 * cmocka here: a failed assertion would carry on in the child). */
static int at_limit(int lagged)
{
    if (limited() < 0) return NO_USERNS;
    plan(lagged);
    struct seen *c = calloc(1, sizeof *c);
    char err[ERR_LEN];
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    if (!c || !loop || (!lagged && make_all("") < 0)) return 10;
    struct tree *w = tree_new(root, 1, &ops, c, err);
    if (!w || tree_start(w, loop, err) < 0) return 11;
    if (lagged && make_all("") < 0) return 10;
    tree_drain(w); /* a burst, read long after */
    if (make_all("/f") < 0) return 10;
    tree_drain(w);
    int named = 0;
    for (int i = 0; i < ndirs; i++) {
        char f[56];
        snprintf(f, sizeof f, "%s/f", dirs[i]);
        int err_line = has(c, IN_Q_OVERFLOW, dirs[i], 0), watched = has(c, IN_CREATE, f, 0);
        named += err_line;
        if (err_line == watched) {
            fprintf(stderr, "%s: %s\n", dirs[i], err_line ? "named and watched" : "neither watched nor named");
            return 1;
        }
        if (lagged && !strchr(dirs[i], '/') && !watched) {
            fprintf(stderr, "%s: not watched (a sibling's subdirectories were first)\n", dirs[i]);
            return 2;
        }
    }
    tree_free(w);
    return named ? 0 : 3; /* 3: the limit was not reached, the test tests nothing */
}

static void run_at_limit(int lagged)
{
    strcpy(root, "/tmp/test_wsync.XXXXXX");
    assert_non_null(mkdtemp(root));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(at_limit(lagged));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == NO_USERNS) skip(); /* no user namespace with a limit of its own */
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The first walk: where a whole tN/sK cannot be watched, each directory
 * below it is named too. */
static void test_limit_below_an_unwatched_directory(void **s)
{
    (void)s;
    run_at_limit(0);
}

/* Five directories, then ten in each, all made before the service reads:
 * the five are watched before any is listed, and the rest either watched or
 * named. */
static void test_limit_burst_read_late(void **s)
{
    (void)s;
    run_at_limit(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renamed_and_recreated_before_read),
        cmocka_unit_test(test_renamed_and_recreated_without_proc),
        cmocka_unit_test(test_renamed_back_and_forth_before_read),
        cmocka_unit_test(test_renamed_back_and_forth_without_proc),
        cmocka_unit_test(test_rename_split_across_reads),
        cmocka_unit_test(test_admission_refuses_and_follows_attributes),
        cmocka_unit_test(test_limit_below_an_unwatched_directory),
        cmocka_unit_test(test_limit_burst_read_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
