/* tests/reliability/rel_alloc.h: the counting, failing allocator the reliability tests
 * install through tl_allocator_set. It keeps a live count (allocations not yet freed), so a
 * test can check in any build, not only under LeakSanitizer, that a failed call gave back
 * everything it took; and it can fail the N-th allocation from the moment it is armed, which
 * is how out-of-memory stepping walks every failure point of a call. */
#ifndef REL_ALLOC_H
#define REL_ALLOC_H

#include <stdint.h>

/* Install the hooks (idempotent). Call before any tenlane object exists. */
void rel_alloc_install(void);

/* From now on, fail the n-th allocation (n >= 1), once; n = 0 disarms. Resets the counts
 * rel_alloc_fired and rel_alloc_attempts report. */
void rel_alloc_fail_nth(long n);

/* Disarm; returns 1 when the armed failure fired since rel_alloc_fail_nth. */
int rel_alloc_disarm(void);

/* Allocations attempted since the last rel_alloc_fail_nth. */
long rel_alloc_attempts(void);

/* Allocations made through the hooks and not yet freed. */
long rel_alloc_live(void);

/* Allocations failed on purpose since the process started. */
long rel_alloc_failed_total(void);

#endif
