/* examples/tci/prrlu.c: the pivot update, a partial rank-revealing LU. Each step takes the
 * largest entry of the residual (full search) as the next pivot and subtracts its cross
 * (the rank-1 Schur complement update), until the largest entry left is at most the
 * tolerance or the rank reaches its cap. The chosen rows and columns are the new pivots. */
#include <math.h>

#include "tci.h"

/* The largest of |col[i]| * mask[i] (mask 1 for a row still free, 0 for a chosen one). */
static double column_max(const double *restrict col, const double *restrict mask, int m) {
  double best = 0.0;
  for (int i = 0; i < m; i++) {
    double v = fabs(col[i]) * mask[i];
    best = v > best ? v : best;
  }
  return best;
}

/* The largest |a(i, j)| over rows and columns not yet chosen, first in column-major order on
 * ties; -1 in *pi when every row or column is chosen. Each column's maximum is taken first
 * (a loop that vectorizes), and only a column that beats the best so far is scanned for the
 * first row holding it: the same entry a scan of every entry in order would pick. */
static double largest(const double *a, int m, int n, const double *row_free,
                      const unsigned char *col_used, int *pi, int *pj) {
  double best = -1.0;
  *pi = -1;
  *pj = -1;
  for (int j = 0; j < n; j++) {
    if (col_used[j]) continue;
    const double *col = a + (size_t)j * (size_t)m;
    double top = column_max(col, row_free, m);
    if (!(top > best)) continue;
    for (int i = 0; i < m; i++) {
      if (row_free[i] != 0.0 && fabs(col[i]) == top) {
        best = top;
        *pi = i;
        *pj = j;
        break;
      }
    }
  }
  return best < 0.0 ? 0.0 : best;
}

/* col -= f * pcol over every row. The rows already chosen are updated too: no search reads
 * them again and nothing reads the residual afterwards, and without the test the loop
 * vectorizes (each entry gets the same operations as before, so the same bits). */
static void subtract(double *restrict col, const double *restrict pcol, double f, int m) {
  for (int i = 0; i < m; i++) col[i] -= f * pcol[i];
}

int tci_prrlu(double *a, int m, int n, int max_rank, double tol_abs, int *rows, int *cols,
              double *error) {
  int cap = m < n ? m : n;
  if (max_rank < cap) cap = max_rank;
  double row_free[TCI_PRRLU_MAX];
  unsigned char col_used[TCI_PRRLU_MAX];
  if (m > TCI_PRRLU_MAX || n > TCI_PRRLU_MAX) {
    *error = INFINITY;
    return 0;
  }
  for (int i = 0; i < m; i++) row_free[i] = 1.0;
  for (int j = 0; j < n; j++) col_used[j] = 0;
  int rank = 0;
  double left = 0.0;
  for (;;) {
    int pi, pj;
    double big = largest(a, m, n, row_free, col_used, &pi, &pj);
    left = big;
    if (pi < 0 || rank >= cap) break;
    if (rank > 0 && big <= tol_abs) break;
    if (big == 0.0 && rank > 0) break;
    rows[rank] = pi;
    cols[rank] = pj;
    row_free[pi] = 0.0;
    col_used[pj] = 1;
    rank++;
    double pivot = a[(size_t)pj * (size_t)m + (size_t)pi];
    if (pivot == 0.0) { /* an all-zero matrix: one (zero) pivot, nothing to subtract */
      left = 0.0;
      break;
    }
    const double *pcol = a + (size_t)pj * (size_t)m;
    for (int j = 0; j < n; j++) {
      if (col_used[j]) continue;
      double *col = a + (size_t)j * (size_t)m;
      double f = col[pi] / pivot;
      if (f != 0.0) subtract(col, pcol, f, m);
    }
  }
  if (rank >= (m < n ? m : n)) left = 0.0; /* exhausted: the cross is exact */
  *error = left;
  return rank;
}
