/* examples/tci/sweep.c: the TCI2 sweeps of one patch. The pivots of bond b (between free
 * sites b-1 and b) are a set of left multi-indices (prefixes of b sites) and right ones
 * (suffixes from site b). An update at bond b evaluates the two-site matrix
 * f(left[b-1] x site b-1, site b x right[b+1]) and takes its partial rank-revealing LU: the
 * chosen rows and columns become left[b] and right[b]. Full sweeps (forward, then backward)
 * run until the largest pivot error of a sweep is within the tolerance and no rank changed,
 * or the ranks saturate max_bond (the patch then asks to be split), or max_sweeps. */
#include <math.h>
#include <string.h>

#include "tci_internal.h"

#define CANDIDATES 16

static uint8_t *left_at(tci_workspace *ws, int b, int k) {
  return ws->left + ((size_t)b * (size_t)ws->chi + (size_t)k) * (size_t)ws->sites;
}
static uint8_t *right_at(tci_workspace *ws, int b, int k) {
  return ws->right + ((size_t)b * (size_t)ws->chi + (size_t)k) * (size_t)ws->sites;
}

/* The first pivot: the largest |f| among the all-zero index and a few pseudo-random ones,
 * drawn from the seed and the patch's prefix (so independent of the lane). */
static int first_pivot(tci_workspace *ws, const tci_problem *pb, const tci_patch *patch, int n,
                       char *why) {
  int count = CANDIDATES < ws->sites + 1 ? CANDIDATES : ws->sites + 1;
  uint64_t state = pb->options->seed ^ 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < patch->prefix_len; i++) state = state * 31u + patch->prefix[i] + 1u;
  state ^= (uint64_t)patch->prefix_len << 56;
  uint8_t *cand = ws->left; /* candidates at stride sites; the pivots are set after */
  for (int c = 0; c < count; c++)
    for (int s = 0; s < n; s++)
      cand[(size_t)c * (size_t)ws->sites + (size_t)s] =
          c == 0 ? 0 : (uint8_t)(tci_rng_next(&state) % (uint64_t)ws->dim);
  int rc = tci_eval_points(ws, pb, patch, cand, count, ws->y, why);
  if (rc) return rc;
  int best = 0;
  for (int c = 1; c < count; c++)
    if (fabs(ws->y[c]) > fabs(ws->y[best])) best = c;
  uint8_t pivot[TCI_MAX_SITES];
  memcpy(pivot, cand + (size_t)best * (size_t)ws->sites, (size_t)n);
  for (int b = 0; b <= n; b++) {
    memcpy(left_at(ws, b, 0), pivot, (size_t)b);
    memcpy(right_at(ws, b, 0), pivot + b, (size_t)(n - b));
    ws->rank[b] = 1;
  }
  return TCI_OK;
}

/* One pivot update at bond b; *error gets its pivot error. */
static int update(tci_workspace *ws, const tci_problem *pb, const tci_patch *patch, int n, int b,
                  double tol_abs, double *error, char *why) {
  int nl = ws->rank[b - 1], nr = ws->rank[b + 1], dim = ws->dim;
  int rlen = n - b - 1;
  int rc = tci_eval_cross(ws, pb, patch, left_at(ws, b - 1, 0), nl, b - 1, 2,
                          right_at(ws, b + 1, 0), nr, rlen, ws->pi, why);
  if (rc) return rc;
  int m = nl * dim, cols = dim * nr;
  /* ws->pi is row-major m x cols: as a column-major matrix it is the transpose, so the
   * factorization's rows are the two-site matrix's columns and the other way round. */
  int rank = tci_prrlu(ws->pi, cols, m, ws->chi, tol_abs, ws->cols, ws->rows, error);
  for (int k = 0; k < rank; k++) {
    int row = ws->rows[k], col = ws->cols[k];
    uint8_t *nl_k = ws->new_left + (size_t)k * (size_t)ws->sites;
    memcpy(nl_k, left_at(ws, b - 1, row / dim), (size_t)(b - 1));
    nl_k[b - 1] = (uint8_t)(row % dim);
    uint8_t *nr_k = ws->new_right + (size_t)k * (size_t)ws->sites;
    nr_k[0] = (uint8_t)(col / nr);
    memcpy(nr_k + 1, right_at(ws, b + 1, col % nr), (size_t)rlen);
  }
  memcpy(left_at(ws, b, 0), ws->new_left, (size_t)rank * (size_t)ws->sites);
  memcpy(right_at(ws, b, 0), ws->new_right, (size_t)rank * (size_t)ws->sites);
  ws->rank[b] = rank;
  return TCI_OK;
}

void tci_add_global_pivot(tci_workspace *ws, int n, const uint8_t *point) {
  for (int b = 1; b < n; b++) {
    int k = ws->rank[b];
    if (k >= ws->chi) continue;
    memcpy(left_at(ws, b, k), point, (size_t)b);
    memcpy(right_at(ws, b, k), point + b, (size_t)(n - b));
    ws->rank[b] = k + 1;
  }
}

double tci_tolerance(const tci_workspace *ws, const tci_problem *pb) {
  double scale = pb->scale > ws->max_abs ? pb->scale : ws->max_abs;
  return pb->options->tol * scale;
}

int tci_sweeps(tci_workspace *ws, const tci_problem *pb, const tci_patch *patch, int fresh,
               int (*stop)(void *), void *stop_arg, tci_sweep_result *out, char *why) {
  const tci_options *o = pb->options;
  int n = ws->sites - patch->prefix_len;
  memset(out, 0, sizeof *out);
  int rc = fresh ? first_pivot(ws, pb, patch, n, why) : TCI_OK;
  if (rc) return rc;
  int saturated_sweeps = 0;
  double previous = INFINITY;
  for (int sweep = 1; n > 1 && sweep <= o->max_sweeps; sweep++) {
    int before[TCI_MAX_SITES + 1];
    memcpy(before, ws->rank, sizeof(int) * (size_t)(n + 1));
    double error = 0.0;
    for (int half = 0; half < 2; half++) {
      for (int step = 1; step < n; step++) {
        int b = half == 0 ? step : n - step;
        if (stop && stop(stop_arg)) return TCI_E_CANCELLED;
        double e;
        rc = update(ws, pb, patch, n, b, tci_tolerance(ws, pb), &e, why);
        if (rc) return rc;
        if (half == 1 && e > error) error = e;
      }
    }
    int changed = memcmp(before, ws->rank, sizeof(int) * (size_t)(n + 1)) != 0;
    int top = 0;
    for (int b = 1; b < n; b++)
      if (ws->rank[b] > top) top = ws->rank[b];
    double tol_abs = tci_tolerance(ws, pb);
    out->sweeps = sweep;
    out->error = error;
    out->max_rank = top;
    out->saturated = top >= o->max_bond && error > tol_abs;
    if (error <= tol_abs && !changed) {
      out->converged = 1;
      break;
    }
    saturated_sweeps = out->saturated ? saturated_sweeps + 1 : 0;
    if (o->patching && n > o->min_free_sites && saturated_sweeps >= 2) break;
    if (!changed && error >= previous) break; /* stagnant: more sweeps will not help */
    previous = error;
  }
  if (n <= 1) {
    out->converged = 1;
    out->max_rank = 1;
  }
  return TCI_OK;
}
