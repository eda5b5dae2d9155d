/* tests/linalg/test_trmm.c: the BLAS triangular products tenlane defines for the LAPACK it
 * links (src/linalg/trmm.c: checks, then the provider's trmm), in every dtype, against a
 * naive long double product: both sides, both triangles, 'N', 'T' and 'C', unit and non-unit
 * diagonals; shapes that reach the 8-column blocks' tails, the 96-row chunks and the largest
 * triangle taken (128), and ones left to BLIS (n past 128, and side 'L'); A's other triangle
 * (and its diagonal when it is 'U'), and the padding of A and B, NaN (never read); rows of B
 * past m a sentinel (never written); alpha 0 (B NaN, never read), 1 and another; a NaN in a
 * row of B reaching that row only; the reference BLAS's quick returns and argument errors
 * (xerbla_ with the position). The shapes come from the triangle kernel this file had
 * until 2026-12-05; they stay as a table of cases for the provider's trmm. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_numeric.h"
#include "th_test.h"

/* tenlane's entries, under the name this provider gives them (linalg_int.h). */
#define strmm_ TL__BLAS_ENTRY(strmm_)
#define dtrmm_ TL__BLAS_ENTRY(dtrmm_)
#define ctrmm_ TL__BLAS_ENTRY(ctrmm_)
#define ztrmm_ TL__BLAS_ENTRY(ztrmm_)

#define TRMM_ARGS(T)                                                                             \
  const char *side, const char *uplo, const char *ta, const char *diag, const int *m,            \
      const int *n, const T *alpha, const T *a, const int *lda, T *b, const int *ldb, size_t l1, \
      size_t l2, size_t l3, size_t l4
void strmm_(TRMM_ARGS(float));
void dtrmm_(TRMM_ARGS(double));
void ctrmm_(TRMM_ARGS(float complex));
void ztrmm_(TRMM_ARGS(double complex));

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

static double complex get(tl_dtype dt, const void *p, long i) { return th_num_load(dt, p, i); }
static void put(tl_dtype dt, void *p, long i, double complex v) { th_num_store(dt, p, i, v); }

/* One call of the dtype's trmm_; alpha as double complex (its real part for reals). */
static void call(tl_dtype dt, char side, char uplo, char ta, char diag, int m, int n,
                 double complex alpha, const void *a, int lda, void *b, int ldb) {
  switch (dt) {
    case TL_F32: {
      float al = (float)creal(alpha);
      strmm_(&side, &uplo, &ta, &diag, &m, &n, &al, a, &lda, b, &ldb, 1, 1, 1, 1);
      break;
    }
    case TL_F64: {
      double al = creal(alpha);
      dtrmm_(&side, &uplo, &ta, &diag, &m, &n, &al, a, &lda, b, &ldb, 1, 1, 1, 1);
      break;
    }
    case TL_C64: {
      float complex al = (float complex)alpha;
      ctrmm_(&side, &uplo, &ta, &diag, &m, &n, &al, a, &lda, b, &ldb, 1, 1, 1, 1);
      break;
    }
    default:
      ztrmm_(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1);
      break;
  }
}

static unsigned seed = 23u;
static double draw(void) {
  seed = seed * 1664525u + 1013904223u;
  return (double)(seed >> 8) / 16777216.0 - 0.5;
}

/* op(A)[r, c] of the triangular A as the product sees it: 0 off the triangle, 1 on a unit
 * diagonal. */
static long double complex op_tri(tl_dtype dt, char uplo, char ta, char diag, const void *a,
                                  int lda, long r, long c) {
  const long i = ta == 'N' ? r : c, j = ta == 'N' ? c : r; /* A[i, j] */
  if (i == j && diag == 'U') return 1;
  if (uplo == 'U' ? i > j : i < j) return 0;
  long double complex v = get(dt, a, i + j * lda);
  return ta == 'C' ? conjl(v) : v;
}

/* One case against the naive product; returns 0 after reporting a mismatch. */
static int one_case(tl_dtype dt, char side, char uplo, char ta, char diag, int m, int n,
                    double complex alpha) {
  const int cplx = tl_dtype_is_complex(dt);
  const int ka = side == 'L' ? m : n; /* order of A */
  const int lda = ka + 3, ldb = m + 4;
  const size_t es = tl_dtype_size(dt);
  void *a = malloc(es * (size_t)lda * (size_t)(ka > 0 ? ka : 1));
  void *b = malloc(es * (size_t)ldb * (size_t)(n > 0 ? n : 1));
  double complex *want = malloc(sizeof *want * (size_t)(m > 0 ? m : 1) * (size_t)(n > 0 ? n : 1));
  const int alpha_zero = alpha == 0;
  /* What must not be read is NaN: the padding, the other triangle, a unit diagonal, and all
   * of A and B when alpha is 0. Rows of B past m hold a sentinel that must stay. */
  for (long j = 0; j < ka; j++)
    for (long i = 0; i < lda; i++) {
      const int unread = i >= ka || (uplo == 'U' ? i > j : i < j) || (i == j && diag == 'U');
      put(dt, a, i + j * lda, unread || alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
    }
  for (long j = 0; j < n; j++)
    for (long i = 0; i < ldb; i++)
      put(dt, b, i + j * ldb, i >= m ? -7.0 : alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  double scale = 0;
  for (long j = 0; j < n; j++)
    for (long i = 0; i < m; i++) {
      long double complex s = 0;
      if (!alpha_zero) {
        if (side == 'L')
          for (long p = 0; p < m; p++)
            s += op_tri(dt, uplo, ta, diag, a, lda, i, p) * get(dt, b, p + j * ldb);
        else
          for (long p = 0; p < n; p++)
            s += get(dt, b, i + p * ldb) * op_tri(dt, uplo, ta, diag, a, lda, p, j);
      }
      double complex w = (double complex)(alpha_zero ? 0 : alpha * s);
      want[i + j * m] = w;
      if (cabs(w) > scale) scale = cabs(w);
    }
  call(dt, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb);
  const double tol =
      (dt == TL_F32 || dt == TL_C64 ? 2e-6 : 4e-15) * (double)(ka + 4) * (scale > 1 ? scale : 1);
  int ok = 1;
  for (long j = 0; j < n && ok; j++)
    for (long i = 0; i < ldb && ok; i++) {
      double complex got = get(dt, b, i + j * ldb);
      int bad = i >= m ? got != -7.0 : !(cabs(got - want[i + j * m]) <= tol);
      if (bad) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "dtype %d %c%c%c%c m %d n %d alpha %g%+gi: B[%ld, %ld] = %g%+gi, want %g%+gi%s",
                 (int)dt, side, uplo, ta, diag, m, n, creal(alpha), cimag(alpha), i, j, creal(got),
                 cimag(got), i >= m ? -7.0 : creal(want[i + j * m]),
                 i >= m ? 0.0 : cimag(want[i + j * m]), i >= m ? " (padding)" : "");
        th_test_fail_at(__FILE__, __LINE__, buf);
        ok = 0;
      }
    }
  free(a), free(b), free(want);
  return ok;
}

/* (m, n): block tails (n % 8), the 96-row chunks, the largest triangle taken (128) and one
 * past it (BLIS), and side 'L' on the same shapes (BLIS). */
static const int shapes[][2] = {{1, 1},  {3, 2},   {5, 8},    {13, 9},  {37, 17},
                                {96, 8}, {97, 33}, {200, 64}, {7, 128}, {5, 129}};

static void table(int dtype_first, int dtype_last) {
  const char sides[2] = {'R', 'L'}, uplos[2] = {'U', 'L'}, transes[3] = {'N', 'T', 'C'};
  const char diags[2] = {'N', 'U'};
  const double complex alphas[3] = {1.0, 0.0, -0.75 + 0.25 * I};
  for (int d = dtype_first; d <= dtype_last; d++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int sd = 0; sd < 2; sd++)
        for (int u = 0; u < 2; u++)
          for (int t = 0; t < 3; t++)
            for (int g = 0; g < 2; g++)
              for (int al = 0; al < 3; al++) {
                tl_dtype dt = dtypes[d];
                double complex alpha = alphas[al];
                if (!tl_dtype_is_complex(dt)) alpha = creal(alpha);
                if (!one_case(dt, sides[sd], uplos[u], transes[t], diags[g], shapes[s][0],
                              shapes[s][1], alpha))
                  return;
              }
}

static void trmm_matches_a_naive_product(void) { table(0, 3); }

/* Rows of B are independent in B op(A): a NaN or an infinity in row r reaches row r only. */
static void trmm_non_finite_stays_in_its_row(void) {
  for (int d = 1; d < 4; d += 2)
    for (int bad = 0; bad < 2; bad++)
      for (int u = 0; u < 2; u++) {
        tl_dtype dt = dtypes[d];
        const int m = 50, n = 20, ld = 50, r = 31, q = 9;
        const size_t es = tl_dtype_size(dt);
        void *a = calloc((size_t)ld * ld, es), *b = calloc((size_t)ld * n, es);
        for (long i = 0; i < (long)ld * ld; i++) put(dt, a, i, 0.25);
        for (long i = 0; i < (long)ld * n; i++) put(dt, b, i, 0.5);
        put(dt, b, r + (long)q * ld, bad ? INFINITY : NAN);
        call(dt, 'R', u ? 'U' : 'L', 'N', 'N', m, n, 1.0, a, ld, b, ld);
        for (long j = 0; j < n; j++)
          for (long i = 0; i < m; i++) {
            double complex v = get(dt, b, i + j * ld);
            if (i != r) {
              /* column j of an upper A has j + 1 entries, of a lower one n - j */
              const double count = u ? (double)(j + 1) : (double)(n - j);
              TH_CHECK(v == 0.5 * 0.25 * count);
            }
          }
        free(a), free(b);
      }
}

/* m or n 0: B untouched. alpha 0 zeroes B without reading A or B. Bad arguments: xerbla_
 * gets the routine and the position, B is untouched. */
static void trmm_quick_returns_and_argument_errors(void) {
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    double a[64], b[64];
    for (int i = 0; i < 64; i++) a[i] = 1.0, b[i] = 3.0;
    char routine[16];
    int argument = 0;
    (void)tl__xerbla_take(routine, &argument);
    call(dt, 'R', 'U', 'N', 'N', 0, 3, 1.0, a, 3, b, 1);
    call(dt, 'L', 'L', 'T', 'U', 3, 0, 1.0, a, 3, b, 3);
    for (int i = 0; i < 64; i++) TH_CHECK(b[i] == 3.0);
    double nan_ab[16];
    for (int i = 0; i < 16; i++) nan_ab[i] = NAN;
    call(dt, 'R', 'U', 'N', 'N', 2, 2, 0.0, nan_ab, 2, nan_ab, 2);
    for (int i = 0; i < 2 * 2; i++) TH_CHECK(get(dt, nan_ab, i) == 0.0);
    TH_CHECK(tl__xerbla_take(routine, &argument) == 0);
    const struct {
      char side, uplo, ta, diag;
      int m, n, lda, ldb, position;
    } bad[] = {{'X', 'U', 'N', 'N', 2, 2, 2, 2, 1},  {'R', 'Y', 'N', 'N', 2, 2, 2, 2, 2},
               {'R', 'U', 'Z', 'N', 2, 2, 2, 2, 3},  {'R', 'U', 'N', 'W', 2, 2, 2, 2, 4},
               {'R', 'U', 'N', 'N', -1, 2, 2, 2, 5}, {'L', 'L', 'T', 'U', 2, -1, 2, 2, 6},
               {'R', 'U', 'N', 'N', 2, 4, 3, 2, 9},  {'L', 'U', 'N', 'N', 4, 2, 3, 4, 9},
               {'R', 'L', 'C', 'N', 4, 2, 2, 3, 11}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      call(dt, bad[i].side, bad[i].uplo, bad[i].ta, bad[i].diag, bad[i].m, bad[i].n, 1.0, a,
           bad[i].lda, b, bad[i].ldb);
      TH_CHECK(tl__xerbla_take(routine, &argument) == 1);
      TH_CHECK(argument == bad[i].position);
      TH_CHECK(strstr(routine, "TRMM") != NULL);
      for (int j = 0; j < 64; j++) TH_CHECK(b[j] == 3.0);
    }
  }
}

TH_TEST_MAIN(TH_CASE(trmm_matches_a_naive_product), TH_CASE(trmm_non_finite_stays_in_its_row),
             TH_CASE(trmm_quick_returns_and_argument_errors))
