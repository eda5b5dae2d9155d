/* examples/tci/cache.c: the per-patch table of function values already computed.
 *
 * A sweep evaluates the same crosses again whenever a bond's pivots did not change, and the
 * global search re-reads points the sweeps saw: the table answers those without calling f.
 * It is keyed on the grid indices of a point, open-addressed with linear probing, and lives
 * in the workspace (laid out once per lane or task: nothing is allocated). A point missing
 * from the table is claimed when it is first asked for, so that a batch asking for it twice
 * calls f once. Entries carry the
 * generation of the patch that wrote them, so emptying the table at the start of a patch, or
 * when it is half full, costs one increment. Because f is a function of the point, a value
 * from the table is the value f would return: the train does not depend on the table, only
 * the count of calls does; and since the table starts empty for every patch, that count
 * depends on the patch alone, not on which lane ran it before. */
#include <string.h>

#include "tci_internal.h"

size_t tci_cache_slots(const tci_grid *grid, const tci_options *options) {
  if (options->value_cache != TCI_CACHE_ON) return 0; /* resolved by the run */
  size_t wide = (size_t)options->max_bond * (size_t)grid->local_dim;
  size_t want = 32 * (wide * wide > TCI_PROBES ? wide * wide : TCI_PROBES);
  size_t slots = (size_t)1 << 12;
  while (slots < want && slots < ((size_t)1 << 18)) slots <<= 1;
  return slots;
}

void tci_cache_clear(tci_workspace *ws) {
  if (!ws->cache_slots) return;
  ws->cache_used = 0;
  if (++ws->cache_generation == 0) { /* wrapped: old stamps could match again */
    memset(ws->cache, 0, ws->cache_slots * sizeof *ws->cache);
    ws->cache_generation = 1;
  }
}

size_t tci_cache_home(const tci_workspace *ws, const uint64_t *key) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < TCI_MAX_DIMS; k++) {
    h ^= key[k] + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  return ws->cache_slots ? (size_t)h & (ws->cache_slots - 1) : 0;
}

void tci_cache_prefetch(const tci_workspace *ws, size_t home) {
  if (ws->cache_slots) __builtin_prefetch(&ws->cache[home]);
}

tci_cache_slot *tci_cache_claim(tci_workspace *ws, const uint64_t *key, size_t home, int *found) {
  *found = 0;
  if (!ws->cache_slots) return NULL;
  if (2 * (ws->cache_used + 1) > ws->cache_slots) tci_cache_clear(ws); /* keep probes short */
  for (size_t s = home;; s = (s + 1) & (ws->cache_slots - 1)) {
    tci_cache_slot *slot = &ws->cache[s];
    if (slot->generation != ws->cache_generation) {
      memcpy(slot->key, key, sizeof slot->key);
      slot->value = 0.0;
      slot->pending = 0; /* the caller sets its miss number */
      slot->generation = ws->cache_generation;
      ws->cache_used++;
      return slot;
    }
    if (memcmp(slot->key, key, sizeof slot->key) == 0) {
      *found = 1;
      return slot;
    }
  }
}
