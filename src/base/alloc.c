/* src/base/alloc.c: the allocator hooks. Every heap allocation tenlane makes goes through
 * tl__alloc, so a test can count or fail them (out-of-memory stepping) and a program can
 * route them to its own allocator. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static void *default_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (align < sizeof(void *)) align = sizeof(void *);
  size_t rounded;
  if (!tl__size_align_up(size, align, &rounded)) return NULL;
  return aligned_alloc(align, rounded);
}

static void default_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

static tl_allocator current = {default_alloc, default_free, NULL};
static atomic_uint_fast64_t allocation_count;

void tl_allocator_set(const tl_allocator *allocator) {
  if (allocator == NULL || allocator->alloc == NULL || allocator->free == NULL) {
    current.alloc = default_alloc;
    current.free = default_free;
    current.user = NULL;
  } else {
    current = *allocator;
  }
}

uint64_t tl_allocation_count(void) {
  return atomic_load_explicit(&allocation_count, memory_order_relaxed);
}

void *tl__alloc(size_t size, size_t align) {
  if (size == 0) size = 1;
  if (align == 0) align = sizeof(void *);
  if (size > SIZE_MAX - 4096) return NULL;
  void *ptr = current.alloc(size, align, current.user);
  if (ptr != NULL) atomic_fetch_add_explicit(&allocation_count, 1, memory_order_relaxed);
  return ptr;
}

void *tl__calloc(size_t count, size_t size, size_t align) {
  size_t bytes;
  if (!tl__size_mul(count, size, &bytes)) return NULL;
  void *ptr = tl__alloc(bytes, align);
  if (ptr != NULL) memset(ptr, 0, bytes == 0 ? 1 : bytes);
  return ptr;
}

void tl__free(void *ptr) {
  if (ptr != NULL) current.free(ptr, current.user);
}
