/* examples/tci/evaluate.c: function values for a patch, in batches of TCI_BATCH points.
 * Every value is checked: NaN or infinity is an error naming the point (grid indices and
 * coordinates), and |f| feeds the patch's scale. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tci_internal.h"

/* Evaluate the `count` full site vectors in ws->full (count <= TCI_BATCH) into out. */
static int eval_batch(tci_workspace *ws, const tci_problem *problem, int count, double *out,
                      char *why) {
  const tci_grid *grid = problem->grid;
  const tci_function *f = problem->function;
  int d = grid->dims;
  uint64_t index[TCI_MAX_DIMS];
  for (int e = 0; e < count; e++)
    tci_grid_point(grid, ws->full + (size_t)e * (size_t)ws->sites, index, ws->x + e * d);
  int rc = f->fn(ws->x, (size_t)count, d, out, f->arg);
  ws->evaluations += (uint64_t)count;
  if (rc) {
    snprintf(why, TCI_WHY, "function '%s' returned %d on a batch of %d points", f->name, rc, count);
    return TCI_E_FUNCTION;
  }
  for (int e = 0; e < count; e++) {
    double v = out[e];
    if (!isfinite(v)) {
      tci_grid_point(grid, ws->full + (size_t)e * (size_t)ws->sites, index, NULL);
      const double *x = ws->x + e * d;
      char at[200];
      int len = 0;
      for (int k = 0; k < d; k++)
        len += snprintf(at + len, sizeof at - (size_t)len, "%s%.17g", k ? ", " : "", x[k]);
      char idx[200];
      len = 0;
      for (int k = 0; k < d; k++)
        len += snprintf(idx + len, sizeof idx - (size_t)len, "%s%" PRIu64, k ? ", " : "", index[k]);
      snprintf(why, TCI_WHY, "function '%s' returned %g at x = (%s) (grid index (%s))", f->name, v,
               at, idx);
      return TCI_E_NONFINITE;
    }
    if (fabs(v) > ws->max_abs) ws->max_abs = fabs(v);
  }
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
