/* tests/linalg/test_ger.c: the BLAS rank-1 updates tenlane defines for the LAPACK it links
 * (src/linalg/ger.c), in every dtype (and gerc and geru for complex), against a naive long
 * double update: shapes that reach the four-column groups, single columns and the masked
 * rows; increments 1, 2, -1, -3 (x past the 512-row chunk when strided); alpha 1 and
 * another; y elements of 0 whose columns must stay as they are even with NaN in x; A's
 * padding rows (NaN) never written; the reference BLAS's quick returns and argument errors
 * (xerbla_ with the position). f64 and c128 run on tenlane's AVX-512 kernels where the CPU has
 * them and on BLIS's (tl__blas_isa_cap 0). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_int.h"
#include "th_numeric.h"
#include "th_test.h"

/* tenlane's entries, under the name this provider gives them (linalg_int.h). */
#define sger_ TL__BLAS_ENTRY(sger_)
#define dger_ TL__BLAS_ENTRY(dger_)
#define cgeru_ TL__BLAS_ENTRY(cgeru_)
#define cgerc_ TL__BLAS_ENTRY(cgerc_)
#define zgeru_ TL__BLAS_ENTRY(zgeru_)
#define zgerc_ TL__BLAS_ENTRY(zgerc_)

void sger_(const int *m, const int *n, const float *alpha, const float *x, const int *incx,
           const float *y, const int *incy, float *a, const int *lda);
void dger_(const int *m, const int *n, const double *alpha, const double *x, const int *incx,
           const double *y, const int *incy, double *a, const int *lda);
void cgeru_(const int *m, const int *n, const float complex *alpha, const float complex *x,
            const int *incx, const float complex *y, const int *incy, float complex *a,
            const int *lda);
void cgerc_(const int *m, const int *n, const float complex *alpha, const float complex *x,
            const int *incx, const float complex *y, const int *incy, float complex *a,
            const int *lda);
void zgeru_(const int *m, const int *n, const double complex *alpha, const double complex *x,
            const int *incx, const double complex *y, const int *incy, double complex *a,
            const int *lda);
void zgerc_(const int *m, const int *n, const double complex *alpha, const double complex *x,
            const int *incx, const double complex *y, const int *incy, double complex *a,
            const int *lda);

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

static double complex get(tl_dtype dt, const void *p, long i) { return th_num_load(dt, p, i); }
static void put(tl_dtype dt, void *p, long i, double complex v) { th_num_store(dt, p, i, v); }

/* One call; conj picks gerc for complex types (ignored for real ones). */
static void call(tl_dtype dt, int conj_y, int m, int n, double complex alpha, const void *x,
                 int incx, const void *y, int incy, void *a, int lda) {
  switch (dt) {
    case TL_F32: {
      float al = (float)creal(alpha);
      sger_(&m, &n, &al, x, &incx, y, &incy, a, &lda);
      break;
    }
    case TL_F64: {
      double al = creal(alpha);
      dger_(&m, &n, &al, x, &incx, y, &incy, a, &lda);
      break;
    }
    case TL_C64: {
      float complex al = (float complex)alpha;
      (conj_y ? cgerc_ : cgeru_)(&m, &n, &al, x, &incx, y, &incy, a, &lda);
      break;
    }
    default:
      (conj_y ? zgerc_ : zgeru_)(&m, &n, &alpha, x, &incx, y, &incy, a, &lda);
      break;
  }
}

static long at(long i, long len, int inc) { return inc > 0 ? i * inc : (len - 1 - i) * (long)-inc; }

static unsigned seed = 3u;
static double draw(void) {
  seed = seed * 1664525u + 1013904223u;
  return (double)(seed >> 8) / 16777216.0 - 0.5;
}

/* One case against the naive update; returns 0 after reporting a mismatch. Every fifth y
 * element is 0, and x's element at row m/2 is NaN when poison is set: only the columns with
 * a zero y element must then stay finite (and unchanged). */
static int one_case(tl_dtype dt, int conj_y, int m, int n, int incx, int incy, double complex alpha,
                    int poison) {
  const int cplx = tl_dtype_is_complex(dt), lda = m + 2;
  const size_t es = tl_dtype_size(dt);
  const long span_x = (long)m * labs((long)incx), span_y = (long)n * labs((long)incy);
  void *a = malloc(es * (size_t)lda * (size_t)(n > 0 ? n : 1));
  void *x = malloc(es * (size_t)(span_x > 0 ? span_x : 1));
  void *y = malloc(es * (size_t)(span_y > 0 ? span_y : 1));
  double complex *want = malloc(sizeof *want * (size_t)(m > 0 ? m : 1) * (size_t)(n > 0 ? n : 1));
  for (long j = 0; j < n; j++)
    for (long i = 0; i < lda; i++)
      put(dt, a, i + j * lda, i >= m ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long i = 0; i < span_x; i++) put(dt, x, i, NAN); /* between strides: never read */
  for (long i = 0; i < m; i++)
    put(dt, x, at(i, m, incx), poison && i == m / 2 ? NAN : draw() + (cplx ? I * draw() : 0));
  for (long i = 0; i < span_y; i++) put(dt, y, i, NAN);
  for (long j = 0; j < n; j++)
    put(dt, y, at(j, n, incy), j % 5 == 2 ? 0 : draw() + (cplx ? I * draw() : 0));
  for (long j = 0; j < n; j++) {
    long double complex yj = get(dt, y, at(j, n, incy));
    if (conj_y) yj = conjl(yj);
    for (long i = 0; i < m; i++) {
      long double complex v = get(dt, a, i + j * lda);
      if (yj != 0)
        v += (long double complex)alpha * (long double complex)get(dt, x, at(i, m, incx)) * yj;
      want[i + j * m] = (double complex)v;
    }
  }
  call(dt, conj_y, m, n, alpha, x, incx, y, incy, a, lda);
  const double tol = dt == TL_F32 || dt == TL_C64 ? 4e-6 : 8e-15;
  int ok = 1;
  for (long j = 0; j < n && ok; j++)
    for (long i = 0; i < lda && ok; i++) {
      double complex got = get(dt, a, i + j * lda);
      if (i >= m) {
        if (!isnan(creal(got))) {
          th_test_fail_at(__FILE__, __LINE__, "a padding row of A was written");
          ok = 0;
        }
        continue;
      }
      double complex w = want[i + j * m];
      int same = isnan(creal(w)) || isnan(cimag(w)) ? isnan(creal(got)) || isnan(cimag(got))
                                                    : cabs(got - w) <= tol;
      if (!same) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "dtype %d conj %d m %d n %d incx %d incy %d poison %d: A[%ld, %ld] = %g%+gi, "
                 "want %g%+gi",
                 (int)dt, conj_y, m, n, incx, incy, poison, i, j, creal(got), cimag(got), creal(w),
                 cimag(w));
        th_test_fail_at(__FILE__, __LINE__, buf);
        ok = 0;
      }
    }
  free(a), free(x), free(y), free(want);
  return ok;
}

static void table(int dtype_first, int dtype_last) {
  const int sizes[][2] = {{1, 1},   {3, 2},   {7, 4},   {8, 5},  {9, 9},
                          {17, 13}, {33, 32}, {100, 7}, {600, 6}};
  const int incs[][2] = {{1, 1}, {2, 1}, {1, 3}, {-1, 1}, {1, -2}, {-3, -1}};
  const double complex alphas[2] = {1.0, -0.75 + 0.25 * I};
  for (int d = dtype_first; d <= dtype_last; d++)
    for (int conj_y = 0; conj_y < (tl_dtype_is_complex(dtypes[d]) ? 2 : 1); conj_y++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t v = 0; v < sizeof incs / sizeof incs[0]; v++)
          for (int al = 0; al < 2; al++)
            for (int poison = 0; poison < 2; poison++) {
              tl_dtype dt = dtypes[d];
              double complex alpha = tl_dtype_is_complex(dt) ? alphas[al] : creal(alphas[al]);
              if (!one_case(dt, conj_y, sizes[s][0], sizes[s][1], incs[v][0], incs[v][1], alpha,
                            poison))
                return;
            }
}

static void ger_matches_a_naive_update(void) { table(0, 3); }

static void ger_through_blis_matches_too(void) {
  int saved = tl__blas_isa_cap;
  tl__blas_isa_cap = 0;
  table(1, 1);
  table(3, 3);
  tl__blas_isa_cap = saved;
}

/* m or n 0, or alpha 0: A untouched. Bad arguments: xerbla_ gets the routine and the
 * position, A is untouched. */
static void ger_quick_returns_and_argument_errors(void) {
  for (int d = 0; d < 4; d++) {
    tl_dtype dt = dtypes[d];
    double a[64], x[16], y[16];
    for (int i = 0; i < 64; i++) a[i] = 3.0;
    for (int i = 0; i < 16; i++) x[i] = y[i] = 1.0;
    char routine[16];
    int argument = 0;
    (void)tl__xerbla_take(routine, &argument);
    call(dt, 1, 0, 3, 1.0, x, 1, y, 1, a, 1);
    call(dt, 0, 3, 0, 1.0, x, 1, y, 1, a, 3);
    call(dt, 1, 3, 3, 0.0, x, 1, y, 1, a, 3);
    for (int i = 0; i < 64; i++) TH_CHECK(a[i] == 3.0);
    TH_CHECK(tl__xerbla_take(routine, &argument) == 0);
    const struct {
      int m, n, incx, incy, lda, position;
    } bad[] = {{-1, 2, 1, 1, 2, 1},
               {2, -1, 1, 1, 2, 2},
               {2, 2, 0, 1, 2, 5},
               {2, 2, 1, 0, 2, 7},
               {4, 2, 1, 1, 3, 9}};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      call(dt, 1, bad[b].m, bad[b].n, 1.0, x, bad[b].incx, y, bad[b].incy, a, bad[b].lda);
      TH_CHECK(tl__xerbla_take(routine, &argument) == 1);
      TH_CHECK(argument == bad[b].position);
      TH_CHECK(strstr(routine, "GER") != NULL);
      for (int i = 0; i < 64; i++) TH_CHECK(a[i] == 3.0);
    }
  }
}

TH_TEST_MAIN(TH_CASE(ger_matches_a_naive_update), TH_CASE(ger_through_blis_matches_too),
             TH_CASE(ger_quick_returns_and_argument_errors))
