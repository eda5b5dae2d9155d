/* tests/linalg/test_tridiag.c: tl_eigh's tridiagonal solver (src/linalg/tridiag.c) with its
 * own merges (laed2, laed4 in chunks of roots, the weights, vectors and products written in
 * tridiag.c) against the same solver handing every merge to LAPACK's laed1
 * (tl__tridiag_by_lapack = 1), on random tridiagonals of orders 100, 512 and 1000 (the last
 * two with chunked top merges) in f64 and f32: plain random entries, tiny off-diagonal
 * entries (most poles deflate), a constant diagonal with small couplings (a tight cluster),
 * and repeated eigenvalues (a direct sum of equal blocks glued by couplings below the
 * deflation tolerance). Eigenvalues must agree within a few ulps of the norm; each vector
 * whose eigenvalue is apart from the others (relative gap 1e-5) must have an inner product
 * of modulus 1 with laed1's within a tolerance of eps / gap; every result must have a small
 * residual, and for order <= 512 orthonormal columns. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_fixtures.h"
#include "th_test.h"

static uint64_t state = 0x2545f4914f6cdd1du;
static double draw(void) { /* uniform in [-0.5, 0.5) */
  state = state * 6364136223846793005u + 1442695040888963407u;
  return (double)(state >> 11) / 9007199254740992.0 - 0.5;
}

enum kind { RANDOM, TINY_COUPLINGS, CLUSTER, REPEATED };
static const char *kind_names[] = {"random", "tiny couplings", "cluster", "repeated"};

/* The tridiagonal of kind `kind` and order n, in double. */
static void make(enum kind kind, int64_t n, double *d, double *e) {
  for (int64_t i = 0; i < n; i++) {
    switch (kind) {
      case RANDOM:
        d[i] = draw();
        if (i + 1 < n) e[i] = draw();
        break;
      case TINY_COUPLINGS:
        d[i] = draw();
        if (i + 1 < n) e[i] = (i % 3 == 0 ? 1e-9 : 1e-3) * draw();
        break;
      case CLUSTER:
        d[i] = 1.0;
        if (i + 1 < n) e[i] = 1e-7 * (draw() + 1.0);
        break;
      case REPEATED: { /* 4 equal blocks; the glue is above the split test, below deflation */
        int64_t size = n / 4 > 0 ? n / 4 : 1, at = i % size;
        uint64_t keep = state;
        state = 0x9e3779b97f4a7c15u + (uint64_t)at;
        d[i] = draw();
        double coupling = draw();
        state = keep;
        if (i + 1 < n) e[i] = (i + 1) % size == 0 ? 1e-13 : coupling;
        break;
      }
    }
  }
}

typedef struct solved {
  double *w, *v; /* eigenvalues (n), vectors (n x n, column-major), in double */
} solved;

/* Solves (d, e) in `real` through tl__tridiag_solve with merges by laed1 or not. */
static solved solve(th_held *held, tl_dtype real, int64_t n, const double *d, const double *e,
                    int by_laed1) {
  size_t rsize = tl_dtype_size(real);
  char *dd = malloc((size_t)n * rsize), *ee = malloc((size_t)n * rsize);
  char *z = malloc((size_t)(n * n) * rsize), *work = malloc((size_t)TL__TRIDIAG_WORK(n) * rsize);
  lapack_int *iwork = malloc((size_t)TL__TRIDIAG_IWORK(n) * sizeof(lapack_int));
  TH_CHECK(dd && ee && z && work && iwork);
  for (int64_t i = 0; i < n; i++) {
    if (real == TL_F32) {
      ((float *)dd)[i] = (float)d[i];
      ((float *)ee)[i] = i + 1 < n ? (float)e[i] : 0.0f;
    } else {
      ((double *)dd)[i] = d[i];
      ((double *)ee)[i] = i + 1 < n ? e[i] : 0.0;
    }
  }
  tl__tridiag_by_lapack = by_laed1;
  TH_CHECK_OK(
      tl__tridiag_solve(held->exec, "test", real, n, dd, ee, z, (lapack_int)n, work, iwork));
  tl__tridiag_by_lapack = 0;
  solved out = {malloc((size_t)n * sizeof(double)), malloc((size_t)(n * n) * sizeof(double))};
  TH_CHECK(out.w && out.v);
  for (int64_t i = 0; i < n; i++) {
    out.w[i] = real == TL_F32 ? (double)((float *)dd)[i] : ((double *)dd)[i];
  }
  for (int64_t i = 0; i < n * n; i++) {
    out.v[i] = real == TL_F32 ? (double)((float *)z)[i] : ((double *)z)[i];
  }
  free(dd), free(ee), free(z), free(work), free(iwork);
  return out;
}

/* max |T v - v w| over the entries, over the norm of T. */
static double residual(int64_t n, const double *d, const double *e, const solved *s) {
  double worst = 0.0, norm = 0.0;
  for (int64_t i = 0; i < n; i++) norm = fmax(norm, fabs(d[i]) + (i + 1 < n ? 2 * fabs(e[i]) : 0));
  for (int64_t j = 0; j < n; j++) {
    const double *v = s->v + j * n;
    for (int64_t i = 0; i < n; i++) {
      double tv = d[i] * v[i];
      if (i > 0) tv += e[i - 1] * v[i - 1];
      if (i + 1 < n) tv += e[i] * v[i + 1];
      worst = fmax(worst, fabs(tv - s->w[j] * v[i]));
    }
  }
  return worst / (norm > 0 ? norm : 1.0);
}

static double orthogonality(int64_t n, const solved *s) {
  double worst = 0.0;
  for (int64_t a = 0; a < n; a++) {
    for (int64_t b = a; b < n; b++) {
      double dot = 0.0;
      for (int64_t i = 0; i < n; i++) dot += s->v[a * n + i] * s->v[b * n + i];
      worst = fmax(worst, fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  }
  return worst;
}

static void compare(th_held *held, tl_dtype real, enum kind kind, int64_t n) {
  double *d = calloc((size_t)n, sizeof(double)), *e = calloc((size_t)n, sizeof(double));
  TH_CHECK(d && e);
  make(kind, n, d, e);
  solved mine = solve(held, real, n, d, e, 0), ref = solve(held, real, n, d, e, 1);
  double eps = real == TL_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
  double norm = 0.0;
  for (int64_t i = 0; i < n; i++) norm = fmax(norm, fabs(ref.w[i]));
  double value_gap = 0.0, vector_gap = 0.0, worst_ratio = 0.0;
  int64_t apart = 0;
  for (int64_t j = 0; j < n; j++) {
    value_gap = fmax(value_gap, fabs(mine.w[j] - ref.w[j]) / norm);
    double gap = INFINITY;
    if (j > 0) gap = fmin(gap, ref.w[j] - ref.w[j - 1]);
    if (j + 1 < n) gap = fmin(gap, ref.w[j + 1] - ref.w[j]);
    gap /= norm;
    if (gap < 1e-5) continue;
    apart++;
    double dot = 0.0;
    for (int64_t i = 0; i < n; i++) dot += mine.v[j * n + i] * ref.v[j * n + i];
    double off = fabs(1.0 - fabs(dot));
    vector_gap = fmax(vector_gap, off);
    worst_ratio = fmax(worst_ratio, off * gap / eps);
  }
  /* Printed only: the same operations in the same order give equal entries on BLIS (seen:
   * 0 apart from the cluster's), but a vector of a cluster or of a repeated eigenvalue is
   * not unique, and another provider's norm or product rounds differently. */
  double entries = 0.0;
  for (int64_t i = 0; i < n * n; i++) entries = fmax(entries, fabs(mine.v[i] - ref.v[i]));
  double res = residual(n, d, e, &mine), orth = n <= 512 ? orthogonality(n, &mine) : 0.0;
  fprintf(stderr,
          "%s n = %lld %s: eigenvalues within %.2g of the norm; %lld vectors apart, 1 - |<v, "
          "v_laed1>| at most %.2g (x gap / eps %.2g); entries within %.2g; residual %.2g, "
          "orthogonality %.2g\n",
          real == TL_F32 ? "f32" : "f64", (long long)n, kind_names[kind], value_gap,
          (long long)apart, vector_gap, worst_ratio, entries, res, orth);
  TH_CHECK(value_gap <= 8 * eps);
  TH_CHECK(worst_ratio <= 100.0);
  TH_CHECK(res <= 10 * eps * (double)n);
  TH_CHECK(orth <= 10 * eps * (double)n);
  if (kind == RANDOM) TH_CHECK(apart > n / 2); /* the vector comparison is not empty */
  free(mine.w), free(mine.v), free(ref.w), free(ref.v), free(d), free(e);
}

static void tridiag_merges_match_laed1(void) {
  th_held held;
  th_held_open(&held, 1);
  const int64_t orders[] = {100, 512, 1000};
  for (int o = 0; o < 3; o++) {
    for (int kind = RANDOM; kind <= REPEATED; kind++) {
      compare(&held, TL_F64, (enum kind)kind, orders[o]);
      if (orders[o] <= 512) compare(&held, TL_F32, (enum kind)kind, orders[o]);
    }
  }
  th_held_close(&held);
}

/* Without vectors: tridiag.c's QL iteration (blocks of order > 362) against LAPACK's sterf
 * (tl__tridiag_by_lapack = 1), on orders 512, 1000 and 2000, the four kinds above plus a
 * graded matrix (entries from 1 down to 1e-12 along the diagonal, where the orientation
 * matters) and the random one scaled by 1e-300 and 1e300 (the scaling into the range where
 * the squares stay finite): eigenvalues within 50 eps sqrt(n) of the norm. */
static void values(th_held *held, tl_dtype real, int kind, int64_t n, double scale) {
  double *d = calloc((size_t)n, sizeof(double)), *e = calloc((size_t)n, sizeof(double));
  TH_CHECK(d && e);
  if (kind <= REPEATED) {
    make((enum kind)kind, n, d, e);
  } else { /* graded */
    for (int64_t i = 0; i < n; i++) {
      double g = pow(1e-12, (double)i / (double)n);
      d[i] = g * (draw() + 1.0);
      e[i] = i + 1 < n ? g * draw() : 0.0;
    }
  }
  for (int64_t i = 0; i < n; i++) d[i] *= scale, e[i] *= scale;
  size_t rsize = tl_dtype_size(real);
  double *w[2];
  for (int by = 0; by < 2; by++) {
    char *dd = malloc((size_t)n * rsize), *ee = malloc((size_t)n * rsize);
    w[by] = malloc((size_t)n * sizeof(double));
    TH_CHECK(dd && ee && w[by]);
    for (int64_t i = 0; i < n; i++) {
      if (real == TL_F32) {
        ((float *)dd)[i] = (float)d[i], ((float *)ee)[i] = (float)e[i];
      } else {
        ((double *)dd)[i] = d[i], ((double *)ee)[i] = e[i];
      }
    }
    tl__tridiag_by_lapack = by;
    TH_CHECK_OK(tl__tridiag_solve(held->exec, "test", real, n, dd, ee, NULL, 0, NULL, NULL));
    tl__tridiag_by_lapack = 0;
    for (int64_t i = 0; i < n; i++) {
      w[by][i] = real == TL_F32 ? (double)((float *)dd)[i] : ((double *)dd)[i];
    }
    free(dd), free(ee);
  }
  double norm = 0.0, worst = 0.0;
  for (int64_t i = 0; i < n; i++) norm = fmax(norm, fabs(w[1][i]));
  for (int64_t i = 0; i < n; i++) {
    if (i > 0) TH_CHECK(w[0][i - 1] <= w[0][i]);
    worst = fmax(worst, fabs(w[0][i] - w[1][i]) / norm);
  }
  double eps = real == TL_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
  fprintf(stderr,
          "%s n = %lld %s x %g: QL's eigenvalues within %.2g of the norm of sterf's (%.1f eps)\n",
          real == TL_F32 ? "f32" : "f64", (long long)n,
          kind <= REPEATED ? kind_names[kind] : "graded", scale, worst, worst / eps);
  TH_CHECK(norm > 0.0 && worst <= 50 * eps * sqrt((double)n));
  free(w[0]), free(w[1]), free(d), free(e);
}

static void tridiag_values_match_sterf(void) {
  th_held held;
  th_held_open(&held, 1);
  const int64_t orders[] = {512, 1000, 2000};
  for (int o = 0; o < 3; o++) {
    for (int kind = RANDOM; kind <= REPEATED + 1; kind++) {
      values(&held, TL_F64, kind, orders[o], 1.0);
      values(&held, TL_F32, kind, orders[o], 1.0);
    }
  }
  values(&held, TL_F64, RANDOM, 1000, 1e-300);
  values(&held, TL_F64, RANDOM, 1000, 1e300);
  values(&held, TL_F32, RANDOM, 1000, 1e-30);
  values(&held, TL_F32, RANDOM, 1000, 1e30);
  th_held_close(&held);
}

TH_TEST_MAIN(TH_CASE(tridiag_merges_match_laed1), TH_CASE(tridiag_values_match_sterf))
