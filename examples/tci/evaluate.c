/* examples/tci/evaluate.c: function values for a patch, in batches of TCI_BATCH points.
 * Every value f returns is checked: NaN or infinity is an error naming the point (grid
 * indices and coordinates); every value looked up, computed or cached, feeds the patch's
 * scale. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tci_internal.h"

/* The error for a non-finite value at batch entry e. */
static int nonfinite(tci_workspace *ws, const tci_problem *problem, int e, double v, char *why) {
  const tci_grid *grid = problem->grid;
  int d = grid->dims;
  uint64_t index[TCI_MAX_DIMS];
  double x[TCI_MAX_DIMS];
  tci_grid_point(grid, ws->full + (size_t)e * (size_t)ws->sites, index, x);
  char at[200];
  int len = 0;
  for (int k = 0; k < d; k++)
    len += snprintf(at + len, sizeof at - (size_t)len, "%s%.17g", k ? ", " : "", x[k]);
  char idx[200];
  len = 0;
  for (int k = 0; k < d; k++)
    len += snprintf(idx + len, sizeof idx - (size_t)len, "%s%" PRIu64, k ? ", " : "", index[k]);
  snprintf(why, TCI_WHY, "function '%s' returned %g at x = (%s) (grid index (%s))",
           problem->function->name, v, at, idx);
  return TCI_E_NONFINITE;
}

/* Evaluate the `count` full site vectors in ws->full (count <= TCI_BATCH) into out: values
 * the patch already computed come from the cache, f is called once on each other point (their
 * coordinates packed at the front of ws->x, in batch order). */
static int eval_batch(tci_workspace *ws, const tci_problem *problem, int count, double *out,
                      char *why) {
  const tci_grid *grid = problem->grid;
  const tci_function *f = problem->function;
  int d = grid->dims, misses = 0, dups = 0;
  uint64_t keys[TCI_BATCH][TCI_MAX_DIMS];
  size_t home[TCI_BATCH];
  for (int e = 0; e < count; e++) {
    memset(keys[e], 0, sizeof keys[e]);
    tci_grid_point(grid, ws->full + (size_t)e * (size_t)ws->sites, keys[e], NULL);
    home[e] = tci_cache_home(ws, keys[e]);
    tci_cache_prefetch(ws, home[e]);
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
      tci_grid_coords(grid, keys[e], ws->x + misses * d);
      ws->miss_slot[misses] = slot;
      ws->miss_at[misses++] = e;
    }
  }
  ws->lookups += (uint64_t)count;
  ws->evaluations += (uint64_t)misses;
  if (misses) {
    int rc = f->fn(ws->x, (size_t)misses, d, ws->miss_y, f->arg);
    if (rc) {
      snprintf(why, TCI_WHY, "function '%s' returned %d on a batch of %d points", f->name, rc,
               misses);
      return TCI_E_FUNCTION;
    }
  }
  for (int m = 0; m < misses; m++) {
    double v = ws->miss_y[m];
    if (!isfinite(v)) return nonfinite(ws, problem, ws->miss_at[m], v, why);
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

int tci_eval_cross(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch,
                   const uint8_t *left, int nl, int llen, int nmid, const uint8_t *right, int nr,
                   int rlen, double *out, char *why) {
  int dim = ws->dim, mids = nmid == 0 ? 1 : nmid == 1 ? dim : dim * dim;
  size_t total = (size_t)nl * (size_t)mids * (size_t)nr;
  int p = patch->prefix_len, stride = ws->sites;
  size_t done = 0;
  while (done < total) {
    int count = total - done < TCI_BATCH ? (int)(total - done) : TCI_BATCH;
    for (int e = 0; e < count; e++) {
      size_t entry = done + (size_t)e;
      int b = (int)(entry % (size_t)nr);
      size_t rest = entry / (size_t)nr;
      int mid = (int)(rest % (size_t)mids);
      int a = (int)(rest / (size_t)mids);
      uint8_t *full = ws->full + (size_t)e * (size_t)stride;
      memcpy(full, patch->prefix, (size_t)p);
      memcpy(full + p, left + (size_t)a * (size_t)stride, (size_t)llen);
      if (nmid == 1) full[p + llen] = (uint8_t)mid;
      if (nmid == 2) {
        full[p + llen] = (uint8_t)(mid / dim);
        full[p + llen + 1] = (uint8_t)(mid % dim);
      }
      memcpy(full + p + llen + nmid, right + (size_t)b * (size_t)stride, (size_t)rlen);
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
  for (int done = 0; done < count;) {
    int batch = count - done < TCI_BATCH ? count - done : TCI_BATCH;
    for (int e = 0; e < batch; e++) {
      uint8_t *full = ws->full + (size_t)e * (size_t)stride;
      memcpy(full, patch->prefix, (size_t)p);
      memcpy(full + p, local + (size_t)(done + e) * (size_t)stride, (size_t)n);
    }
    int rc = eval_batch(ws, problem, batch, out + done, why);
    if (rc) return rc;
    done += batch;
  }
  return TCI_OK;
}
