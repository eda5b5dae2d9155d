/* examples/tci/evaluate.c: function values for a patch, in batches of TCI_BATCH points.
 * Every value f returns is checked: NaN or infinity is an error naming the point (grid
 * indices and coordinates); every value looked up, computed or cached, feeds the patch's
 * scale. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tci_internal.h"

/* The error for a non-finite value at grid indices `key`. */
static int nonfinite(const tci_problem *problem, const uint64_t *key, double v, char *why) {
  const tci_grid *grid = problem->grid;
  int d = grid->dims;
  double x[TCI_MAX_DIMS];
  tci_grid_coords(grid, key, x);
  char at[200];
  int len = 0;
  for (int k = 0; k < d; k++)
    len += snprintf(at + len, sizeof at - (size_t)len, "%s%.17g", k ? ", " : "", x[k]);
  char idx[200];
  len = 0;
  for (int k = 0; k < d; k++)
    len += snprintf(idx + len, sizeof idx - (size_t)len, "%s%" PRIu64, k ? ", " : "", key[k]);
  snprintf(why, TCI_WHY, "function '%s' returned %g at x = (%s) (grid index (%s))",
           problem->function->name, v, at, idx);
  return TCI_E_NONFINITE;
}

/* Evaluate the `count` points whose grid indices are in ws->keys (count <= TCI_BATCH) into
 * out: values the patch already computed come from the cache, f is called once on each other
 * point (their coordinates packed at the front of ws->x, or for an index function their
 * grid indices at the front of ws->xi, in batch order). */
static int eval_batch(tci_workspace *ws, const tci_problem *problem, int count, double *out,
                      char *why) {
  const tci_grid *grid = problem->grid;
  const tci_function *f = problem->function;
  int d = grid->dims, misses = 0, dups = 0;
  tci_key *keys = ws->keys;
  size_t *home = ws->home;
  if (ws->cache_slots) { /* without a table every point is a miss: nothing to hash */
    for (int e = 0; e < count; e++) {
      home[e] = tci_cache_home(ws, keys[e]);
      tci_cache_prefetch(ws, home[e]);
    }
  }
  for (int e = 0; e < count; e++) {
    int found;
    tci_cache_slot *slot = tci_cache_claim(ws, keys[e], home[e], &found);
    if (found && slot->pending < 0) {
      out[e] = slot->value;
    } else if (found) {
      ws->dup_at[dups] = e;
      ws->dup_of[dups++] = slot->pending;
    } else {
      if (slot) slot->pending = misses;
      if (f->index_fn)
        memcpy(ws->xi + misses * d, keys[e], sizeof(uint64_t) * (size_t)d);
      else
        tci_grid_coords(grid, keys[e], ws->x + misses * d);
      ws->miss_slot[misses] = slot;
      ws->miss_at[misses++] = e;
    }
  }
  ws->lookups += (uint64_t)count;
  ws->evaluations += (uint64_t)misses;
  if (misses) {
    int rc = tci_function_call(f, ws->xi, ws->x, (size_t)misses, ws->miss_y);
    if (rc) {
      snprintf(why, TCI_WHY, "function '%s' returned %d on a batch of %d points", f->name, rc,
               misses);
      return TCI_E_FUNCTION;
    }
  }
  for (int m = 0; m < misses; m++) {
    double v = ws->miss_y[m];
    if (!isfinite(v)) return nonfinite(problem, keys[ws->miss_at[m]], v, why);
    out[ws->miss_at[m]] = v;
    /* The slot is still this miss's unless the table was emptied after it was claimed. */
    tci_cache_slot *slot = ws->miss_slot[m];
    if (slot && slot->generation == ws->cache_generation && slot->pending == m) {
      slot->value = v;
      slot->pending = -1;
    }
  }
  for (int k = 0; k < dups; k++) out[ws->dup_at[k]] = ws->miss_y[ws->dup_of[k]];
  for (int e = 0; e < count; e++)
    if (fabs(out[e]) > ws->max_abs) ws->max_abs = fabs(out[e]);
  return TCI_OK;
}

/* The grid indices' bits that `count` site values starting at site `first` carry (the other
 * bits 0): the indices of a point are the OR of those of disjoint runs of its sites. */
static void partial_index(const tci_grid *grid, const uint8_t *values, int first, int count,
                          uint64_t *index) {
  int d = grid->dims, r = grid->bits;
  for (int v = 0; v < TCI_MAX_DIMS; v++) index[v] = 0;
  for (int k = 0; k < count; k++) {
    int site = first + k;
    unsigned value = values[k];
    if (grid->layout == TCI_FUSED) {
      for (int v = 0; v < d; v++) index[v] |= (uint64_t)((value >> v) & 1u) << (r - 1 - site);
    } else {
      index[site % d] |= (uint64_t)(value & 1u) << (r - 1 - site / d);
    }
  }
}

int tci_eval_cross(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch,
                   const uint8_t *left, int nl, int llen, int nmid, const uint8_t *right, int nr,
                   int rlen, double *out, char *why) {
  const tci_grid *grid = problem->grid;
  int dim = ws->dim, mids = nmid == 0 ? 1 : nmid == 1 ? dim : dim * dim;
  int p = patch->prefix_len, stride = ws->sites;
  /* The indices of each left pivot with the prefix, of each mid value, of each right pivot. */
  tci_key *lpart = ws->part, *mpart = lpart + nl, *rpart = mpart + mids;
  uint64_t prefix[TCI_MAX_DIMS], piece[TCI_MAX_DIMS];
  partial_index(grid, patch->prefix, 0, p, prefix);
  for (int a = 0; a < nl; a++) {
    partial_index(grid, left + (size_t)a * (size_t)stride, p, llen, piece);
    for (int v = 0; v < TCI_MAX_DIMS; v++) lpart[a][v] = prefix[v] | piece[v];
  }
  for (int mid = 0; mid < mids; mid++) {
    uint8_t values[2] = {(uint8_t)(nmid == 2 ? mid / dim : mid), (uint8_t)(mid % dim)};
    partial_index(grid, values, p + llen, nmid, mpart[mid]);
  }
  for (int b = 0; b < nr; b++)
    partial_index(grid, right + (size_t)b * (size_t)stride, p + llen + nmid, rlen, rpart[b]);
  size_t total = (size_t)nl * (size_t)mids * (size_t)nr;
  size_t done = 0;
  int a = 0, mid = 0, b = 0;
  while (done < total) {
    int count = total - done < TCI_BATCH ? (int)(total - done) : TCI_BATCH;
    for (int e = 0; e < count; e++) {
      for (int v = 0; v < TCI_MAX_DIMS; v++)
        ws->keys[e][v] = lpart[a][v] | mpart[mid][v] | rpart[b][v];
      if (++b == nr) {
        b = 0;
        if (++mid == mids) {
          mid = 0;
          a++;
        }
      }
    }
    int rc = eval_batch(ws, problem, count, out + done, why);
    if (rc) return rc;
    done += (size_t)count;
  }
  return TCI_OK;
}

int tci_eval_points(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch,
                    const uint8_t *local, int count, double *out, char *why) {
  int p = patch->prefix_len, stride = ws->sites, n = ws->sites - p;
  uint8_t full[TCI_MAX_SITES];
  memcpy(full, patch->prefix, (size_t)p);
  for (int done = 0; done < count;) {
    int batch = count - done < TCI_BATCH ? count - done : TCI_BATCH;
    for (int e = 0; e < batch; e++) {
      memcpy(full + p, local + (size_t)(done + e) * (size_t)stride, (size_t)n);
      tci_grid_point(problem->grid, full, ws->keys[e], NULL);
      for (int v = problem->grid->dims; v < TCI_MAX_DIMS; v++) ws->keys[e][v] = 0;
    }
    int rc = eval_batch(ws, problem, batch, out + done, why);
    if (rc) return rc;
    done += batch;
  }
  return TCI_OK;
}
