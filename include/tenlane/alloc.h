/* tenlane/alloc.h: the allocator every tenlane heap allocation goes through.
 *
 * The hooks let a program count or fail allocations (the test suite fails the N-th
 * allocation to step through out-of-memory paths; the fan-out demo counts heap
 * allocations per item). Scratch memory taken by numerical routes comes from arenas
 * that are themselves allocated here, so a steady-state operation that reuses its
 * arena makes no call to these hooks at all. */
#ifndef TENLANE_ALLOC_H
#define TENLANE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_allocator {
  /* Return at least `size` bytes aligned to `align` (a power of two, at most 4096),
   * or NULL. Called from any thread, concurrently. */
  void *(*alloc)(size_t size, size_t align, void *user);
  /* Free a pointer returned by alloc (never NULL). Called from any thread. */
  void (*free)(void *ptr, void *user);
  void *user;
} tl_allocator;

/* Install `allocator` (copied), or the default (aligned_alloc/free) when NULL.
 * Only call it while no tenlane object exists: memory must be freed by the
 * allocator that made it. Not thread-safe with respect to other tenlane calls. */
TL_API void tl_allocator_set(const tl_allocator *allocator);

/* Number of successful heap allocations made through the hooks since the process
 * started (relaxed counter; exact once the threads that allocate have joined). */
TL_API uint64_t tl_allocation_count(void);

#ifdef __cplusplus
}
#endif
#endif
