/* src/exec/plan_cache.c: a fixed-size, per-surface plan cache (see plan_cache.h).
 * Linear probing over 64 slots is enough: a surface sees a handful of distinct shapes in
 * steady state, and a miss only costs re-planning. */
#include "plan_cache.h"

#include <string.h>

#include "base/base.h"

static uint64_t hash_bytes(const void *key, size_t len) {
  const unsigned char *bytes = key;
  uint64_t hash = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

void tl__plan_cache_init(tl__plan_cache *cache) { memset(cache, 0, sizeof *cache); }

static void entry_clear(tl__plan_entry *entry) {
  if (entry->key == NULL) return;
  if (entry->destroy != NULL) entry->destroy(entry->value);
  tl__free(entry->key);
  memset(entry, 0, sizeof *entry);
}

void tl__plan_cache_clear(tl__plan_cache *cache) {
  for (int i = 0; i < TL__PLAN_CACHE_SLOTS; i++) entry_clear(&cache->slots[i]);
}

void *tl__plan_cache_find(tl__plan_cache *cache, const void *key, size_t key_len) {
  uint64_t hash = hash_bytes(key, key_len);
  for (int i = 0; i < TL__PLAN_CACHE_SLOTS; i++) {
    tl__plan_entry *entry = &cache->slots[(hash + (uint64_t)i) % TL__PLAN_CACHE_SLOTS];
    if (entry->key == NULL) break;
    if (entry->hash == hash && entry->key_len == key_len && memcmp(entry->key, key, key_len) == 0) {
      cache->hits++;
      return entry->value;
    }
  }
  cache->misses++;
  return NULL;
}

tl_status tl__plan_cache_insert(tl__plan_cache *cache, const void *key, size_t key_len, void *value,
                                void (*destroy)(void *value)) {
  void *key_copy = tl__alloc(key_len, 16);
  if (key_copy == NULL) {
    if (destroy != NULL) destroy(value);
    return tl__fail(TL_E_NOMEM, "plan cache key of %zu bytes could not be allocated", key_len);
  }
  memcpy(key_copy, key, key_len);
  uint64_t hash = hash_bytes(key, key_len);
  tl__plan_entry *target = NULL;
  for (int i = 0; i < TL__PLAN_CACHE_SLOTS; i++) {
    tl__plan_entry *entry = &cache->slots[(hash + (uint64_t)i) % TL__PLAN_CACHE_SLOTS];
    if (entry->key == NULL) {
      target = entry;
      break;
    }
  }
  if (target == NULL) {
    /* Full: drop everything. Probing chains make single-slot eviction unsafe, and a full
     * cache means the surface sees more shapes than caching can help with. */
    tl__plan_cache_clear(cache);
    target = &cache->slots[hash % TL__PLAN_CACHE_SLOTS];
  }
  target->hash = hash;
  target->key = key_copy;
  target->key_len = key_len;
  target->value = value;
  target->destroy = destroy;
  target->stamp = cache->next_stamp++;
  return TL_OK;
}
