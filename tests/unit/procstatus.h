/*
 * procstatus.h - for the unit tests of starting a child (test_spawn.c, in
 * both of the child's modes): the hex masks of /proc/PID/status (SigBlk, SigIgn,
 * SigCgt), of a child's printed status or of the test's own, so that a
 * child's signal state is compared with what the test was started with.
 */
#ifndef SA_TESTS_UNIT_PROCSTATUS_H
#define SA_TESTS_UNIT_PROCSTATUS_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The mask after field ("SigIgn:\t") in the text of a status file. */
static unsigned long long procstatus_mask(const char *status, const char *field)
{
    const char *p = strstr(status, field);
    assert_non_null(p);
    return strtoull(p + strlen(field), NULL, 16);
}

/* The same field of this process's own status. */
static unsigned long long procstatus_own(const char *field)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = '\0';
    return procstatus_mask(buf, field);
}

#endif
