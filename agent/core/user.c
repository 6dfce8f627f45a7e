/*
 * user.c - users from passwd and group files (see user.h): lookups by name
 * or uid, and names by id.
 *
 * passwd: name:password:uid:gid:gecos:home:shell
 * group:  name:password:gid:member,member,...
 * Comment lines, blank lines, NIS "+"/"-" lines and malformed lines are
 * skipped, as the C library's files backend skips them.
 */
#include "agent/core/user.h"
#include "agent/core/err.h"
#include "agent/core/log.h"
#include "agent/core/lsplit.h"
#include "agent/core/num.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define FIELDS_MAX 7

struct field {
    const char *p;
    size_t n;
};

/* Split p[0..n) at ':' into exactly nf fields. Returns 0, or -1. */
static int split(const char *p, size_t n, struct field *f, int nf)
{
    int i = 0;
    const char *end = p + n;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        if (i == nf) return -1;
        f[i].p = p;
        f[i].n = c ? (size_t)(c - p) : (size_t)(end - p);
        i++;
        if (!c) break;
        p = c + 1;
    }
    return i == nf ? 0 : -1;
}

static int field_eq(const struct field *f, const char *s) { return strlen(s) == f->n && !memcmp(f->p, s, f->n); }

/* A uid or gid field. Returns 0, or -1. */
static int field_id(const struct field *f, unsigned *out)
{
    char num[24];
    uint64_t v;
    if (f->n == 0 || f->n >= sizeof num) return -1;
    memcpy(num, f->p, f->n);
    num[f->n] = '\0';
    if (num_count(num, UINT32_MAX - 1, &v) < 0) return -1;
    *out = (unsigned)v;
    return 0;
}

static int field_copy(const struct field *f, char *dst, size_t cap)
{
    if (f->n >= cap) return -1;
    memcpy(dst, f->p, f->n);
    dst[f->n] = '\0';
    return 0;
}

static int skipped_line(const char *p, size_t n) { return n == 0 || p[0] == '#' || p[0] == '+' || p[0] == '-'; }

/* Feed every line of path to fn (stopping when it returns nonzero). Returns
 * 0, or -1 with errno set when the file cannot be read. */
static int each_line(const char *path, lsplit_fn fn, void *ctx)
{
    /* openat: musl's open follows O_CLOEXEC with an F_SETFD of its own. */
    int fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct lsplit ls;
    lsplit_init(&ls, USER_LINE_MAX);
    static char chunk[READ_CHUNK];
    int stop = 0, rc = 0;
    while (!stop) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) rc = -1;
        if (r <= 0) break;
        stop = lsplit_feed(&ls, chunk, (size_t)r, fn, ctx) < (size_t)r;
    }
    int e = errno;
    /* The last line may lack its newline. */
    if (!stop && rc == 0 && lsplit_pending(&ls)) fn(ctx, LSPLIT_LINE, ls.part.data, ls.part.len);
    lsplit_free(&ls);
    close(fd);
    errno = e;
    return rc;
}

struct pw_search {
    const char *name;  /* NULL: by uid */
    uid_t uid;
    struct user_info *u;
    int found;
};

static int on_passwd_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct pw_search *s = ctx;
    struct field f[FIELDS_MAX];
    unsigned uid, gid;
    if (kind != LSPLIT_LINE || skipped_line(p, n) || split(p, n, f, 7) < 0) return 0;
    if (s->name && !field_eq(&f[0], s->name)) return 0;
    if (field_id(&f[2], &uid) < 0 || field_id(&f[3], &gid) < 0) return 0;
    if (!s->name && uid != s->uid) return 0;
    struct user_info *u = s->u;
    if (field_copy(&f[0], u->name, sizeof u->name) < 0 || field_copy(&f[5], u->home, sizeof u->home) < 0 ||
        field_copy(&f[6], u->shell, sizeof u->shell) < 0)
        return 0;
    if (!u->shell[0]) strcpy(u->shell, "/bin/sh");
    u->uid = uid;
    u->gid = gid;
    s->found = 1;
    return 1;
}

static void add_group(struct user_info *u, gid_t g)
{
    for (size_t i = 0; i < u->ngroups; i++)
        if (u->groups[i] == g) return;
    if (u->ngroups == USER_GROUPS_MAX) {
        log_debug("user %s: more than %d groups; group %u dropped", u->name, USER_GROUPS_MAX, (unsigned)g);
        return;
    }
    u->groups[u->ngroups++] = g;
}

static int member_of(const struct field *members, const char *name)
{
    const char *p = members->p, *end = p + members->n;
    size_t len = strlen(name);
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t n = c ? (size_t)(c - p) : (size_t)(end - p);
        if (n == len && !memcmp(p, name, n)) return 1;
        p += n + 1;
    }
    return 0;
}

static int on_group_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct user_info *u = ctx;
    struct field f[FIELDS_MAX];
    unsigned gid;
    if (kind != LSPLIT_LINE || skipped_line(p, n) || split(p, n, f, 4) < 0) return 0;
    if (field_id(&f[2], &gid) == 0 && member_of(&f[3], u->name)) add_group(u, gid);
    return 0;
}

static void read_groups(struct user_info *u, const char *group)
{
    u->ngroups = 0;
    add_group(u, u->gid);
    if (each_line(group, on_group_line, u) < 0)
        log_debug("%s: %s; user %s gets its primary group only", group, strerror(errno), u->name);
}

static int lookup(struct pw_search *s, const char *passwd, const char *group, char *err)
{
    memset(s->u, 0, sizeof *s->u);
    if (s->name && !*s->name) {
        err_set(err, "unknown user ''");
        errno = ENOENT;
        return -1;
    }
    if (each_line(passwd, on_passwd_line, s) < 0) {
        int e = errno;
        err_set(err, "cannot read %s: %s", passwd, strerror(e));
        errno = e;
        return -1;
    }
    if (!s->found) {
        if (s->name) err_set(err, "unknown user '%s'", s->name);
        else err_set(err, "no user with uid %u", (unsigned)s->uid);
        errno = ENOENT;
        return -1;
    }
    read_groups(s->u, group);
    return 0;
}

int user_lookup(const char *name, const char *passwd, const char *group, struct user_info *u, char *err)
{
    struct pw_search s = {.name = name, .u = u};
    return lookup(&s, passwd, group, err);
}

int user_lookup_uid(uid_t uid, const char *passwd, const char *group, struct user_info *u, char *err)
{
    struct pw_search s = {.name = NULL, .uid = uid, .u = u};
    return lookup(&s, passwd, group, err);
}

/* ---- names by id ---- */

void user_names_init(struct user_names *c, const char *passwd, const char *group)
{
    memset(c, 0, sizeof *c);
    c->passwd = passwd;
    c->group = group;
}

struct name_search {
    unsigned id;
    char *out;
    int found;
};

/* name:x:id[:...] in either file (the fields after the id need not be
 * there, as ls needs only these three): the first line with the id wins. */
static int on_name_line(void *ctx, enum lsplit_kind kind, const char *p, size_t n)
{
    struct name_search *s = ctx;
    struct field f[3];
    unsigned id;
    const char *c2 = NULL, *c1 = memchr(p, ':', n);
    if (c1) c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - p));
    if (kind != LSPLIT_LINE || skipped_line(p, n) || !c2 || c1 == p) return 0;
    const char *end = memchr(c2 + 1, ':', n - (size_t)(c2 + 1 - p));
    f[0] = (struct field){p, (size_t)(c1 - p)};
    f[2] = (struct field){c2 + 1, end ? (size_t)(end - c2 - 1) : n - (size_t)(c2 + 1 - p)};
    if (field_id(&f[2], &id) < 0 || id != s->id || field_copy(&f[0], s->out, USER_NAME_MAX) < 0) return 0;
    s->found = 1;
    return 1;
}

const char *user_names_get(struct user_names *c, unsigned id, int is_group)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].id == id && c->e[i].is_group == is_group) return c->e[i].name;
    size_t slot = c->n < USER_NAMES_CACHE ? c->n++ : c->next++ % USER_NAMES_CACHE;
    c->e[slot].id = id;
    c->e[slot].is_group = is_group;
    struct name_search s = {id, c->e[slot].name, 0};
    if (each_line(is_group ? c->group : c->passwd, on_name_line, &s) < 0 || !s.found)
        snprintf(c->e[slot].name, sizeof c->e[slot].name, "%u", id);
    return c->e[slot].name;
}

/* ---- the agent's own ---- */

void user_self(const char *passwd, const char *group, struct user_info *u)
{
    if (user_lookup_uid(geteuid(), passwd, group, u, NULL) == 0) return;
    memset(u, 0, sizeof *u);
    u->uid = geteuid();
    u->gid = getegid();
    snprintf(u->name, sizeof u->name, "%u", (unsigned)u->uid);
    strcpy(u->home, "/");
    strcpy(u->shell, "/bin/sh");
    gid_t g[USER_GROUPS_MAX];
    int n = getgroups(USER_GROUPS_MAX, g);
    add_group(u, u->gid);
    for (int i = 0; i < n; i++) add_group(u, g[i]);
}
