/* tests/kernels/test_elementwise_complex.c: the complex double product rows
 * (elementwise_complex.c) at every instruction set this CPU has, bit for bit against the
 * written-out formula, for both inputs contiguous and each one broadcast, at lengths that
 * leave every tail; and tl_mul through the routes gives those bits too. */
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_test.h"

/* The formula of elementwise_core.c's mul_c128, one element. */
static void formula(const double *x, const double *y, double *o) {
  o[0] = x[0] * y[0] - x[1] * y[1];
  o[1] = x[0] * y[1] + x[1] * y[0];
}

/* Values whose products round (so a fused multiply-add would change the bits). */
static double value(int64_t i) { return 1.0 / (double)(3 + i % 17) - 0.3 * (double)(i % 5); }

static void mul_c128_rows_give_the_formula_bits_at_every_isa(void) {
  enum { MAX = 37 };
  double a[2 * MAX], b[2 * MAX], o[2 * MAX + 2], want[2 * MAX];
  for (int i = 0; i < 2 * MAX; i++) a[i] = value(i), b[i] = value(7 * i + 3) * 1.7;
  for (int isa = 0; isa <= tl__isa_level(); isa++) {
    for (int64_t n = 0; n <= MAX; n++) {
      for (int mode = 0; mode < 3; mode++) {
        const int64_t sa = mode == 2 ? 0 : 1, sb = mode == 1 ? 0 : 1;
        for (int64_t i = 0; i < n; i++) formula(a + 2 * i * sa, b + 2 * i * sb, want + 2 * i);
        o[2 * n] = o[2 * n + 1] = 12345.0; /* past the end: untouched */
        tl__mul_c128_rows(isa, n, o, a, sa, b, sb);
        int same = memcmp(o, want, (size_t)(2 * n) * sizeof(double)) == 0;
        if (!same) fprintf(stderr, "isa %d n %lld mode %d\n", isa, (long long)n, mode);
        TH_CHECK(same);
        TH_CHECK(o[2 * n] == 12345.0 && o[2 * n + 1] == 12345.0);
      }
    }
  }
}

static void mul_route_c128_gives_the_formula_bits(void) {
  enum { N = 301 };
  th_held h;
  th_held_open(&h, 1);
  tl_exec *exec = h.exec;
  static double a[2 * N], b[2 * N], o[2 * N], want[2 * N];
  for (int i = 0; i < 2 * N; i++) a[i] = value(i + 5), b[i] = value(3 * i + 1) * 0.9;
  int64_t shape[1] = {N}, unit[1] = {1}, zero[1] = {0};
  tl_tensor ta, tb, tb0, to;
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 1, shape, unit, a, 0, &ta));
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 1, shape, unit, b, 0, &tb));
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 1, shape, zero, b, 0, &tb0));
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 1, shape, unit, o, 0, &to));
  for (int bcast = 0; bcast < 2; bcast++) {
    TH_CHECK_OK(tl_mul_into(exec, &ta, bcast ? &tb0 : &tb, &to));
    for (int64_t i = 0; i < N; i++) formula(a + 2 * i, b + (bcast ? 0 : 2 * i), want + 2 * i);
    TH_CHECK(memcmp(o, want, sizeof want) == 0);
  }
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(mul_c128_rows_give_the_formula_bits_at_every_isa),
             TH_CASE(mul_route_c128_gives_the_formula_bits))
