/* src/exec/plan_cache.h: a small per-surface cache of plans (einsum paths, GEMM
 * layouts) keyed on bytes the route builds (spec, shapes, strides, dtype). Each surface
 * has its own, so lanes never share or lock one. Bounded: when all slots are taken the cache is
 * emptied and refilled. */
#ifndef TL_EXEC_PLAN_CACHE_H
#define TL_EXEC_PLAN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/status.h"

#define TL__PLAN_CACHE_SLOTS 64

typedef struct tl__plan_entry {
  uint64_t hash;
  void *key; /* owned copy of the key bytes */
  size_t key_len;
  void *value; /* owned by the cache; freed with destroy */
  void (*destroy)(void *value);
  uint64_t stamp; /* insertion order, for eviction */
} tl__plan_entry;

typedef struct tl__plan_cache {
  tl__plan_entry slots[TL__PLAN_CACHE_SLOTS];
  uint64_t next_stamp;
  uint64_t hits, misses;
} tl__plan_cache;

void tl__plan_cache_init(tl__plan_cache *cache);
/* Free every entry (calls each destroy). */
void tl__plan_cache_clear(tl__plan_cache *cache);
/* The value stored under key, or NULL. */
void *tl__plan_cache_find(tl__plan_cache *cache, const void *key, size_t key_len);
/* Store value under key (the cache takes ownership of value and copies key). On
 * TL_E_NOMEM the value is destroyed and nothing is stored. */
tl_status tl__plan_cache_insert(tl__plan_cache *cache, const void *key, size_t key_len, void *value,
                                void (*destroy)(void *value));

#endif
