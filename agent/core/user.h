/*
 * user.h - users from the passwd and group files: who a process runs as (a
 * user name resolved into uid, gid, supplementary groups, home and shell,
 * the way a login resolves them; README "serve": users), and the names of
 * ids for listings. The one reader of those files.
 *
 * Owns the parsing of the two files, read in bounded lines (no NSS, so it
 * behaves the same in the static binary and in the tests). The file paths
 * are parameters (USER_PASSWD, USER_GROUP in the agent) so the unit test
 * (tests/unit/test_user.c) runs against files of its own.
 */
#ifndef SA_CORE_USER_H
#define SA_CORE_USER_H

#include <stddef.h>
#include <sys/types.h>

#define USER_PASSWD "/etc/passwd"
#define USER_GROUP "/etc/group"
/* A line of either file longer than this is skipped. */
#define USER_LINE_MAX 65536
/* Supplementary groups beyond this many are dropped (logged at debug). */
#define USER_GROUPS_MAX 256
#define USER_NAME_MAX 256
#define USER_PATH_MAX 4096

struct user_info {
    uid_t uid;
    gid_t gid;                       /* the primary group */
    size_t ngroups;
    gid_t groups[USER_GROUPS_MAX];   /* the primary group first, then each group naming the user */
    char name[USER_NAME_MAX];
    char home[USER_PATH_MAX];
    char shell[USER_PATH_MAX];       /* "/bin/sh" when the entry names none */
};

/* Resolve user `name`. Returns 0, or -1 with a message in err (ERR_LEN bytes)
 * and errno ENOENT for an unknown user (the message names it), or the errno
 * of reading passwd. An unreadable group file only loses the supplementary
 * groups. */
int user_lookup(const char *name, const char *passwd, const char *group, struct user_info *u, char *err);

/* The same by uid: the first passwd entry with that uid. */
int user_lookup_uid(uid_t uid, const char *passwd, const char *group, struct user_info *u, char *err);

/* Names by id, for listings (ls -l's owner and group): a small cache in
 * front of the files, so a listing of many files reads each file once per
 * id. A name is that of the first line with the id, else the number. */
#define USER_NAMES_CACHE 64
struct user_names {
    const char *passwd, *group; /* the files read (USER_PASSWD, USER_GROUP) */
    struct {
        unsigned id;
        int is_group;
        char name[USER_NAME_MAX];
    } e[USER_NAMES_CACHE];
    size_t n, next;
};

void user_names_init(struct user_names *c, const char *passwd, const char *group);
/* The name of uid (is_group 0) or gid (1). */
const char *user_names_get(struct user_names *c, unsigned id, int is_group);

/* The user this process runs as: its passwd entry, or when there is none a
 * made-up one (name: the uid in decimal, home "/", groups: the current
 * ones). Never fails. */
void user_self(const char *passwd, const char *group, struct user_info *u);

#endif
