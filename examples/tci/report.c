/* examples/tci/report.c: the train against the function on random grid points. The
 * errors are relative to max |f| over the same points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tci.h"

int tci_accuracy_check(const tci_train *train, const tci_function *function, size_t samples,
                       uint64_t seed, tci_accuracy *out, char *why) {
  const tci_grid *g = &train->grid;
  int d = g->dims;
  double *x = calloc(samples * (size_t)d, sizeof(double));
  uint64_t *ix = calloc(samples * (size_t)d, sizeof(uint64_t));
  double *y = malloc(sizeof(double) * samples);
  double *t = malloc(sizeof(double) * samples);
  if (!x || !ix || !y || !t) {
    free(x);
    free(ix);
    free(y);
    free(t);
    snprintf(why, TCI_WHY, "no memory for %zu sample points", samples);
    return TCI_E_NOMEM;
  }
  uint64_t state = seed, mask = (g->bits == 64 ? ~0ull : (1ull << g->bits) - 1ull);
  uint64_t index[TCI_MAX_DIMS];
  uint8_t sites[TCI_MAX_SITES];
  for (size_t e = 0; e < samples; e++) {
    for (int v = 0; v < d; v++) index[v] = tci_rng_next(&state) & mask;
    tci_grid_sites(g, index, sites);
    tci_grid_point(g, sites, index, x + e * (size_t)d);
    memcpy(ix + e * (size_t)d, index, sizeof(uint64_t) * (size_t)d);
    t[e] = tci_train_eval_sites(train, sites);
  }
  int rc = tci_function_call(function, ix, x, samples, y);
  double top = 0.0, worst = 0.0, sum = 0.0;
  for (size_t e = 0; e < samples && rc == 0; e++) {
    if (!isfinite(y[e])) {
      snprintf(why, TCI_WHY, "function '%s' returned %g at a sample point x[0] = %.17g",
               function->name, y[e], x[e * (size_t)d]);
      rc = TCI_E_NONFINITE;
      break;
    }
    if (fabs(y[e]) > top) top = fabs(y[e]);
  }
  if (rc == 0) {
    memset(out, 0, sizeof *out);
    for (size_t e = 0; e < samples; e++) {
      double err = fabs(y[e] - t[e]);
      if (err > worst) {
        worst = err;
        for (int v = 0; v < d; v++) out->worst_x[v] = x[e * (size_t)d + (size_t)v];
        out->worst_f = y[e];
        out->worst_train = t[e];
      }
      sum += err;
    }
    out->samples = samples;
    out->max_abs_f = top;
    out->max_error = top > 0.0 ? worst / top : worst;
    out->mean_error = (top > 0.0 ? sum / top : sum) / (double)samples;
  } else if (rc != TCI_E_NONFINITE) {
    snprintf(why, TCI_WHY, "function '%s' returned %d on the sample points", function->name, rc);
    rc = TCI_E_FUNCTION;
  }
  free(x);
  free(ix);
  free(y);
  free(t);
  return rc;
}
