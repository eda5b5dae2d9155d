/* tests/linalg/test_nrm2.c: the provider's BLAS norms, which the LAPACK tenlane links calls
 * (tenlane has no nrm2 of its own since 2026-12-05), against a long double reference: lengths
 * of 0 to 1000, increments 1, 2 and 3, magnitudes whose squares overflow or underflow a
 * double, subnormals, and non-finite elements; and a LAPACK reflector built on them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "linalg/linalg_int.h"
#include "th_test.h"

float snrm2_(const int *n, const float *x, const int *incx);
double dnrm2_(const int *n, const double *x, const int *incx);
float scnrm2_(const int *n, const float *x, const int *incx);
double dznrm2_(const int *n, const double *x, const int *incx);
void dlarfg_(const int *n, double *alpha, double *x, const int *incx, double *tau);

/* sqrt of the sum of squares of n groups of `width` values, |inc| * width apart (inc 0: n
 * copies of the first group), in long double with a power-of-two scale. */
static long double reference(int n, const double *x, int inc, int width) {
  if (n < 1) return 0;
  long step = inc < 0 ? -(long)inc : inc;
  long count = inc == 0 ? 1 : n;
  long double largest = 0;
  for (long g = 0; g < count; g++)
    for (int w = 0; w < width; w++) {
      long double a = fabsl((long double)x[g * step * width + w]);
      if (a > largest) largest = a;
    }
  if (largest == 0) return 0;
  long double sum = 0;
  for (long g = 0; g < count; g++)
    for (int w = 0; w < width; w++) {
      long double a = (long double)x[g * step * width + w] / largest;
      sum += a * a;
    }
  if (inc == 0) sum *= n;
  return sqrtl(sum) * largest;
}

static void check_close(const char *what, int n, int inc, double scale, long double want,
                        long double got, double tol) {
  long double err = fabsl(got - want);
  if (err > tol * fabsl(want) || (want == 0 && got != 0)) {
    char buf[200];
    snprintf(buf, sizeof buf, "%s n=%d inc=%d scale=%g: got %.17Lg want %.17Lg", what, n, inc,
             scale, got, want);
    th_test_fail_at(__FILE__, __LINE__, buf);
  }
}

static void nrm2_matches_a_scaled_reference(void) {
  const int lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 1000};
  /* Positive increments only, the ones LAPACK and tenlane pass: providers differ on the
   * others (OpenBLAS 0.3.21 returns 0 for any increment below 1). */
  const int incs[] = {1, 2, 3};
  /* 1e-160: every square underflows; 1e160: every square overflows; 1e-310: subnormal. */
  const double scales[] = {1.0, 1e-160, 1e160, 1e-310, 3e300};
  unsigned seed = 7u;
  size_t cap = 2 * 1000 * 3 + 8;
  double *x = malloc(cap * sizeof *x);
  float *xf = malloc(cap * sizeof *xf);
  TH_CHECK(x != NULL && xf != NULL);
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
    for (size_t ii = 0; ii < sizeof incs / sizeof incs[0]; ii++)
      for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        int n = lengths[li], inc = incs[ii];
        for (size_t i = 0; i < cap; i++) {
          seed = seed * 1103515245u + 12345u;
          x[i] = scales[si] * (((double)(seed >> 8) / 16777216.0) - 0.5);
          xf[i] = (float)(((double)(seed >> 8) / 16777216.0) - 0.5);
        }
        /* Subnormal inputs keep only a few digits: compare against what they hold. */
        double tol = scales[si] < 1e-300 ? 1e-12 : 4e-15 * (1 + sqrt((double)n));
        check_close("dnrm2_", n, inc, scales[si], reference(n, x, inc, 1), dnrm2_(&n, x, &inc),
                    tol);
        check_close("dznrm2_", n, inc, scales[si], reference(n, x, inc, 2), dznrm2_(&n, x, &inc),
                    tol);
        if (si == 0) {
          double *xd = malloc(cap * sizeof *xd);
          TH_CHECK(xd != NULL);
          for (size_t i = 0; i < cap; i++) xd[i] = xf[i];
          /* A provider may sum single precision in single precision: a few ulps per term. */
          double tolf = 2e-7 * (1 + sqrt((double)n));
          check_close("snrm2_", n, inc, 1.0, reference(n, xd, inc, 1), snrm2_(&n, xf, &inc), tolf);
          check_close("scnrm2_", n, inc, 1.0, reference(n, xd, inc, 2), scnrm2_(&n, xf, &inc),
                      tolf);
          free(xd);
        }
      }
  free(x);
  free(xf);
}

static void nrm2_propagates_inf_and_nan(void) {
  double x[40];
  int n = 40, one = 1;
  for (int at = 0; at < 40; at += 13) {
    for (int i = 0; i < 40; i++) x[i] = 1e-200 * (i + 1);
    x[at] = INFINITY;
    TH_CHECK(isinf(dnrm2_(&n, x, &one)) && dnrm2_(&n, x, &one) > 0);
    x[at] = -INFINITY;
    TH_CHECK(isinf(dnrm2_(&n, x, &one)) && dnrm2_(&n, x, &one) > 0);
    x[at] = NAN;
    TH_CHECK(isnan(dnrm2_(&n, x, &one)));
    int half = 20;
    TH_CHECK(isnan(dznrm2_(&half, x, &one)));
  }
  /* Huge finite values: the plain sum overflows, the norm does not. */
  for (int i = 0; i < 40; i++) x[i] = DBL_MAX / 8;
  double got = dnrm2_(&n, x, &one);
  TH_CHECK(isfinite(got) && fabs(got - sqrt(40.0) * (DBL_MAX / 8)) <= 1e-14 * got);
}

/* dlarfg_ (the LAPACK libtenlane links) takes its norm from the provider's dnrm2_: a vector of
 * 1e200s must give beta = -sqrt(n) 1e200, with no overflow. */
static void lapack_reflector_of_huge_entries_is_exact(void) {
  double x[9];
  for (int i = 0; i < 9; i++) x[i] = 1e200;
  double alpha = 1e200, tau = 0;
  int n = 10, one = 1;
  dlarfg_(&n, &alpha, x, &one, &tau);
  TH_CHECK(isfinite(alpha) && fabs(alpha + sqrt(10.0) * 1e200) <= 1e-14 * 1e200 * sqrt(10.0));
}

TH_TEST_MAIN(TH_CASE(nrm2_matches_a_scaled_reference), TH_CASE(nrm2_propagates_inf_and_nan),
             TH_CASE(lapack_reflector_of_huge_entries_is_exact))
