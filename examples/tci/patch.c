/* examples/tci/patch.c: one patch's TCI, from the first pivot to the kept piece or the
 * request to split. The options are checked here too, since every run starts with them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tci_internal.h"

void tci_options_init(tci_options *options) {
  memset(options, 0, sizeof *options);
  options->tol = 1e-8;
  options->max_bond = 32;
  options->max_sweeps = 20;
  options->patching = 1;
  options->min_free_sites = 4;
  options->seed = 1;
  options->value_cache = TCI_CACHE_AUTO;
}

/* Greedy local ascent of a probe's error: site by site, the local value at which the piece
 * is furthest from f. Finds the peak of a narrow feature a random probe only grazed. */
static int ascend(tci_workspace *ws, const tci_problem *pb, const tci_patch *patch,
                  const tci_piece *piece, uint8_t *point, double *err, char *why) {
  int n = ws->sites - patch->prefix_len, dim = ws->dim;
  uint8_t *cand = ws->new_left; /* chi * sites bytes, unused between sweeps */
  if (dim > ws->chi) return TCI_OK;
  for (int s = 0; s < n; s++) {
    for (int v = 0; v < dim; v++) {
      memcpy(cand + (size_t)v * (size_t)ws->sites, point, (size_t)n);
      cand[(size_t)v * (size_t)ws->sites + (size_t)s] = (uint8_t)v;
    }
    int rc = tci_eval_points(ws, pb, patch, cand, dim, ws->y, why);
    if (rc) return rc;
    for (int v = 0; v < dim; v++) {
      const uint8_t *c = cand + (size_t)v * (size_t)ws->sites;
      double e = fabs(ws->y[v] - tci_piece_eval(piece, dim, c));
      if (e > *err) {
        *err = e;
        point[s] = (uint8_t)v;
      }
    }
  }
  return TCI_OK;
}

/* The global pivot search: the piece against f on TCI_PROBES random points of the patch
 * (drawn from the seed, the prefix and the round, so independent of the lane). The worst few
 * points climb to a local maximum of the error (ascend); those that end above the tolerance
 * become pivots of every bond that has room. *remaining: the points found above the tolerance;
 * *added: how many were added (0 with remaining > 0 means the bonds are full). */
static int global_search(tci_workspace *ws, const tci_problem *pb, const tci_patch *patch,
                         const tci_piece *piece, int round, int *remaining, int *added,
                         double *largest, char *why) {
  int n = ws->sites - patch->prefix_len;
  uint64_t state = pb->options->seed * 0x2545f4914f6cdd1dull + (uint64_t)round;
  for (int i = 0; i < patch->prefix_len; i++) state = state * 131u + patch->prefix[i] + 7u;
  for (int c = 0; c < TCI_PROBES; c++)
    for (int s = 0; s < n; s++)
      ws->probe[(size_t)c * (size_t)ws->sites + (size_t)s] =
          (uint8_t)(tci_rng_next(&state) % (uint64_t)ws->dim);
  int rc = tci_eval_points(ws, pb, patch, ws->probe, TCI_PROBES, ws->probe_y, why);
  if (rc) return rc;
  double tol_abs = tci_tolerance(ws, pb);
  *remaining = 0;
  *largest = 0.0;
  for (int c = 0; c < TCI_PROBES; c++) { /* the values become the errors */
    ws->probe_y[c] = fabs(
        ws->probe_y[c] - tci_piece_eval(piece, ws->dim, ws->probe + (size_t)c * (size_t)ws->sites));
    if (ws->probe_y[c] > tol_abs) (*remaining)++;
    if (ws->probe_y[c] > *largest) *largest = ws->probe_y[c];
  }
  *added = 0;
  uint8_t chosen[TCI_GLOBAL_PIVOTS][TCI_MAX_SITES];
  /* The worst probes climb even from below the tolerance: a feature in a corner of the patch
   * that no probe hit still shows as a tiny error that grows towards it. */
  for (int k = 0; k < TCI_GLOBAL_PIVOTS; k++) {
    int worst = -1;
    double worst_err = 0.0;
    for (int c = 0; c < TCI_PROBES; c++)
      if (ws->probe_y[c] > worst_err) {
        worst_err = ws->probe_y[c];
        worst = c;
      }
    if (worst < 0) break;
    ws->probe_y[worst] = 0.0;
    int was_above = worst_err > tol_abs;
    uint8_t *point = ws->probe + (size_t)worst * (size_t)ws->sites;
    rc = ascend(ws, pb, patch, piece, point, &worst_err, why);
    if (rc) return rc;
    if (worst_err > *largest) *largest = worst_err;
    if (worst_err <= tol_abs) continue;
    if (!was_above) (*remaining)++;
    int seen = 0;
    for (int j = 0; j < *added && !seen; j++) seen = memcmp(chosen[j], point, (size_t)n) == 0;
    if (seen) continue;
    memcpy(chosen[*added], point, (size_t)n);
    tci_add_global_pivot(ws, n, point);
    (*added)++;
  }
  return TCI_OK;
}

int tci_patch_run(tl_exec *exec, tci_workspace *ws, const tci_problem *problem,
                  const tci_patch *patch, int (*stop)(void *), void *stop_arg,
                  tci_patch_outcome *out, char *why) {
  memset(out, 0, sizeof *out);
  ws->evaluations = 0;
  ws->lookups = 0;
  ws->max_abs = 0.0;
  tci_cache_clear(ws);
  int n = ws->sites - patch->prefix_len;
  const tci_options *o = problem->options;
  int can_split = o->patching && n > o->min_free_sites;
  tci_sweep_result sweep;
  tci_piece *piece = NULL;
  int remaining = 0;
  double previous = INFINITY;
  for (int round = 0;; round++) {
    int rc = tci_sweeps(ws, problem, patch, round == 0, stop, stop_arg, &sweep, why);
    out->evaluations = ws->evaluations;
    out->lookups = ws->lookups;
    out->max_rank = sweep.max_rank;
    if (rc) return rc;
    if (!sweep.converged && sweep.saturated && can_split) {
      out->split = 1;
      return TCI_OK;
    }
    rc = tci_build_piece(exec, ws, problem, patch, &piece, why);
    out->evaluations = ws->evaluations;
    out->lookups = ws->lookups;
    if (rc) return rc;
    int added = 0;
    double largest = 0.0;
    remaining = 0;
    if (n > 1)
      rc = global_search(ws, problem, patch, piece, round, &remaining, &added, &largest, why);
    out->evaluations = ws->evaluations;
    out->lookups = ws->lookups;
    if (rc) return rc;
    if (remaining == 0) break;
    /* Points above the tolerance are left. The rounds end when the bonds have no room for
     * them, when a round did not halve the largest error, or after the last round; then
     * the patch splits where it may if there was no room or the error is still
     * TCI_SPLIT_FACTOR times the tolerance, and is kept, marked as not converged, if not. */
    int stalled = round > 0 && largest > 0.5 * previous; /* pivots no longer pay */
    previous = largest;
    int last = added == 0 || stalled || round + 1 >= TCI_GLOBAL_ROUNDS;
    if (last && can_split &&
        (added == 0 || largest > TCI_SPLIT_FACTOR * tci_tolerance(ws, problem))) {
      out->split = 1;
      return TCI_OK;
    }
    if (last) break;
    piece = NULL;
    if (stop && stop(stop_arg)) return TCI_E_CANCELLED;
  }
  if (!piece) return TCI_E_ARG; /* not reached: the loop leaves with a piece or returns */
  piece = tci_piece_keep(piece, ws->dim);
  if (!piece) {
    snprintf(why, TCI_WHY, "no memory to keep a patch's tensor train (%d sites)", n);
    return TCI_E_NOMEM;
  }
  piece->max_rank = sweep.max_rank;
  piece->converged = sweep.converged && remaining == 0;
  piece->sweeps = sweep.sweeps;
  piece->error = sweep.error;
  piece->evaluations = ws->evaluations;
  out->piece = piece;
  return TCI_OK;
}

void tci_options_resolve(tci_options *out, const tci_options *in, const tci_function *f) {
  *out = *in;
  if (out->value_cache == TCI_CACHE_AUTO)
    out->value_cache = f->cheap ? TCI_CACHE_OFF : TCI_CACHE_ON;
}

int tci_check_run(const tci_grid *grid, const tci_function *function, const tci_options *o,
                  char *why) {
  if (!grid || !function || !(function->fn || function->index_fn) || !o) {
    snprintf(why, TCI_WHY, "a run needs a grid, a function and options (one is NULL)");
    return TCI_E_ARG;
  }
  if (function->dims != grid->dims) {
    snprintf(why, TCI_WHY, "function '%s' takes %d variables but the grid has %d",
             function->name ? function->name : "?", function->dims, grid->dims);
    return TCI_E_ARG;
  }
  if (!(o->tol > 0.0) || o->tol >= 1.0) {
    snprintf(why, TCI_WHY, "the tolerance must be in (0, 1), not %g", o->tol);
    return TCI_E_ARG;
  }
  if (o->max_bond < 1 || o->max_bond > 512 || o->max_bond * grid->local_dim > TCI_PRRLU_MAX) {
    snprintf(why, TCI_WHY, "max bond %d is outside 1..%d for local dimension %d", o->max_bond,
             TCI_PRRLU_MAX / grid->local_dim < 512 ? TCI_PRRLU_MAX / grid->local_dim : 512,
             grid->local_dim);
    return TCI_E_ARG;
  }
  if (o->value_cache != TCI_CACHE_OFF && o->value_cache != TCI_CACHE_ON &&
      o->value_cache != TCI_CACHE_AUTO) {
    snprintf(why, TCI_WHY, "value_cache must be TCI_CACHE_OFF, _ON or _AUTO (0, 1, 2), not %d",
             o->value_cache);
    return TCI_E_ARG;
  }
  if (o->max_sweeps < 1 || o->max_sweeps > 1000) {
    snprintf(why, TCI_WHY, "max sweeps must be 1..1000, not %d", o->max_sweeps);
    return TCI_E_ARG;
  }
  if (o->max_lanes < 0) {
    snprintf(why, TCI_WHY, "max_lanes must be 0 (all) or more, not %d", o->max_lanes);
    return TCI_E_ARG;
  }
  if (o->min_free_sites < 2) {
    snprintf(why, TCI_WHY, "patches keep at least 2 free sites, not %d", o->min_free_sites);
    return TCI_E_ARG;
  }
  return TCI_OK;
}

int tci_problem_scale(const tci_grid *grid, const tci_function *function,
                      const tci_options *options, double *scale, char *why) {
  /* The root's first-pivot candidates, evaluated once here on the calling thread: the scale
   * every patch's tolerance is relative to (a patch's own larger max |f| raises it). */
  enum { SAMPLES = 64 };
  double x[SAMPLES * TCI_MAX_DIMS], y[SAMPLES];
  uint64_t state = options->seed ^ 0x5ca1ab1eull, index[SAMPLES * TCI_MAX_DIMS];
  uint8_t sites[TCI_MAX_SITES];
  for (int e = 0; e < SAMPLES; e++) {
    for (int s = 0; s < grid->sites; s++)
      sites[s] = e == 0 ? 0 : (uint8_t)(tci_rng_next(&state) % (uint64_t)grid->local_dim);
    tci_grid_point(grid, sites, index + e * grid->dims, x + e * grid->dims);
  }
  int rc = tci_function_call(function, index, x, SAMPLES, y);
  if (rc) {
    snprintf(why, TCI_WHY, "function '%s' returned %d on its first batch", function->name, rc);
    return TCI_E_FUNCTION;
  }
  double top = 0.0;
  for (int e = 0; e < SAMPLES; e++) {
    if (!isfinite(y[e])) {
      char at[200];
      int len = 0;
      for (int k = 0; k < grid->dims; k++)
        len += snprintf(at + len, sizeof at - (size_t)len, "%s%.17g", k ? ", " : "",
                        x[e * grid->dims + k]);
      char idx[200];
      len = 0;
      for (int k = 0; k < grid->dims; k++)
        len += snprintf(idx + len, sizeof idx - (size_t)len, "%s%llu", k ? ", " : "",
                        (unsigned long long)index[e * grid->dims + k]);
      snprintf(why, TCI_WHY, "function '%s' returned %g at x = (%s) (grid index (%s))",
               function->name, y[e], at, idx);
      return TCI_E_NONFINITE;
    }
    if (fabs(y[e]) > top) top = fabs(y[e]);
  }
  *scale = top;
  return TCI_OK;
}
