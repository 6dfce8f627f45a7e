/*
 * budget.c - the process's memory budget (see budget.h).
 */
#include "agent/core/budget.h"

#include <assert.h>
#include <stdint.h>

static size_t limit, used, peak;

void budget_set(size_t n)
{
    limit = n;
    peak = used;
}

size_t budget_limit(void) { return limit; }
size_t budget_used(void) { return used; }
size_t budget_peak(void) { return peak; }
int budget_spent(void) { return limit && used >= limit; }
size_t budget_room(void) { return !limit ? SIZE_MAX : used < limit ? limit - used : 0; }

void budget_force(size_t n)
{
    used += n;
    if (used > peak) peak = used;
}

int budget_take(size_t n)
{
    if (limit && (n > limit || used > limit - n)) return -1;
    budget_force(n);
    return 0;
}

void budget_give(size_t n)
{
    /* More given back than drawn is a caller's bug: the sanitizer build
     * (the tests') stops on it; the shipped one never wraps around. */
#ifdef __SANITIZE_ADDRESS__
    assert(n <= used);
#endif
    used = n > used ? 0 : used - n;
}

size_t budget_default_for(uint64_t total)
{
    if (total == 0) return (size_t)BUDGET_UNKNOWN_DEFAULT;
    uint64_t q = total / 4;
    if (q < BUDGET_MIN) q = BUDGET_MIN;
    if (q > BUDGET_MAX_DEFAULT) q = BUDGET_MAX_DEFAULT;
    return (size_t)q;
}
