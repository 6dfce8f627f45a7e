/*
 * err.c - err_set (see err.h).
 */
#include "agent/core/err.h"

#include <stdarg.h>
#include <stdio.h>

void err_set(char *err, const char *fmt, ...)
{
    va_list ap;
    if (!err) return;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
}
