/* tests/linalg/test_getrf.c: tenlane's own LU core (src/linalg/getrf.c) in every dtype,
 * against a naive reconstruction P L U = A, over shapes that reach every branch (panel only,
 * one and several splits, the triangle inverse, tall and wide), plus LAPACK's conventions:
 * 1-based pivots, info at the first exact zero pivot. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_numeric.h"
#include "th_test.h"

static double complex get(tl_dtype dt, const void *a, lapack_int lda, lapack_int i, lapack_int j) {
  return th_num_load(dt, a, (int64_t)i + (int64_t)j * lda);
}

static void put(tl_dtype dt, void *a, lapack_int lda, lapack_int i, lapack_int j,
                double complex v) {
  th_num_store(dt, a, (int64_t)i + (int64_t)j * lda, v);
}

/* P L U against the original, relative to |A|; |L| <= 1 (partial pivoting). */
static void check_factors(tl_dtype dt, lapack_int m, lapack_int n, const void *orig, const void *lu,
                          lapack_int lda, const lapack_int *ipiv) {
  lapack_int k = m < n ? m : n;
  int cplx = tl_dtype_is_complex(dt);
  double complex *prod = calloc((size_t)m * (size_t)n, sizeof *prod);
  double norm = 0;
  for (lapack_int j = 0; j < n; j++)
    for (lapack_int i = 0; i < m; i++) {
      double complex s = 0;
      for (lapack_int p = 0; p <= (i < j ? i : j) && p < k; p++) {
        double complex l = p == i ? 1.0 : get(dt, lu, lda, i, p);
        s += l * get(dt, lu, lda, p, j);
      }
      prod[i + (size_t)j * m] = s;
      norm += cabs(get(dt, orig, lda, i, j));
    }
  /* Undo the interchanges, last first: rows of L U back to A's order. */
  for (lapack_int i = k - 1; i >= 0; i--) {
    lapack_int p = ipiv[i] - 1;
    TH_CHECK(p >= i && p < m);
    if (p == i) continue;
    for (lapack_int j = 0; j < n; j++) {
      double complex t = prod[i + (size_t)j * m];
      prod[i + (size_t)j * m] = prod[p + (size_t)j * m];
      prod[p + (size_t)j * m] = t;
    }
  }
  double err = 0;
  for (lapack_int j = 0; j < n; j++)
    for (lapack_int i = 0; i < m; i++) {
      err += cabs(prod[i + (size_t)j * m] - get(dt, orig, lda, i, j));
      /* Pivoting on |re| + |im| bounds a complex multiplier's modulus by sqrt(2). */
      if (i > j && j < k) TH_CHECK(cabs(get(dt, lu, lda, i, j)) <= (cplx ? 1.4143 : 1.0) + 1e-6);
    }
  double eps = (dt == TL_F32 || dt == TL_C64) ? 1e-6 : 1e-15;
  if (!(err <= 50.0 * eps * (double)(m > n ? m : n) * (norm + 1.0))) {
    char buf[160];
    snprintf(buf, sizeof buf, "%s %dx%d: |PLU - A| = %g, |A| = %g", tl_dtype_name(dt), m, n, err,
             norm);
    th_test_fail_at(__FILE__, __LINE__, buf);
  }
  free(prod);
}

static void getrf_reconstructs_in_every_dtype(void) {
  /* 300 x 300 and 260 x 200: trailing updates past the tiny complex kernel's reach, which
   * run the packed complex kernel when given its scratch (the second pass). */
  const lapack_int shapes[][2] = {{1, 1},    {3, 3},     {5, 2},     {2, 5},    {8, 8},
                                  {9, 9},    {17, 17},   {40, 33},   {33, 70},  {64, 64},
                                  {100, 37}, {129, 129}, {300, 300}, {260, 200}};
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  unsigned seed = 7u;
  int packed_runs = 0;
  for (int d = 0; d < 4; d++)
    for (size_t s = 0; s < 2 * (sizeof shapes / sizeof shapes[0]); s++) {
      tl_dtype dt = dtypes[d];
      const size_t shape_count = sizeof shapes / sizeof shapes[0];
      lapack_int m = shapes[s % shape_count][0], n = shapes[s % shape_count][1], lda = m + 3;
      const size_t pack_bytes = s >= shape_count ? tl__getrf_pack_bytes(dt, m, n) : 0;
      if (s >= shape_count && pack_bytes == 0) continue; /* nothing a second pass would change */
      void *pack = pack_bytes ? aligned_alloc(64, (pack_bytes + 63) / 64 * 64) : NULL;
      packed_runs += pack != NULL;
      size_t bytes = tl_dtype_size(dt) * (size_t)lda * (size_t)n;
      void *a = malloc(bytes), *orig = malloc(bytes);
      lapack_int *ipiv = malloc(sizeof *ipiv * (size_t)(m < n ? m : n));
      for (lapack_int j = 0; j < n; j++)
        for (lapack_int i = 0; i < lda; i++) {
          seed = seed * 1664525u + 1013904223u;
          double re = (double)(seed >> 8) / 16777216.0 - 0.5;
          seed = seed * 1664525u + 1013904223u;
          double im = (double)(seed >> 8) / 16777216.0 - 0.5;
          put(dt, a, lda, i, j, re + I * im);
        }
      memcpy(orig, a, bytes);
      lapack_int info = tl__getrf(dt, m, n, a, lda, ipiv, pack);
      TH_CHECK(info == 0);
      check_factors(dt, m, n, orig, a, lda, ipiv);
      /* Rows beyond m (the padding) are never touched. */
      for (lapack_int j = 0; j < n; j++)
        for (lapack_int i = m; i < lda; i++)
          TH_CHECK(get(dt, a, lda, i, j) == get(dt, orig, lda, i, j));
      free(a), free(orig), free(ipiv), free(pack);
    }
  /* On a CPU with the packed complex kernel, both complex dtypes took the second pass. */
  TH_CHECK((packed_runs > 0) == (tl__getrf_pack_bytes(TL_C128, 300, 300) > 0));
}

static void getrf_reports_the_first_zero_pivot(void) {
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    lapack_int n = 40;
    void *a = calloc((size_t)n * (size_t)n, tl_dtype_size(dt));
    lapack_int ipiv[40];
    /* Columns 23 and 31 exactly zero: the updates keep them zero, so the factorization
     * meets its first zero pivot at column 23 (info 24), and completes. */
    for (lapack_int j = 0; j < n; j++)
      for (lapack_int i = 0; i < n; i++)
        put(dt, a, n, i, j,
            j == 23 || j == 31 ? 0.0 : (i == j ? 4.0 : 0.0) + 1.0 / (double)(1 + i + 2 * j));
    lapack_int info = tl__getrf(dt, n, n, a, n, ipiv, NULL);
    TH_CHECK(info == 24);
    free(a);
    /* An all-zero matrix: info 1, every pivot its own row. */
    a = calloc((size_t)n * (size_t)n, tl_dtype_size(dt));
    info = tl__getrf(dt, n, n, a, n, ipiv, NULL);
    TH_CHECK(info == 1);
    for (lapack_int i = 0; i < n; i++) TH_CHECK(ipiv[i] == i + 1);
    free(a);
  }
}

/* The pivot of a one-column factorization is the first largest |re| + |im| (|x| for real
 * types), NaNs never chosen: checked against a plain search over columns full of ties, at
 * every length up to 40 (the vector loops' tails) and with the maximum at every place. */
static lapack_int naive_pivot(tl_dtype dt, const void *a, lapack_int m) {
  lapack_int p = 0;
  double best = -1;
  for (lapack_int i = 0; i < m; i++) {
    double complex z = get(dt, a, m, i, 0);
    double v = fabs(creal(z)) + fabs(cimag(z));
    if (v > best) best = v, p = i;
  }
  return p;
}

static void getrf_picks_the_first_largest_pivot(void) {
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  /* Small integers and halves: many exact ties, in both parts of a complex entry. */
  const double parts[7] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 2.0};
  unsigned seed = 11u;
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    for (lapack_int m = 1; m <= 40; m++)
      for (int round = 0; round < 12; round++) {
        void *a = malloc(tl_dtype_size(dt) * (size_t)m);
        for (lapack_int i = 0; i < m; i++) {
          seed = seed * 1664525u + 1013904223u;
          double re = parts[(seed >> 10) % 7];
          seed = seed * 1664525u + 1013904223u;
          double im = parts[(seed >> 10) % 7];
          put(dt, a, m, i, 0, re + I * im);
        }
        if (round >= 6) { /* NaNs here and there; one at the column's top in round 6 */
          put(dt, a, m, round == 6 ? 0 : (lapack_int)(seed % (unsigned)m), 0, NAN);
        }
        lapack_int want = naive_pivot(dt, a, m), ipiv = 0;
        tl__getrf(dt, m, 1, a, m, &ipiv, NULL);
        TH_CHECK(ipiv == want + 1);
        free(a);
      }
    /* The largest entry alone at each position of a 37-row column (and its negative). */
    for (lapack_int at = 0; at < 37; at++)
      for (int sgn = 0; sgn < 2; sgn++) {
        double complex col[37];
        void *a = malloc(tl_dtype_size(dt) * 37);
        for (lapack_int i = 0; i < 37; i++) col[i] = 0.25 * (double)(i % 3) - 0.25 * I;
        col[at] = sgn ? -3.0 + 0.5 * I : 3.0;
        for (lapack_int i = 0; i < 37; i++) put(dt, a, 37, i, 0, col[i]);
        lapack_int ipiv = 0;
        tl__getrf(dt, 37, 1, a, 37, &ipiv, NULL);
        TH_CHECK(ipiv == at + 1);
        free(a);
      }
  }
}

TH_TEST_MAIN(TH_CASE(getrf_reconstructs_in_every_dtype),
             TH_CASE(getrf_reports_the_first_zero_pivot),
             TH_CASE(getrf_picks_the_first_largest_pivot))
