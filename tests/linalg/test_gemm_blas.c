/* tests/linalg/test_gemm_blas.c: the BLAS matrix products tenlane defines for the LAPACK it
 * links (src/linalg/gemm_blas.c, kernels in gemm_narrow.c), in every dtype, against a naive
 * long double product:
 * every pair of 'N', 'T' and 'C'; shapes that reach the narrow kernels' row and column tails
 * (24 x 8 and 12 x 4 rank-k tiles, 8 x 3 and 4 x 3 dot tiles), their k chunks (64 for
 * rank-k, 256 and 128 for dot) and the shapes they leave to BLIS; padded leading dimensions
 * whose padding is NaN (never read) in A and B and a sentinel (never written) in C; alpha 0,
 * 1 and another, beta 0 (C NaN, never read), 1 and another; a NaN or an infinity in A
 * reaching exactly the outputs it should; the reference BLAS's quick returns and argument
 * errors (xerbla_ with the position). f64 and c128 run on tenlane's kernels where the CPU has
 * AVX-512F and on BLIS's (tl__blas_isa_cap 0). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_numeric.h"
#include "th_test.h"

/* tenlane's entries, under the name this provider gives them (linalg_int.h). */
#define sgemm_ TL__BLAS_ENTRY(sgemm_)
#define dgemm_ TL__BLAS_ENTRY(dgemm_)
#define cgemm_ TL__BLAS_ENTRY(cgemm_)
#define zgemm_ TL__BLAS_ENTRY(zgemm_)

void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc, size_t la, size_t lb);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t la, size_t lb);
void cgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float complex *alpha, const float complex *a, const int *lda,
            const float complex *b, const int *ldb, const float complex *beta, float complex *c,
            const int *ldc, size_t la, size_t lb);
void zgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double complex *alpha, const double complex *a, const int *lda,
            const double complex *b, const int *ldb, const double complex *beta, double complex *c,
            const int *ldc, size_t la, size_t lb);

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

static double complex get(tl_dtype dt, const void *p, long i) { return th_num_load(dt, p, i); }
static void put(tl_dtype dt, void *p, long i, double complex v) { th_num_store(dt, p, i, v); }

/* One call of the dtype's gemm_; alpha and beta as double complex (real parts for reals). */
static void call(tl_dtype dt, char ta, char tb, int m, int n, int k, double complex alpha,
                 const void *a, int lda, const void *b, int ldb, double complex beta, void *c,
                 int ldc) {
  switch (dt) {
    case TL_F32: {
      float al = (float)creal(alpha), be = (float)creal(beta);
      sgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc, 1, 1);
      break;
    }
    case TL_F64: {
      double al = creal(alpha), be = creal(beta);
      dgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc, 1, 1);
      break;
    }
    case TL_C64: {
      float complex al = (float complex)alpha, be = (float complex)beta;
      cgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc, 1, 1);
      break;
    }
    default:
      zgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
      break;
  }
}

static unsigned seed = 11u;
static double draw(void) {
  seed = seed * 1664525u + 1013904223u;
  return (double)(seed >> 8) / 16777216.0 - 0.5;
}

/* op(X)[r, c] for X stored with leading dimension ld. */
static long double complex op_at(tl_dtype dt, char t, const void *x, int ld, long r, long c) {
  long double complex v = t == 'N' ? get(dt, x, r + c * ld) : get(dt, x, c + r * ld);
  return t == 'C' ? conjl(v) : v;
}

/* One case against the naive product; returns 0 after reporting a mismatch. */
static int one_case(tl_dtype dt, char ta, char tb, int m, int n, int k, double complex alpha,
                    double complex beta) {
  const int cplx = tl_dtype_is_complex(dt);
  const int rows_a = ta == 'N' ? m : k, cols_a = ta == 'N' ? k : m;
  const int rows_b = tb == 'N' ? k : n, cols_b = tb == 'N' ? n : k;
  const int lda = rows_a + 3, ldb = rows_b + 2, ldc = m + 5;
  const size_t es = tl_dtype_size(dt);
  void *a = malloc(es * (size_t)lda * (size_t)(cols_a > 0 ? cols_a : 1));
  void *b = malloc(es * (size_t)ldb * (size_t)(cols_b > 0 ? cols_b : 1));
  void *c = malloc(es * (size_t)ldc * (size_t)(n > 0 ? n : 1));
  double complex *want = malloc(sizeof *want * (size_t)(m > 0 ? m : 1) * (size_t)(n > 0 ? n : 1));
  const int alpha_zero = alpha == 0, beta_zero = beta == 0;
  /* What must not be read is NaN: A and B when alpha is 0, C when beta is 0, and the
   * padding of A and B always. C's padding holds a sentinel that must stay. */
  for (long j = 0; j < cols_a; j++)
    for (long i = 0; i < lda; i++)
      put(dt, a, i + j * lda, i >= rows_a || alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long j = 0; j < cols_b; j++)
    for (long i = 0; i < ldb; i++)
      put(dt, b, i + j * ldb, i >= rows_b || alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long j = 0; j < n; j++)
    for (long i = 0; i < ldc; i++)
      put(dt, c, i + j * ldc, i >= m ? -7.0 : beta_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  double scale = 0;
  for (long j = 0; j < n; j++)
    for (long i = 0; i < m; i++) {
      long double complex s = 0;
      if (!alpha_zero)
        for (long p = 0; p < k; p++) s += op_at(dt, ta, a, lda, i, p) * op_at(dt, tb, b, ldb, p, j);
      long double complex cv = beta_zero ? 0 : beta * (long double complex)get(dt, c, i + j * ldc);
      double complex w = (double complex)(cv + (alpha_zero ? 0 : alpha * s));
      want[i + j * m] = w;
      if (cabs(w) > scale) scale = cabs(w);
    }
  call(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double tol =
      (dt == TL_F32 || dt == TL_C64 ? 2e-6 : 4e-15) * (double)(k + 4) * (scale > 1 ? scale : 1);
  int ok = 1;
  for (long j = 0; j < n && ok; j++)
    for (long i = 0; i < ldc && ok; i++) {
      double complex got = get(dt, c, i + j * ldc);
      if (i >= m) {
        if (got != -7.0) {
          char buf[160];
          snprintf(buf, sizeof buf, "dtype %d %c%c m %d n %d k %d: C's padding row %ld written",
                   (int)dt, ta, tb, m, n, k, i);
          th_test_fail_at(__FILE__, __LINE__, buf);
          ok = 0;
        }
        continue;
      }
      if (!(cabs(got - want[i + j * m]) <= tol)) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "dtype %d %c%c m %d n %d k %d alpha %g%+gi beta %g%+gi: C[%ld, %ld] = %g%+gi, "
                 "want %g%+gi",
                 (int)dt, ta, tb, m, n, k, creal(alpha), cimag(alpha), creal(beta), cimag(beta), i,
                 j, creal(got), cimag(got), creal(want[i + j * m]), cimag(want[i + j * m]));
        th_test_fail_at(__FILE__, __LINE__, buf);
        ok = 0;
      }
    }
  free(a), free(b), free(c), free(want);
  return ok;
}

/* (m, n, k): rank-k tails and chunks (k <= 128, or n <= 128 with k past 128), dot tails
 * and chunks (n <= 128, k past 128 and 256), and shapes both kernels leave to BLIS
 * (n and k past 128). */
static const int shapes[][3] = {{1, 1, 1},     {3, 2, 5},    {8, 3, 8},     {13, 5, 7},
                                {24, 8, 32},   {25, 9, 33},  {37, 17, 64},  {50, 4, 130},
                                {9, 3, 300},   {17, 7, 129}, {100, 33, 65}, {5, 130, 3},
                                {40, 10, 200}, {2, 1, 257},  {3, 131, 129}};

static void table(int dtype_first, int dtype_last) {
  const char transes[3] = {'N', 'T', 'C'};
  const double complex alphas[3] = {1.0, 0.0, -0.75 + 0.25 * I};
  const double complex betas[3] = {0.0, 1.0, 0.5 - 0.5 * I};
  for (int d = dtype_first; d <= dtype_last; d++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++)
          for (int al = 0; al < 3; al++)
            for (int be = 0; be < 3; be++) {
              tl_dtype dt = dtypes[d];
              double complex alpha = alphas[al], beta = betas[be];
              if (!tl_dtype_is_complex(dt)) alpha = creal(alpha), beta = creal(beta);
              if (!one_case(dt, transes[x], transes[y], shapes[s][0], shapes[s][1], shapes[s][2],
                            alpha, beta))
                return;
            }
}

static void gemm_matches_a_naive_product(void) { table(0, 3); }

static void gemm_through_blis_matches_too(void) {
  int saved = tl__blas_isa_cap;
  tl__blas_isa_cap = 0;
  table(1, 1);
  table(3, 3);
  tl__blas_isa_cap = saved;
}

/* A NaN (or an infinity, whose products with A's other entries are finite) at A[r, q]
 * reaches row r of C = A B and no other row, in the rank-k and the dot kernels. */
static void gemm_non_finite_reaches_its_row_only(void) {
  for (int d = 1; d < 4; d += 2)
    for (int form = 0; form < 2; form++)
      for (int bad = 0; bad < 2; bad++) {
        tl_dtype dt = dtypes[d];
        const char ta = form == 0 ? 'N' : 'C';
        const int m = 29, n = 7, k = 40, r = 19, q = 11, ld = 40;
        const size_t es = tl_dtype_size(dt);
        void *a = calloc((size_t)ld * ld, es), *b = calloc((size_t)ld * ld, es);
        void *c = calloc((size_t)ld * ld, es);
        for (long i = 0; i < (long)ld * ld; i++) put(dt, a, i, 0.25), put(dt, b, i, 0.5);
        put(dt, a, ta == 'N' ? r + (long)q * ld : q + (long)r * ld, bad ? INFINITY : NAN);
        call(dt, ta, 'N', m, n, k, 1.0, a, ld, b, ld, 0.0, c, ld);
        for (long j = 0; j < n; j++)
          for (long i = 0; i < m; i++) {
            double complex v = get(dt, c, i + j * ld);
            if (i == r) {
              TH_CHECK(bad ? isinf(creal(v)) || isnan(creal(v)) : isnan(creal(v)));
            } else {
              TH_CHECK(v == 0.25 * 0.5 * k);
            }
          }
        free(a), free(b), free(c);
      }
}

/* m or n 0, or alpha or k 0 with beta 1: C untouched (even a beta-0 call leaves it then).
 * alpha 0 with beta 0 zeroes C without reading A or B. Bad arguments: xerbla_ gets the
 * routine and the position, C is untouched. */
static void gemm_quick_returns_and_argument_errors(void) {
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    double a[64], b[64], c[64];
    for (int i = 0; i < 64; i++) a[i] = b[i] = 1.0, c[i] = 3.0;
    char routine[16];
    int argument = 0;
    (void)tl__xerbla_take(routine, &argument);
    call(dt, 'N', 'N', 0, 3, 2, 1.0, a, 1, b, 2, 0.0, c, 1);
    call(dt, 'T', 'N', 3, 0, 2, 1.0, a, 2, b, 2, 0.0, c, 3);
    call(dt, 'N', 'N', 3, 3, 3, 0.0, a, 3, b, 3, 1.0, c, 3);
    call(dt, 'N', 'C', 3, 3, 0, 1.0, a, 3, b, 3, 1.0, c, 3);
    for (int i = 0; i < 64; i++) TH_CHECK(c[i] == 3.0);
    double nan_a[16];
    for (int i = 0; i < 16; i++) nan_a[i] = NAN;
    call(dt, 'N', 'T', 2, 2, 2, 0.0, nan_a, 2, nan_a, 2, 0.0, c, 2);
    for (int i = 0; i < 2 * 2; i++) TH_CHECK(get(dt, c, i) == 0.0);
    for (int i = 0; i < 64; i++) c[i] = 3.0;
    TH_CHECK(tl__xerbla_take(routine, &argument) == 0);
    const struct {
      char ta, tb;
      int m, n, k, lda, ldb, ldc, position;
    } bad[] = {{'X', 'N', 2, 2, 2, 2, 2, 2, 1},  {'N', 'Y', 2, 2, 2, 2, 2, 2, 2},
               {'N', 'N', -1, 2, 2, 2, 2, 2, 3}, {'N', 'N', 2, -1, 2, 2, 2, 2, 4},
               {'N', 'N', 2, 2, -1, 2, 2, 2, 5}, {'N', 'N', 4, 2, 2, 3, 2, 4, 8},
               {'T', 'N', 2, 2, 4, 3, 4, 2, 8},  {'N', 'N', 2, 2, 4, 2, 3, 2, 10},
               {'N', 'C', 2, 5, 2, 2, 4, 2, 10}, {'N', 'N', 4, 2, 2, 4, 2, 3, 13}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      call(dt, bad[i].ta, bad[i].tb, bad[i].m, bad[i].n, bad[i].k, 1.0, a, bad[i].lda, b,
           bad[i].ldb, 0.0, c, bad[i].ldc);
      TH_CHECK(tl__xerbla_take(routine, &argument) == 1);
      TH_CHECK(argument == bad[i].position);
      TH_CHECK(strstr(routine, "GEMM") != NULL);
      for (int j = 0; j < 64; j++) TH_CHECK(c[j] == 3.0);
    }
  }
}

TH_TEST_MAIN(TH_CASE(gemm_matches_a_naive_product), TH_CASE(gemm_through_blis_matches_too),
             TH_CASE(gemm_non_finite_reaches_its_row_only),
             TH_CASE(gemm_quick_returns_and_argument_errors))
