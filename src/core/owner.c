/* src/core/owner.c: fresh admission identities, process-wide. */
#include <stdatomic.h>

#include "tenlane/context.h"

static atomic_uint_fast64_t last_owner;

tl_owner tl_owner_new(void) { return (tl_owner)atomic_fetch_add(&last_owner, 1) + 1; }
