/* src/linalg/nrm2.c: the Euclidean norms LAPACK asks the BLAS for (snrm2_, dnrm2_, scnrm2_,
 * dznrm2_), defined by tenlane in place of BLIS's.
 *
 * Why: every Householder reflector LAPACK makes (dlarfg, zlarfg: one per column in QR, two
 * per column in the bidiagonal reduction of an SVD) starts with a norm, and BLIS 0.9 answers
 * nrm2 with a scaled sum of squares that updates a scale and a sum for each element, in
 * scalar code, after its per-call set-up. perf of tl_svd on f64 n = 256 here put 5% of the
 * whole factorization in bli_dsumsqv_unb_var1.
 *
 * How: one pass of plain squares into four vector accumulators. That sum is exact to a few
 * rounding errors unless it overflows or every element is so small that squares lose
 * precision; in those two cases (the sum is infinite, or below 2^-900) a second pass scales
 * the elements by a power of two taken from the largest magnitude, which is exact, and sums
 * again. An infinite element gives +inf, a NaN gives NaN (the routes refuse non-finite input
 * before LAPACK anyway). Single precision sums in double, where neither can happen.
 *
 * Linking: with BLIS (TL_BLAS_OWN_ENTRIES), LAPACK is linked into libtenlane from its archive
 * and its nrm2 calls bind to these definitions, which BLIS's archive member (it defines the
 * four and nothing else) then never joins. With a Fortran BLAS provider (reference, OpenBLAS:
 * they have nrm2 of their own) the entries are tl__own_snrm2_, ... (TL__BLAS_ENTRY,
 * linalg_int.h): LAPACK calls the provider's, tenlane's truncated pivoted QR (lapack.c) and
 * the tests call these. They are hidden like every internal symbol, so another BLAS in the same
 * process is not affected. tl__nrm2_linked is referenced by the LAPACK wrappers so that a program
 * linking the static libtenlane.a pulls this file in before LAPACK's archive is searched.
 *
 * Switched off (TL__BLAS_OWN_NRM2 in tl__blas_off, bench_providers' earn-its-place row), the
 * entries hand every call to the provider's nrm2 (tl__prov_nrm2), as the provider's own
 * entries would have computed it.
 *
 * Fortran interface (gfortran): arguments by reference, a REAL function returns a float.
 * Pure, no allocation, thread-safe. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "linalg_int.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

float TL__BLAS_ENTRY(snrm2_)(const int *n, const float *x, const int *incx);
double TL__BLAS_ENTRY(dnrm2_)(const int *n, const double *x, const int *incx);
float TL__BLAS_ENTRY(scnrm2_)(const int *n, const float *x, const int *incx);
double TL__BLAS_ENTRY(dznrm2_)(const int *n, const double *x, const int *incx);

/* Below this the plain sum of squares may have lost digits to underflow: recompute scaled. */
#define SMALL_SUM 0x1p-900

int tl__nrm2_linked(void) { return 1; }

#if TL_X86_KERNELS
/* Sum of squares of `count` doubles, unit stride, in four 4-wide accumulators. */
__attribute__((target("avx2,fma"))) static double squares_avx2(int64_t count, const double *x) {
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256d a = _mm256_loadu_pd(x + i), b = _mm256_loadu_pd(x + i + 4);
    __m256d c = _mm256_loadu_pd(x + i + 8), d = _mm256_loadu_pd(x + i + 12);
    s0 = _mm256_fmadd_pd(a, a, s0);
    s1 = _mm256_fmadd_pd(b, b, s1);
    s2 = _mm256_fmadd_pd(c, c, s2);
    s3 = _mm256_fmadd_pd(d, d, s3);
  }
  for (; i + 4 <= count; i += 4) {
    __m256d a = _mm256_loadu_pd(x + i);
    s0 = _mm256_fmadd_pd(a, a, s0);
  }
  __m256d s = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
  double lane[4];
  _mm256_storeu_pd(lane, s);
  double sum = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; i < count; i++) sum += x[i] * x[i];
  return sum;
}
#endif

/* Sum of squares of `groups` runs of `width` contiguous doubles, `stride` doubles apart, each
 * scaled by `scale` first (1 for the plain pass). */
static double squares(int64_t groups, int width, const double *x, int64_t stride, double scale) {
#if TL_X86_KERNELS
  if (scale == 1.0 && stride == width && tl__isa_level() >= TL__ISA_AVX2)
    return squares_avx2(groups * width, x);
#endif
  double s0 = 0, s1 = 0;
  for (int64_t g = 0; g < groups; g++) {
    const double *p = x + g * stride;
    double a = p[0] * scale;
    s0 += a * a;
    if (width == 2) {
      double b = p[1] * scale;
      s1 += b * b;
    }
  }
  return s0 + s1;
}

/* The norm of the doubles described as in squares(), with the scaled second pass. */
static double norm(int64_t groups, int width, const double *x, int64_t stride) {
  double sum = squares(groups, width, x, stride, 1.0);
  if (isnan(sum)) return sum;
  if (isfinite(sum) && sum >= SMALL_SUM) return sqrt(sum);
  double largest = 0;
  for (int64_t g = 0; g < groups; g++)
    for (int w = 0; w < width; w++) {
      double a = fabs(x[g * stride + w]);
      if (isnan(a)) return a;
      if (a > largest) largest = a;
    }
  if (largest == 0.0 || isinf(largest)) return largest;
  /* A power of two near 1 / largest: scaling by it is exact. */
  int exponent;
  (void)frexp(largest, &exponent);
  double scale = ldexp(1.0, -exponent);
  return sqrt(squares(groups, width, x, stride, scale)) / scale;
}

/* Fortran's increment: the elements are x[0], x[|inc|], ... whatever inc's sign; inc 0 means
 * n copies of x[0]. */
static double norm_fortran(int n, const double *x, int inc, int width) {
  if (n < 1) return 0.0;
  if (inc == 0) return sqrt((double)n) * norm(1, width, x, width);
  int64_t step = inc < 0 ? -(int64_t)inc : inc;
  return norm(n, width, x, step * width);
}

/* The provider's nrm2 on a Fortran vector: x from its first element as the provider takes
 * it (the last in memory for a negative increment); 0 for n < 1, as BLAS's nrm2 gives. */
static double provider_norm(tl_dtype dtype, int n, const void *x, int inc) {
  if (n < 1) return 0.0;
  const int64_t step = (int64_t)tl_dtype_size(dtype);
  const char *first = (const char *)x + (inc < 0 ? (int64_t)(n - 1) * -(int64_t)inc * step : 0);
  return tl__prov_nrm2(dtype, n, first, inc);
}

static int own_nrm2(void) { return !(tl__blas_off & TL__BLAS_OWN_NRM2); }

double TL__BLAS_ENTRY(dnrm2_)(const int *n, const double *x, const int *incx) {
  if (!own_nrm2()) return provider_norm(TL_F64, *n, x, *incx);
  return norm_fortran(*n, x, *incx, 1);
}

double TL__BLAS_ENTRY(dznrm2_)(const int *n, const double *x, const int *incx) {
  if (!own_nrm2()) return provider_norm(TL_C128, *n, x, *incx);
  return norm_fortran(*n, x, *incx, 2);
}

/* Single precision: squares of floats cannot overflow or underflow a double. */
static float norm_float(int n, const float *x, int inc, int width) {
  if (n < 1) return 0.0f;
  int64_t step = inc < 0 ? -(int64_t)inc : inc;
  int64_t count = inc == 0 ? 1 : n;
  double s0 = 0, s1 = 0;
  for (int64_t g = 0; g < count; g++) {
    const float *p = x + g * step * width;
    s0 += (double)p[0] * p[0];
    if (width == 2) s1 += (double)p[1] * p[1];
  }
  double sum = s0 + s1;
  if (inc == 0) sum *= n;
  return (float)sqrt(sum);
}

float TL__BLAS_ENTRY(snrm2_)(const int *n, const float *x, const int *incx) {
  if (!own_nrm2()) return (float)provider_norm(TL_F32, *n, x, *incx);
  return norm_float(*n, x, *incx, 1);
}

float TL__BLAS_ENTRY(scnrm2_)(const int *n, const float *x, const int *incx) {
  if (!own_nrm2()) return (float)provider_norm(TL_C64, *n, x, *incx);
  return norm_float(*n, x, *incx, 2);
}
