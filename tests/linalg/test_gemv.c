/* tests/linalg/test_gemv.c: the BLAS matrix-vector products tenlane defines for the LAPACK
 * it links (src/linalg/gemv.c), in every dtype, against a naive long double product:
 * 'N', 'T' and 'C'; shapes that reach every tail of the 4-column and 8/16-row steps and the
 * 512-row chunks of a strided vector; increments 1, 2, 3, -1, -2; alpha 0, 1 and another,
 * beta 0, 1 and another, with what must not be read set to NaN; elements between the strides
 * of y never written; the reference BLAS's quick returns and argument errors (xerbla_ with
 * the position). f64 and c128 run on tenlane's AVX-512 kernels where the CPU has them and on
 * BLIS's (tl__blas_isa_cap 0). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_numeric.h"
#include "th_test.h"

/* tenlane's entries, under the name this provider gives them (linalg_int.h). */
#define sgemv_ TL__BLAS_ENTRY(sgemv_)
#define dgemv_ TL__BLAS_ENTRY(dgemv_)
#define cgemv_ TL__BLAS_ENTRY(cgemv_)
#define zgemv_ TL__BLAS_ENTRY(zgemv_)

void sgemv_(const char *trans, const int *m, const int *n, const float *alpha, const float *a,
            const int *lda, const float *x, const int *incx, const float *beta, float *y,
            const int *incy, size_t trans_length);
void dgemv_(const char *trans, const int *m, const int *n, const double *alpha, const double *a,
            const int *lda, const double *x, const int *incx, const double *beta, double *y,
            const int *incy, size_t trans_length);
void cgemv_(const char *trans, const int *m, const int *n, const float complex *alpha,
            const float complex *a, const int *lda, const float complex *x, const int *incx,
            const float complex *beta, float complex *y, const int *incy, size_t trans_length);
void zgemv_(const char *trans, const int *m, const int *n, const double complex *alpha,
            const double complex *a, const int *lda, const double complex *x, const int *incx,
            const double complex *beta, double complex *y, const int *incy, size_t trans_length);

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

static double complex get(tl_dtype dt, const void *p, long i) { return th_num_load(dt, p, i); }
static void put(tl_dtype dt, void *p, long i, double complex v) { th_num_store(dt, p, i, v); }

/* One call of the dtype's gemv_; alpha and beta as double complex (real parts for reals). */
static void call(tl_dtype dt, char trans, int m, int n, double complex alpha, const void *a,
                 int lda, const void *x, int incx, double complex beta, void *y, int incy) {
  switch (dt) {
    case TL_F32: {
      float al = (float)creal(alpha), be = (float)creal(beta);
      sgemv_(&trans, &m, &n, &al, a, &lda, x, &incx, &be, y, &incy, 1);
      break;
    }
    case TL_F64: {
      double al = creal(alpha), be = creal(beta);
      dgemv_(&trans, &m, &n, &al, a, &lda, x, &incx, &be, y, &incy, 1);
      break;
    }
    case TL_C64: {
      float complex al = (float complex)alpha, be = (float complex)beta;
      cgemv_(&trans, &m, &n, &al, a, &lda, x, &incx, &be, y, &incy, 1);
      break;
    }
    default:
      zgemv_(&trans, &m, &n, &alpha, a, &lda, x, &incx, &beta, y, &incy, 1);
      break;
  }
}

/* Memory index of a vector's element i (of len) at increment inc, as the BLAS walks it. */
static long at(long i, long len, int inc) { return inc > 0 ? i * inc : (len - 1 - i) * (long)-inc; }

static unsigned seed = 5u;
static double draw(void) {
  seed = seed * 1664525u + 1013904223u;
  return (double)(seed >> 8) / 16777216.0 - 0.5;
}

/* One case against the naive product; returns 0 after reporting a mismatch. */
static int one_case(tl_dtype dt, char trans, int m, int n, int incx, int incy, double complex alpha,
                    double complex beta) {
  const int cplx = tl_dtype_is_complex(dt), lda = m + 3;
  const long len_x = trans == 'N' ? n : m, len_y = trans == 'N' ? m : n;
  const long span_x = len_x * labs((long)incx), span_y = len_y * labs((long)incy);
  const size_t es = tl_dtype_size(dt);
  void *a = malloc(es * (size_t)lda * (size_t)(n > 0 ? n : 1));
  void *x = malloc(es * (size_t)(span_x > 0 ? span_x : 1));
  void *y = malloc(es * (size_t)(span_y > 0 ? span_y : 1));
  double complex *want = malloc(sizeof *want * (size_t)(len_y > 0 ? len_y : 1));
  const int alpha_zero = alpha == 0, beta_zero = beta == 0;
  /* What must not be read is NaN: A and x when alpha is 0, y when beta is 0, and the
   * padding rows of A always. */
  for (long j = 0; j < n; j++)
    for (long i = 0; i < lda; i++)
      put(dt, a, i + j * lda, i >= m || alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long i = 0; i < span_x; i++)
    put(dt, x, i, alpha_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long i = 0; i < span_y; i++) put(dt, y, i, -7.0); /* between the strides: stays */
  for (long i = 0; i < len_y; i++)
    put(dt, y, at(i, len_y, incy), beta_zero ? NAN : draw() + (cplx ? I * draw() : 0));
  double scale = 0;
  for (long r = 0; r < len_y; r++) {
    long double complex s = 0;
    if (!alpha_zero)
      for (long c = 0; c < len_x; c++) {
        long double complex av = trans == 'N' ? get(dt, a, r + c * lda) : get(dt, a, c + r * lda);
        if (trans == 'C') av = conjl(av);
        s += av * (long double complex)get(dt, x, at(c, len_x, incx));
      }
    long double complex yv =
        beta_zero ? 0 : beta * (long double complex)get(dt, y, at(r, len_y, incy));
    want[r] = (double complex)(yv + (alpha_zero ? 0 : alpha * s));
    if (cabs(want[r]) > scale) scale = cabs(want[r]);
  }
  call(dt, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
  const double tol =
      (dt == TL_F32 || dt == TL_C64 ? 2e-6 : 4e-15) * (double)(len_x + 4) * (scale > 1 ? scale : 1);
  int ok = 1;
  for (long r = 0; r < len_y && ok; r++) {
    double complex got = get(dt, y, at(r, len_y, incy));
    if (!(cabs(got - want[r]) <= tol)) {
      char buf[256];
      snprintf(buf, sizeof buf,
               "dtype %d trans %c m %d n %d incx %d incy %d alpha %g beta %g: y[%ld] = %g%+gi, "
               "want %g%+gi",
               (int)dt, trans, m, n, incx, incy, creal(alpha), creal(beta), r, creal(got),
               cimag(got), creal(want[r]), cimag(want[r]));
      th_test_fail_at(__FILE__, __LINE__, buf);
      ok = 0;
    }
  }
  /* Elements between y's strides untouched. */
  for (long i = 0; i < span_y && ok; i++)
    if (labs((long)incy) > 1 && i % labs((long)incy) != 0 && get(dt, y, i) != -7.0) {
      th_test_fail_at(__FILE__, __LINE__, "an element between y's strides was written");
      ok = 0;
    }
  free(a), free(x), free(y), free(want);
  return ok;
}

static void table(int dtype_first, int dtype_last) {
  const int sizes[][2] = {{1, 1},  {3, 2},  {7, 5},   {8, 4},  {9, 9},    {16, 3},  {17, 17},
                          {31, 8}, {33, 6}, {64, 64}, {5, 40}, {100, 37}, {1100, 6}};
  const int incs[][2] = {{1, 1}, {2, 1}, {1, 3}, {-1, 1}, {1, -2}, {3, -1}};
  const char transes[3] = {'N', 'T', 'C'};
  const double complex alphas[3] = {1.0, 0.0, -0.75 + 0.25 * I};
  const double complex betas[3] = {0.0, 1.0, 0.5 - 0.5 * I};
  for (int d = dtype_first; d <= dtype_last; d++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (int t = 0; t < 3; t++)
        for (size_t v = 0; v < sizeof incs / sizeof incs[0]; v++)
          for (int al = 0; al < 3; al++)
            for (int be = 0; be < 3; be++) {
              tl_dtype dt = dtypes[d];
              double complex alpha = alphas[al], beta = betas[be];
              if (!tl_dtype_is_complex(dt)) alpha = creal(alpha), beta = creal(beta);
              if (!one_case(dt, transes[t], sizes[s][0], sizes[s][1], incs[v][0], incs[v][1], alpha,
                            beta))
                return;
            }
}

static void gemv_matches_a_naive_product(void) { table(0, 3); }

static void gemv_through_blis_matches_too(void) {
  int saved = tl__blas_isa_cap;
  tl__blas_isa_cap = 0;
  table(1, 1);
  table(3, 3);
  tl__blas_isa_cap = saved;
}

/* m or n 0, or alpha 0 with beta 1: y untouched (even beta 0 does not write it then). Bad
 * arguments: xerbla_ gets the routine and the position, y is untouched. */
static void gemv_quick_returns_and_argument_errors(void) {
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    double a[64], x[16], y[16];
    for (int i = 0; i < 64; i++) a[i] = 1.0;
    for (int i = 0; i < 16; i++) x[i] = 1.0, y[i] = 3.0;
    char routine[16];
    int argument = 0;
    (void)tl__xerbla_take(routine, &argument);
    call(dt, 'N', 0, 3, 1.0, a, 1, x, 1, 0.0, y, 1);
    call(dt, 'T', 3, 0, 1.0, a, 3, x, 1, 0.0, y, 1);
    call(dt, 'N', 3, 3, 0.0, a, 3, x, 1, 1.0, y, 1);
    for (int i = 0; i < 16; i++) TH_CHECK(y[i] == 3.0);
    TH_CHECK(tl__xerbla_take(routine, &argument) == 0);
    const struct {
      char trans;
      int m, n, lda, incx, incy, position;
    } bad[] = {{'X', 2, 2, 2, 1, 1, 1}, {'N', -1, 2, 2, 1, 1, 2}, {'T', 2, -1, 2, 1, 1, 3},
               {'N', 4, 2, 3, 1, 1, 6}, {'N', 2, 2, 2, 0, 1, 8},  {'C', 2, 2, 2, 1, 0, 11}};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      call(dt, bad[b].trans, bad[b].m, bad[b].n, 1.0, a, bad[b].lda, x, bad[b].incx, 0.0, y,
           bad[b].incy);
      TH_CHECK(tl__xerbla_take(routine, &argument) == 1);
      TH_CHECK(argument == bad[b].position);
      TH_CHECK(strstr(routine, "GEMV") != NULL);
      for (int i = 0; i < 16; i++) TH_CHECK(y[i] == 3.0);
    }
  }
}

TH_TEST_MAIN(TH_CASE(gemv_matches_a_naive_product), TH_CASE(gemv_through_blis_matches_too),
             TH_CASE(gemv_quick_returns_and_argument_errors))
