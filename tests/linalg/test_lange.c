/* tests/linalg/test_lange.c: the matrix norms tenlane defines for the LAPACK it links
 * (src/linalg/lange.c: dlange_, zlange_) against naive long double ones: every norm ('M',
 * '1', 'O', 'I', 'F', 'E', either case) on shapes with tails of the unrolled loops, padded
 * leading dimensions whose padding is NaN (never read), entries scaled to 2^-600 and 2^600
 * (the complex max-abs norm's fallback) and to 1; a NaN anywhere giving a NaN, an infinity an
 * infinity; min(m, n) 0 giving 0; an unknown norm giving 0. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "linalg/linalg_int.h"
#include "th_test.h"

/* tenlane's norms, under the name this provider gives them (linalg_int.h). */
#define dlange_ TL__BLAS_ENTRY(dlange_)
#define zlange_ TL__BLAS_ENTRY(zlange_)

double dlange_(const char *norm, const int *m, const int *n, const double *a, const int *lda,
               double *work, size_t norm_length);
double zlange_(const char *norm, const int *m, const int *n, const double complex *a,
               const int *lda, double *work, size_t norm_length);

static unsigned seed = 5u;
static double draw(void) {
  seed = seed * 1664525u + 1013904223u;
  return (double)(seed >> 8) / 16777216.0 - 0.5;
}

/* The norm of the m x n matrix (complex when cplx) held in a with leading dimension ld,
 * in long double. */
static long double naive(char norm, int cplx, int m, int n, const double *a, int ld) {
  long double value = 0, total = 0;
  long double rows[300] = {0};
  for (int j = 0; j < n; j++) {
    long double column = 0;
    for (int i = 0; i < m; i++) {
      const long double re = cplx ? a[2 * (i + j * ld)] : a[i + j * ld];
      const long double im = cplx ? a[2 * (i + j * ld) + 1] : 0;
      const long double magnitude = sqrtl(re * re + im * im);
      if (magnitude > value && (norm == 'M')) value = magnitude;
      column += magnitude;
      rows[i] += magnitude;
      total += re * re + im * im;
    }
    if ((norm == '1' || norm == 'O') && column > value) value = column;
  }
  if (norm == 'I')
    for (int i = 0; i < m; i++)
      if (rows[i] > value) value = rows[i];
  if (norm == 'F' || norm == 'E') value = sqrtl(total);
  return value;
}

static double call(char norm, int cplx, int m, int n, const double *a, int ld, double *work) {
  return cplx ? zlange_(&norm, &m, &n, (const double complex *)a, &ld, work, 1)
              : dlange_(&norm, &m, &n, a, &ld, work, 1);
}

static void lange_matches_a_naive_norm(void) {
  static const int shapes[][2] = {{1, 1}, {7, 3}, {8, 8}, {13, 5}, {33, 17}, {200, 40}};
  static const double scales[3] = {1.0, 0x1p-600, 0x1p600};
  const char norms[8] = {'M', '1', 'O', 'I', 'F', 'E', 'm', 'f'};
  double work[300];
  for (int cplx = 0; cplx < 2; cplx++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int k = 0; k < 3; k++) {
        const int m = shapes[s][0], n = shapes[s][1], ld = m + 3, per = cplx ? 2 : 1;
        double *a = malloc(sizeof *a * (size_t)(per * ld * n));
        for (int j = 0; j < n; j++)
          for (int i = 0; i < per * ld; i++)
            a[i + per * ld * j] = i >= per * m ? NAN : scales[k] * draw();
        for (int q = 0; q < 8; q++) {
          const char norm = norms[q];
          const char upper = norm == 'm' ? 'M' : norm == 'f' ? 'F' : norm;
          const double got = call(norm, cplx, m, n, a, ld, work);
          const long double want = naive(upper, cplx, m, n, a, ld);
          const double tol = 4e-16 * (double)(m + n + 2);
          if (!(fabsl((long double)got - want) <= tol * want)) {
            char buf[200];
            snprintf(buf, sizeof buf, "%s norm %c m %d n %d scale %g: got %.17g, want %.17Lg",
                     cplx ? "zlange" : "dlange", norm, m, n, scales[k], got, want);
            th_test_fail_at(__FILE__, __LINE__, buf);
          }
        }
        free(a);
      }
}

/* A NaN anywhere: NaN for 'M', '1', 'I' and 'F'; an infinity (and no NaN): infinity.
 * min(m, n) 0 gives 0 without reading A; an unknown norm gives 0. */
static void lange_non_finite_empty_and_unknown(void) {
  const char norms[4] = {'M', '1', 'I', 'F'};
  double work[64];
  for (int cplx = 0; cplx < 2; cplx++)
    for (int bad = 0; bad < 2; bad++)
      for (int spot = 0; spot < 3; spot++)
        for (int q = 0; q < 4; q++) {
          const int m = 11, n = 6, per = cplx ? 2 : 1;
          double a[2 * 11 * 6];
          for (int i = 0; i < per * m * n; i++) a[i] = draw();
          const int at = spot == 0 ? 0 : spot == 1 ? per * m * n - 1 : per * (m * 3 + 4) + cplx;
          a[at] = bad ? INFINITY : NAN;
          const double got = call(norms[q], cplx, m, n, a, m, work);
          if (bad)
            TH_CHECK(isinf(got) && got > 0);
          else
            TH_CHECK(isnan(got));
        }
  double nan_a[4] = {NAN, NAN, NAN, NAN};
  for (int cplx = 0; cplx < 2; cplx++) {
    TH_CHECK(call('M', cplx, 0, 3, nan_a, 1, work) == 0.0);
    TH_CHECK(call('F', cplx, 2, 0, nan_a, 2, work) == 0.0);
    double ones[4] = {1, 1, 1, 1};
    TH_CHECK(call('X', cplx, 2, 1, ones, 2, work) == 0.0);
  }
}

/* Switched off (TL__BLAS_OWN_LANGE, bench_providers' row), 'M' is the reference loop's: the
 * largest fabs or cabs, bit for bit (the padding, NaN, never read); a NaN anywhere gives a NaN
 * and an infinity an infinity; the other norms are unchanged. */
static void lange_switched_off_is_the_reference_loop(void) {
  static const int shapes[][2] = {{1, 1}, {7, 3}, {13, 5}, {33, 17}, {200, 40}};
  double work[300];
  const int saved = tl__blas_off;
  for (int cplx = 0; cplx < 2; cplx++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int m = shapes[s][0], n = shapes[s][1], ld = m + 3, per = cplx ? 2 : 1;
      double *a = malloc(sizeof *a * (size_t)(per * ld * n));
      TH_CHECK(a != NULL);
      for (int j = 0; j < n; j++)
        for (int i = 0; i < per * ld; i++) a[i + per * ld * j] = i >= per * m ? NAN : draw();
      double want = 0.0;
      for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
          const double *e = a + per * (i + ld * j);
          const double v = cplx ? cabs(e[0] + I * e[1]) : fabs(e[0]);
          want = v > want ? v : want;
        }
      const double one_on = call('1', cplx, m, n, a, ld, work);
      tl__blas_off = saved | TL__BLAS_OWN_LANGE;
      const double got = call('M', cplx, m, n, a, ld, work);
      const double one = call('1', cplx, m, n, a, ld, work);
      a[per * (m / 2 + ld * (n / 2))] = INFINITY;
      const double inf = call('M', cplx, m, n, a, ld, work);
      a[per * (m - 1 + ld * (n - 1))] = NAN;
      const double nan = call('M', cplx, m, n, a, ld, work);
      tl__blas_off = saved;
      TH_CHECK(got == want);
      TH_CHECK(isinf(inf) && inf > 0);
      TH_CHECK(isnan(nan));
      TH_CHECK(one == one_on);
      free(a);
    }
}

TH_TEST_MAIN(TH_CASE(lange_matches_a_naive_norm), TH_CASE(lange_non_finite_empty_and_unknown),
             TH_CASE(lange_switched_off_is_the_reference_loop))
