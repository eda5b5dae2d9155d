/* tests/reliability/rel_alloc.c: see rel_alloc.h. Thread-safe: lanes and pool workers
 * allocate concurrently, so every counter is atomic and the N-th attempt is decided by one
 * atomic increment. */
#include "rel_alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "tenlane/alloc.h"

static atomic_long live;
static atomic_long attempts;
static atomic_long fail_at;
static atomic_int fired;
static atomic_long failed_total;

static void *rel_alloc(size_t size, size_t align, void *user) {
  (void)user;
  long nth = atomic_fetch_add(&attempts, 1) + 1;
  long target = atomic_load(&fail_at);
  if (target > 0 && nth == target) {
    atomic_store(&fired, 1);
    atomic_fetch_add(&failed_total, 1);
    return NULL;
  }
  if (align < sizeof(void *)) align = sizeof(void *);
  size_t rounded = (size + align - 1) & ~(align - 1);
  void *ptr = aligned_alloc(align, rounded);
  if (ptr != NULL) atomic_fetch_add(&live, 1);
  return ptr;
}

static void rel_free(void *ptr, void *user) {
  (void)user;
  atomic_fetch_sub(&live, 1);
  free(ptr);
}

void rel_alloc_install(void) {
  static int installed;
  if (installed) return;
  installed = 1;
  tl_allocator hooks = {rel_alloc, rel_free, NULL};
  tl_allocator_set(&hooks);
}

void rel_alloc_fail_nth(long n) {
  atomic_store(&fail_at, 0);
  atomic_store(&fired, 0);
  atomic_store(&attempts, 0);
  atomic_store(&fail_at, n < 0 ? 0 : n);
}

int rel_alloc_disarm(void) {
  atomic_store(&fail_at, 0);
  return atomic_load(&fired);
}

long rel_alloc_attempts(void) { return atomic_load(&attempts); }

long rel_alloc_live(void) { return atomic_load(&live); }

long rel_alloc_failed_total(void) { return atomic_load(&failed_total); }
