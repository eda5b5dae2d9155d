/* examples/tci/workspace.c: one patch's working memory, sized for the grid and options and
 * laid out in caller memory (a lane's scratch, or a task's own buffer). */
#include <string.h>

#include "tci_internal.h"

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Walk the layout: with base NULL it only sums the sizes. */
static size_t layout(tci_workspace *ws, unsigned char *base, int sites, int chi, int dim,
                     size_t cache_slots) {
  size_t at = up64(sizeof(tci_workspace));
  size_t piv = (size_t)(sites + 1) * (size_t)chi * (size_t)sites;
  size_t wide = (size_t)chi * (size_t)dim;
#define TAKE(field, type, count)                       \
  do {                                                 \
    if (base) ws->field = (type *)(void *)(base + at); \
    at += up64(sizeof(type) * (size_t)(count));        \
  } while (0)
  TAKE(left, uint8_t, piv);
  TAKE(right, uint8_t, piv);
  TAKE(rank, int, sites + 1);
  TAKE(new_left, uint8_t, (size_t)chi * (size_t)sites);
  TAKE(new_right, uint8_t, (size_t)chi * (size_t)sites);
  TAKE(pi, double, wide *wide);
  TAKE(t, double, wide *(size_t)chi);
  TAKE(p, double, (size_t)chi *(size_t)chi);
  TAKE(rows, int, wide);
  TAKE(cols, int, wide);
  TAKE(x, double, TCI_BATCH *TCI_MAX_DIMS);
  TAKE(xi, uint64_t, TCI_BATCH * TCI_MAX_DIMS);
  TAKE(y, double, TCI_BATCH);
  TAKE(keys, tci_key, TCI_BATCH);
  TAKE(home, size_t, TCI_BATCH);
  TAKE(part, tci_key, 2 * (size_t)chi + (size_t)dim * (size_t)dim);
  TAKE(probe, uint8_t, (size_t)TCI_PROBES * (size_t)sites);
  TAKE(probe_y, double, TCI_PROBES);
  TAKE(miss_y, double, TCI_BATCH);
  TAKE(miss_at, int, TCI_BATCH);
  TAKE(miss_slot, tci_cache_slot *, TCI_BATCH);
  TAKE(dup_at, int, TCI_BATCH);
  TAKE(dup_of, int, TCI_BATCH);
  TAKE(cache, tci_cache_slot, cache_slots);
#undef TAKE
  return at;
}

size_t tci_workspace_bytes(const tci_grid *grid, const tci_options *options) {
  return layout(NULL, NULL, grid->sites, options->max_bond, grid->local_dim,
                tci_cache_slots(grid, options));
}

tci_workspace *tci_workspace_place(void *memory, const tci_grid *grid, const tci_options *options) {
  tci_workspace *ws = memory;
  memset(ws, 0, sizeof *ws);
  size_t slots = tci_cache_slots(grid, options);
  layout(ws, memory, grid->sites, options->max_bond, grid->local_dim, slots);
  ws->cache_slots = slots;
  if (slots) memset(ws->cache, 0, slots * sizeof *ws->cache);
  ws->sites = grid->sites;
  ws->chi = options->max_bond;
  ws->dim = grid->local_dim;
  return ws;
}
