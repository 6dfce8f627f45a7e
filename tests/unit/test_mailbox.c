/*
 * test_mailbox.c - the mailbox follower (agent/session/mailbox.c) on a real
 * file in a temporary directory, driven by its own ev loop: existing lines,
 * appends, a partial last line, a file created later, truncation (shorter,
 * and refilled past the old offset), replacement by rename, pausing inside
 * the callback, a too-long line, paths that name no file, running out of
 * memory in mailbox_start (nothing leaks: LeakSanitizer checks at exit), and
 * a file bigger than a slice read over several loop turns.
 *
 * No sleeps: each step writes, then runs the loop until what it waits for
 * has happened (inotify makes that one turn; the poll timer bounds it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "agent/session/mailbox.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S(x) x, sizeof(x) - 1

/* strdup and strndup are interposed for this binary (mailbox.o's calls
 * resolve to these): the fail_dup_at-th call from now fails, 0 never. */
static int fail_dup_at, dup_calls;

static char *dup_or_fail(const char *s, size_t n)
{
    if (fail_dup_at && ++dup_calls == fail_dup_at) return NULL;
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *strdup(const char *s) { return dup_or_fail(s, strlen(s)); }
char *strndup(const char *s, size_t n) { return dup_or_fail(s, strnlen(s, n)); }

struct got {
    struct mailbox *mb;
    int lines, large;
    int pause_at;            /* pause inside the callback after this many lines */
    char all[4096];          /* every line, each followed by '\n' */
    size_t all_len;
};

struct fixture {
    struct ev_loop *loop;
    struct mailbox mb;
    struct got g;
    char dir[64];
    char path[128];
};

static int collect(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct got *g = ctx;
    if (kind == LSPLIT_TOO_LARGE) {
        g->large++;
        return 0;
    }
    g->lines++;
    if (g->all_len + n + 1 <= sizeof g->all) {
        memcpy(g->all + g->all_len, p, n);
        g->all_len += n;
        g->all[g->all_len++] = '\n';
    }
    if (g->pause_at && g->lines == g->pause_at) {
        mailbox_pause(g->mb);
        return 1;
    }
    return 0;
}

/* Run the loop until cond holds; each turn ends at an event or a poll tick. */
#define RUN_UNTIL(f, cond)                                                      \
    do {                                                                        \
        for (int i_ = 0; i_ < 100 && !(cond); i_++) ev_run((f)->loop, EVRUN_ONCE); \
        assert_true(cond);                                                      \
    } while (0)

static void put(const char *path, const char *data, size_t n, int flags)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

static void append(struct fixture *f, const char *data, size_t n) { put(f->path, data, n, O_APPEND); }

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_mailbox.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/mailbox.jsonl", f->dir);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->loop);
    f->g.mb = &f->mb;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char other[160];
    mailbox_stop(&f->mb);
    ev_loop_destroy(f->loop);
    unlink(f->path);
    snprintf(other, sizeof other, "%s/new", f->dir);
    unlink(other);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void start(struct fixture *f, size_t line_max)
{
    char err[ERR_LEN];
    assert_int_equal(mailbox_start(&f->mb, f->loop, f->path, line_max, collect, &f->g, err), 0);
}

static void expect(struct fixture *f, const char *all)
{
    assert_int_equal(f->g.all_len, strlen(all));
    assert_memory_equal(f->g.all, all, f->g.all_len);
}

static void test_existing_appended_partial(void **state)
{
    struct fixture *f = *state;
    put(f->path, S("a\nb\n"), O_TRUNC);
    start(f, 1024);
    RUN_UNTIL(f, f->g.lines == 2);
    expect(f, "a\nb\n");
    append(f, S("c\npart"));
    RUN_UNTIL(f, f->mb.off == 10);
    /* The partial last line waits for its newline. */
    assert_int_equal(f->g.lines, 3);
    assert_int_equal(lsplit_pending(&f->mb.split), 4);
    append(f, S("ial\n"));
    RUN_UNTIL(f, f->g.lines == 4);
    expect(f, "a\nb\nc\npartial\n");
}

static void test_created_later(void **state)
{
    struct fixture *f = *state;
    start(f, 1024);
    ev_run(f->loop, EVRUN_ONCE); /* the first look: no file yet */
    assert_int_equal(f->g.lines, 0);
    assert_int_equal(f->mb.fd, -1);
    put(f->path, S("x\n"), O_TRUNC);
    RUN_UNTIL(f, f->g.lines == 1);
    expect(f, "x\n");
}

static void test_truncation_restarts_at_zero(void **state)
{
    struct fixture *f = *state;
    put(f->path, S("one\ntwo\n"), O_TRUNC);
    start(f, 1024);
    RUN_UNTIL(f, f->g.lines == 2);
    /* Shorter than the offset: read again from 0. */
    put(f->path, S("3\n"), O_TRUNC);
    RUN_UNTIL(f, f->g.lines == 3);
    expect(f, "one\ntwo\n3\n");
    assert_int_equal(f->mb.off, 2);
    /* Truncated and refilled past the old offset before we looked: the bytes
     * before the offset are not the ones we read, so again from 0. */
    put(f->path, S("ONE\nTWO\n"), O_TRUNC);
    RUN_UNTIL(f, f->g.lines == 5);
    expect(f, "one\ntwo\n3\nONE\nTWO\n");
    assert_int_equal(f->mb.off, 8);
}

static void test_replaced_by_rename(void **state)
{
    struct fixture *f = *state;
    char other[160];
    snprintf(other, sizeof other, "%s/new", f->dir);
    put(f->path, S("a\n"), O_TRUNC);
    start(f, 1024);
    RUN_UNTIL(f, f->g.lines == 1);
    /* What the old file still holds comes first, then the new file from 0. */
    append(f, S("b\n"));
    put(other, S("new\n"), O_TRUNC);
    assert_int_equal(rename(other, f->path), 0);
    RUN_UNTIL(f, f->g.lines == 3);
    expect(f, "a\nb\nnew\n");
}

static void test_pause_and_resume(void **state)
{
    struct fixture *f = *state;
    put(f->path, S("1\n2\n3\n"), O_TRUNC);
    f->g.pause_at = 2;
    start(f, 1024);
    RUN_UNTIL(f, f->g.lines == 2);
    /* Paused inside the callback: the offset stops right after line 2. */
    assert_int_equal(f->mb.off, 4);
    assert_int_equal(f->g.lines, 2);
    f->g.pause_at = 0;
    mailbox_resume(&f->mb); /* reads at once */
    assert_int_equal(f->g.lines, 3);
    expect(f, "1\n2\n3\n");
}

static void test_too_large_line(void **state)
{
    struct fixture *f = *state;
    put(f->path, S("0123456789abcdef0123456789abcdef\nok\n"), O_TRUNC);
    start(f, 16);
    RUN_UNTIL(f, f->g.lines == 1);
    assert_int_equal(f->g.large, 1);
    expect(f, "ok\n");
}

static void test_path_names_no_file(void **state)
{
    struct fixture *f = *state;
    char err[ERR_LEN];
    assert_int_equal(mailbox_start(&f->mb, f->loop, "/tmp/dir/", 1024, collect, &f->g, err), -1);
    assert_non_null(strstr(err, "names no file"));
    assert_int_equal(mailbox_start(&f->mb, f->loop, "", 1024, collect, &f->g, err), -1);
    assert_non_null(strstr(err, "names no file"));
    /* Nothing was started; teardown's stop is harmless. */
}

static void test_out_of_memory_frees_what_it_took(void **state)
{
    struct fixture *f = *state;
    char err[ERR_LEN];
    /* The path, its directory and its base name: each copy failing in turn.
     * What was copied before is freed (LeakSanitizer reports it otherwise). */
    for (int k = 1; k <= 3; k++) {
        struct mailbox mb;
        fail_dup_at = k;
        dup_calls = 0;
        assert_int_equal(mailbox_start(&mb, f->loop, f->path, 1024, collect, &f->g, err), -1);
        fail_dup_at = 0;
        assert_non_null(strstr(err, "out of memory"));
        assert_null(mb.path);
        assert_null(mb.dir);
        assert_null(mb.base);
        mailbox_stop(&mb); /* harmless after a failed start */
    }
}

static void test_big_file_read_in_slices(void **state)
{
    struct fixture *f = *state;
    /* 2.5 slices of 1 KiB lines. */
    enum { LINE = 1024, LINES = MAILBOX_SLICE / LINE * 5 / 2 };
    char *data = malloc((size_t)LINE * LINES);
    assert_non_null(data);
    memset(data, 'x', (size_t)LINE * LINES);
    for (int i = 1; i <= LINES; i++) data[(size_t)i * LINE - 1] = '\n';
    put(f->path, data, (size_t)LINE * LINES, O_TRUNC);
    free(data);
    start(f, 4096);
    /* One loop turn reads one slice, then hands the loop back. */
    ev_run(f->loop, EVRUN_ONCE);
    assert_int_equal(f->g.lines, MAILBOX_SLICE / LINE);
    assert_true(ev_is_active(&f->mb.more));
    RUN_UNTIL(f, f->g.lines == LINES);
    assert_false(ev_is_active(&f->mb.more));
    assert_int_equal(f->mb.off, (off_t)LINE * LINES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_existing_appended_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_restarts_at_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_by_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_large_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_names_no_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_frees_what_it_took, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_file_read_in_slices, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
