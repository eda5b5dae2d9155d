/* src/linalg/lange.c: the general-matrix norms LAPACK's drivers ask for (dlange_, zlange_),
 * defined by tenlane in place of the reference LAPACK's.
 *
 * Why: every SVD driver starts with the largest absolute entry, ?lange('M'), to decide
 * whether to scale the matrix. The reference loop takes each entry's absolute value through
 * cabs (hypot in glibc, about 20 ns) for complex and calls disnan, a function, for every
 * entry: perf put zlange at 6.5% of zgesdd at n = 256 on Zen 4 (OpenBLAS's LAPACK 1.3%),
 * and dlange with its disnan calls at 3-4% of dgesdd at n = 64.
 *
 * How: 'M' takes one pass over the entries (and for complex over the real and imaginary
 * parts) that the compiler vectorises, keeping the largest magnitude and whether a NaN was
 * seen. For complex the largest |z| is then the square root of the largest re^2 + im^2,
 * which is safe from overflow and underflow while the largest part lies in [2^-500, 2^500];
 * outside that range (and for the other norms) the loops are the reference ones, with cabs.
 * The 1-norm ('1', 'O'), the infinity norm ('I', in WORK) and the Frobenius norm ('F', 'E',
 * through the reference ?lassq per column, as LAPACK 3.11 does) follow the reference loops.
 *
 * Contract: LAPACK 3.11's. min(m, n) 0 gives 0; a NaN anywhere gives a NaN ('M', '1', 'I':
 * as the reference's disnan checks do); an infinite entry gives infinity. 'M' in f64 gives
 * the reference's bits; in c128 within an ulp or so of them (a square root of a sum of
 * squares in place of hypot). An unknown NORM gives 0 (the reference leaves it unset).
 *
 * Linking: as gemv.c's (with BLIS the Fortran names; with a Fortran BLAS provider, whose LAPACK
 * keeps its own dlange_ and zlange_, tl__own_dlange_ and tl__own_zlange_, TL__BLAS_ENTRY,
 * which the tests call); tl__lange_linked is called by tl__la_begin so that a static link
 * takes this object in before LAPACK's archive is searched (LAPACK's dlange.o and zlange.o
 * define one routine each).
 *
 * Switched off (TL__BLAS_OWN_LANGE in tl__blas_off, bench_providers' earn-its-place row), 'M'
 * runs the reference LAPACK's loop (below, reference_max) in place of the one pass, which is
 * what a build without this file runs. Pure, no allocation, thread-safe. */
#include <complex.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "linalg_int.h"

int tl__lange_linked(void) { return 1; }

void dlassq_(const int *n, const double *x, const int *incx, double *scale, double *sumsq);
int disnan_(const double *din); /* LAPACK's LOGICAL DISNAN */
void zlassq_(const int *n, const double complex *x, const int *incx, double *scale, double *sumsq);

/* The reference's update: a NaN, once seen, stays. */
static double keep_larger(double value, double candidate) {
  return value < candidate || isnan(candidate) ? candidate : value;
}

/* The largest |x| over `count` contiguous doubles; *nan set to 1 when one is NaN. Eight
 * running maxima, so that the comparisons do not wait on each other. */
static double largest_magnitude(const double *x, int64_t count, int *nan) {
  double hi[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int seen = 0;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int q = 0; q < 8; q++) {
      const double v = fabs(x[i + q]);
      seen |= v != v;
      hi[q] = v > hi[q] ? v : hi[q];
    }
  for (; i < count; i++) {
    const double v = fabs(x[i]);
    seen |= v != v;
    hi[0] = v > hi[0] ? v : hi[0];
  }
  *nan |= seen;
  double top = 0.0;
  for (int q = 0; q < 8; q++) top = hi[q] > top ? hi[q] : top;
  return top;
}

/* The largest re^2 + im^2 over `count` complex numbers (interleaved), four running maxima. */
static double largest_square(const double *x, int64_t count) {
  double hi[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= count; i += 4)
    for (int q = 0; q < 4; q++) {
      const double *z = x + 2 * (i + q);
      const double s = z[0] * z[0] + z[1] * z[1];
      hi[q] = s > hi[q] ? s : hi[q];
    }
  for (; i < count; i++) {
    const double s = x[2 * i] * x[2 * i] + x[2 * i + 1] * x[2 * i + 1];
    hi[0] = s > hi[0] ? s : hi[0];
  }
  double top = 0.0;
  for (int q = 0; q < 4; q++) top = hi[q] > top ? hi[q] : top;
  return top;
}

/* The norms other than 'M' as the reference loops compute them, for element type T with ABS
 * its absolute value and LASSQ the reference's scaled sum of squares; 0 for an unknown norm.
 * rows, cols > 0. */
#define TL__LANGE_OTHERS(NAME, T, ABS, LASSQ)                                          \
  static double NAME(char c, const int *m, int rows, int cols, const T *a, int64_t ld, \
                     double *work) {                                                   \
    double value = 0.0;                                                                \
    if (c == 'O' || c == '1') {                                                        \
      for (int j = 0; j < cols; j++) {                                                 \
        double sum = 0.0;                                                              \
        for (int i = 0; i < rows; i++) sum += ABS(a[i + j * ld]);                      \
        value = keep_larger(value, sum);                                               \
      }                                                                                \
    } else if (c == 'I') {                                                             \
      for (int i = 0; i < rows; i++) work[i] = 0.0;                                    \
      for (int j = 0; j < cols; j++)                                                   \
        for (int i = 0; i < rows; i++) work[i] += ABS(a[i + j * ld]);                  \
      for (int i = 0; i < rows; i++) value = keep_larger(value, work[i]);              \
    } else if (c == 'F' || c == 'E') {                                                 \
      double scale = 0.0, sum = 1.0;                                                   \
      const int one = 1;                                                               \
      for (int j = 0; j < cols; j++) LASSQ(m, a + j * ld, &one, &scale, &sum);         \
      value = scale * sqrt(sum);                                                       \
    }                                                                                  \
    return value;                                                                      \
  }
TL__LANGE_OTHERS(others_d, double, fabs, dlassq_)
TL__LANGE_OTHERS(others_z, double complex, cabs, zlassq_)

/* 'M' as the reference LAPACK computes it: column by column, each entry's absolute value (cabs
 * for complex), taken when larger than the running value or when LAPACK's disnan (an external
 * function, called for each entry that is not larger) says it is a NaN. The switched-off
 * path: the cost a build without this file pays. rows, cols > 0. */
#define TL__LANGE_REFERENCE_MAX(NAME, T, ABS)                      \
  static double NAME(int rows, int cols, const T *a, int64_t ld) { \
    double value = 0.0;                                            \
    for (int j = 0; j < cols; j++)                                 \
      for (int i = 0; i < rows; i++) {                             \
        const double v = ABS(a[i + j * ld]);                       \
        if (value < v || disnan_(&v)) value = v;                   \
      }                                                            \
    return value;                                                  \
  }
TL__LANGE_REFERENCE_MAX(reference_max_d, double, fabs)
TL__LANGE_REFERENCE_MAX(reference_max_z, double complex, cabs)

static int own_lange(void) { return !(tl__blas_off & TL__BLAS_OWN_LANGE); }

double TL__BLAS_ENTRY(dlange_)(const char *norm, const int *m, const int *n, const double *a,
                               const int *lda, double *work, size_t norm_length);
double TL__BLAS_ENTRY(dlange_)(const char *norm, const int *m, const int *n, const double *a,
                               const int *lda, double *work, size_t norm_length) {
  (void)norm_length;
  const int rows = *m, cols = *n;
  const int64_t ld = *lda;
  if (rows <= 0 || cols <= 0) return 0.0;
  const char c = tl__blas_letter(norm);
  if (c != 'M') return others_d(c, m, rows, cols, a, ld, work);
  if (!own_lange()) return reference_max_d(rows, cols, a, ld);
  int nan = 0;
  double value = 0.0;
  for (int j = 0; j < cols; j++) {
    const double hi = largest_magnitude(a + j * ld, rows, &nan);
    value = hi > value ? hi : value;
  }
  return nan ? NAN : value;
}

double TL__BLAS_ENTRY(zlange_)(const char *norm, const int *m, const int *n,
                               const double complex *a, const int *lda, double *work,
                               size_t norm_length);
double TL__BLAS_ENTRY(zlange_)(const char *norm, const int *m, const int *n,
                               const double complex *a, const int *lda, double *work,
                               size_t norm_length) {
  (void)norm_length;
  const int rows = *m, cols = *n;
  const int64_t ld = *lda;
  if (rows <= 0 || cols <= 0) return 0.0;
  const char c = tl__blas_letter(norm);
  if (c != 'M') return others_z(c, m, rows, cols, a, ld, work);
  if (!own_lange()) return reference_max_z(rows, cols, a, ld);
  int nan = 0;
  double part = 0.0;
  for (int j = 0; j < cols; j++) {
    const double hi = largest_magnitude((const double *)(a + j * ld), 2 * (int64_t)rows, &nan);
    part = hi > part ? hi : part;
  }
  if (nan) return NAN;
  if (part == 0.0 || isinf(part)) return part;
  if (part >= 0x1p-500 && part <= 0x1p500) {
    double square = 0.0;
    for (int j = 0; j < cols; j++) {
      const double s = largest_square((const double *)(a + j * ld), rows);
      square = s > square ? s : square;
    }
    return sqrt(square);
  }
  double value = 0.0; /* parts past 2^500 or below 2^-500: the reference loop */
  for (int j = 0; j < cols; j++)
    for (int i = 0; i < rows; i++) value = keep_larger(value, cabs(a[i + j * ld]));
  return value;
}
