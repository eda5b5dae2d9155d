/* tests/kernels/test_packed_complex.c: the blocked complex GEMM kernel (gemm_packed_complex.c)
 * against a naive product, in c64 and c128, on shapes that cross each of its blocks (rows,
 * columns and k) with every remainder kind, on the layouts it packs from and the two C
 * layouts it writes; what it declines; NaN and Inf staying in their rows and columns; and the
 * route tl_gemm_into taking it, split over a pool of two. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tenlane/tenlane.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static int have_kernel(void) { return tl__isa_level() >= TL__ISA_AVX512; }

/* Element (i, j) of a complex matrix with strides (rs, cs). */
static double complex get_c(tl_dtype dt, const void *base, int64_t i, int64_t j, int64_t rs,
                            int64_t cs) {
  return th_num_load(dt, base, i * rs + j * cs);
}

static void fill_random(tl_dtype dt, void *base, int64_t count, uint64_t *state) {
  for (int64_t i = 0; i < count; i++) {
    const double re = th_num_uniform(state) / 2;
    th_num_store_parts(dt, base, i, re, th_num_uniform(state) / 2);
  }
}

/* Elements a rows x cols operand with these strides spans. */
static int64_t span(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (rows - 1) * rs + (cols - 1) * cs + 1;
}

/* One product through the kernel, checked element by element against a naive sum; every
 * element of C's buffer outside the m x n block, guard past its end included, keeps its
 * bytes. beta 0 starts from a C of
 * NaN, which must not be read. */
static void check_one(tl_dtype dt, int64_t m, int64_t n, int64_t k, int la, int lb, int lc,
                      tl_scalar alpha, tl_scalar beta, uint64_t *seed) {
  int64_t rsa, csa, rsb, csb, rsc, csc;
  th_num_layout_strides(la, m, k, &rsa, &csa);
  th_num_layout_strides(lb, k, n, &rsb, &csb);
  th_num_layout_strides(lc, m, n, &rsc, &csc);
  const int64_t na = span(m, k, rsa, csa), nb = span(k, n, rsb, csb);
  /* C's buffer runs on past its last element by two columns (or rows) of guard, which the
   * kernel must leave as it found them too. */
  const int64_t nc = span(m, n, rsc, csc) + 2 * (rsc > csc ? rsc : csc) + 64;
  const size_t es = tl_dtype_size(dt);
  void *a = malloc((size_t)na * es), *b = malloc((size_t)nb * es);
  void *c = malloc((size_t)nc * es), *c0 = malloc((size_t)nc * es);
  char *inside = calloc((size_t)nc, 1);
  void *pack = aligned_alloc(64, (tl__gemm_packed_complex_bytes(dt, m, n, k) + 63) / 64 * 64);
  TH_CHECK(a && b && c && c0 && inside && pack);
  fill_random(dt, a, na, seed);
  fill_random(dt, b, nb, seed);
  fill_random(dt, c, nc, seed);
  const int beta_zero = beta.re == 0.0 && beta.im == 0.0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      inside[i * rsc + j * csc] = 1;
      if (beta_zero) th_num_store_parts(dt, c, i * rsc + j * csc, NAN, NAN);
    }
  memcpy(c0, c, (size_t)nc * es);
  TH_CHECK(tl__gemm_packed_complex(dt, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc,
                                   pack) == 1);
  const double tol = dt == TL_C64 ? 2e-6 : 1e-14;
  const double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
  int reported = 0;
  for (int64_t j = 0; j < n && !reported; j++)
    for (int64_t i = 0; i < m && !reported; i++) {
      double complex sum = 0;
      double scale = 0;
      for (int64_t p = 0; p < k; p++) {
        const double complex x = get_c(dt, a, i, p, rsa, csa), y = get_c(dt, b, p, j, rsb, csb);
        sum += x * y;
        scale += cabs(x) * cabs(y);
      }
      const double complex old = get_c(dt, c0, i, j, rsc, csc);
      const double complex kept = beta_zero ? 0 : be * old; /* old is NaN for beta 0 */
      const double complex want = al * sum + kept;
      const double complex got = get_c(dt, c, i, j, rsc, csc);
      if (!(cabs(got - want) <= tol * (1.0 + cabs(al) * scale + cabs(kept)))) {
        char buf[240];
        snprintf(buf, sizeof buf,
                 "%s %lldx%lldx%lld layouts %d/%d/%d: (%lld,%lld) got %.9g%+.9gi want %.9g%+.9gi "
                 "(scale %g)",
                 tl_dtype_name(dt), (long long)m, (long long)n, (long long)k, la, lb, lc,
                 (long long)i, (long long)j, creal(got), cimag(got), creal(want), cimag(want),
                 scale);
        th_test_fail_at(__FILE__, __LINE__, buf);
        reported = 1;
      }
    }
  for (int64_t e = 0; e < nc; e++)
    if (!inside[e] && memcmp((char *)c + e * (int64_t)es, (char *)c0 + e * (int64_t)es, es) != 0) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s %lldx%lldx%lld layout %d: element %lld outside C was written",
               tl_dtype_name(dt), (long long)m, (long long)n, (long long)k, lc, (long long)e);
      th_test_fail_at(__FILE__, __LINE__, buf);
      break;
    }
  free(a), free(b), free(c), free(c0), free(inside), free(pack);
}

static void packed_complex_kernel_matches_naive(void) {
  if (!have_kernel()) {
    TH_CHECK(tl__provider_current().packed_complex == 0);
    th_test_skip("the packed complex kernel needs AVX-512F and FMA (CPU or TL_ISA)");
  }
  TH_CHECK(tl__provider_current().packed_complex == 1);
  /* Both dtypes: 144 rows per block at k 256 (16-row tiles for c64, 8-row for c128), more
   * rows per block when k is shorter; 6-column groups, 1920 columns per block. Each shape
   * crosses some block with a remainder. */
  static const int64_t shapes[][3] = {
      {81, 80, 80},   /* just past the tiny kernel's reach */
      {150, 7, 260},  /* two row blocks (144 + 6), two k chunks, one column group */
      {17, 1927, 33}, /* two column blocks, the last group of one column, rows 16 + 1 */
      {289, 13, 129}, /* at k 129, blocks of 272 (c64) or 280 (c128) rows and a remainder */
      {1, 600, 200},  /* one row */
      {600, 1, 200},  /* one column */
      {45, 46, 300},  /* partial tiles everywhere */
      {2400, 9, 16},  /* a short k: 2304 rows per block, then a second block */
      {70, 35, 300},  /* a last column group of five */
  };
  const tl_scalar alphas[] = {{1.0, 0.0}, {0.5, -2.0}};
  const tl_scalar betas[] = {{0.0, 0.0}, {1.0, 0.0}, {-0.25, 1.5}};
  uint64_t seed = 2024u;
  for (int di = 0; di < 2; di++) {
    const tl_dtype dt = di ? TL_C128 : TL_C64;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int t = 0; t < 6; t++) /* six layout and scalar combinations per shape */
        check_one(dt, shapes[s][0], shapes[s][1], shapes[s][2], t % 4, (t + 1) % 4, t % 3,
                  alphas[t % 2], betas[t % 3], &seed);
  }
}

static void packed_complex_kernel_declines_what_is_not_its(void) {
  static double x[64], y[64], z[64];
  _Alignas(64) static double pack[4096];
  const tl_scalar one = tl_scalar_real(1.0), zero = tl_scalar_real(0.0);
  for (int i = 0; i < 64; i++) x[i] = y[i] = 1.0, z[i] = -7.0;
  /* No scratch, alpha 0, k 0, a real dtype, a C with no unit stride: not taken, C untouched. */
  TH_CHECK(tl__gemm_packed_complex(TL_C128, 2, 2, 2, one, x, 1, 2, y, 1, 2, zero, z, 1, 2, NULL) ==
           0);
  TH_CHECK(tl__gemm_packed_complex(TL_C128, 2, 2, 2, zero, x, 1, 2, y, 1, 2, zero, z, 1, 2, pack) ==
           0);
  TH_CHECK(tl__gemm_packed_complex(TL_C64, 2, 2, 0, one, x, 1, 2, y, 1, 2, zero, z, 1, 2, pack) ==
           0);
  TH_CHECK(tl__gemm_packed_complex(TL_F64, 2, 2, 2, one, x, 1, 2, y, 1, 2, zero, z, 1, 2, pack) ==
           0);
  TH_CHECK(tl__gemm_packed_complex(TL_C128, 2, 2, 2, one, x, 1, 2, y, 1, 2, zero, z, 2, 5, pack) ==
           0);
  for (int i = 0; i < 64; i++) TH_CHECK(z[i] == -7.0);
  /* The reach: complex, past the tiny kernel's, only when the choice has the kernel. */
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C64, 81, 80, 80));
  TH_CHECK(!tl__gemm_packed_complex_takes(1, TL_C64, 80, 80, 80));
  TH_CHECK(!tl__gemm_packed_complex_takes(1, TL_F64, 200, 200, 200));
  TH_CHECK(!tl__gemm_packed_complex_takes(0, TL_C128, 200, 200, 200));
  TH_CHECK(!tl__gemm_packed_complex_takes(1, TL_C128, 200, 200, 0));
  /* c128 with a short k and a C wide both ways stays with BLIS; a narrow C does not. */
  TH_CHECK(!tl__gemm_packed_complex_takes(1, TL_C128, 1000, 1000, 32));
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C128, 1000, 1000, 96));
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C128, 2000, 64, 64));
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C64, 1000, 1000, 32));
  /* Scratch grows with the shape up to its blocks, and is the same whichever of m, n is
   * larger (the kernel may swap them). */
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C64, 100, 90, 90) <
           tl__gemm_packed_complex_bytes(TL_C64, 400, 400, 400));
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C128, 9, 700, 50) ==
           tl__gemm_packed_complex_bytes(TL_C128, 700, 9, 50));
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C64, 5000, 5000, 5000) ==
           tl__gemm_packed_complex_bytes(TL_C64, 9000, 9000, 9000));
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C64, 9000, 9000, 9000) <= (size_t)33 << 18);
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C128, 9000, 9000, 9000) <= (size_t)33 << 18);
  /* A short k takes more rows of A per block, within the same buffer. */
  TH_CHECK(tl__gemm_packed_complex_bytes(TL_C128, 9000, 9000, 16) <=
           tl__gemm_packed_complex_bytes(TL_C128, 9000, 9000, 9000));
}

/* A NaN in A's row i0 makes row i0 of C NaN and nothing else; an Inf in B's column j1 makes
 * column j1 non-finite and nothing else; no trap, no exit. */
static void packed_complex_nan_and_inf_stay_in_their_rows_and_columns(void) {
  if (!have_kernel())
    th_test_skip("the packed complex kernel needs AVX-512F and FMA (CPU or TL_ISA)");
  const int64_t m = 150, n = 100, k = 270, i0 = 37, j1 = 61;
  for (int di = 0; di < 2; di++) {
    const tl_dtype dt = di ? TL_C128 : TL_C64;
    const size_t es = tl_dtype_size(dt);
    void *a = malloc((size_t)(m * k) * es), *b = malloc((size_t)(k * n) * es);
    void *c = malloc((size_t)(m * n) * es);
    void *pack = aligned_alloc(64, (tl__gemm_packed_complex_bytes(dt, m, n, k) + 63) / 64 * 64);
    TH_CHECK(a && b && c && pack);
    uint64_t seed = 77u;
    fill_random(dt, a, m * k, &seed);
    fill_random(dt, b, k * n, &seed);
    th_num_store_parts(dt, a, i0 + 200 * m, NAN, 0.0);
    th_num_store_parts(dt, b, 3 + j1 * k, INFINITY, 0.0);
    TH_CHECK(tl__gemm_packed_complex(dt, m, n, k, tl_scalar_real(1.0), a, 1, m, b, 1, k,
                                     tl_scalar_real(0.0), c, 1, m, pack) == 1);
    int wrong = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        const double complex v = get_c(dt, c, i, j, 1, m);
        const int finite = isfinite(creal(v)) && isfinite(cimag(v));
        if (i == i0)
          wrong += !isnan(creal(v)) && !isnan(cimag(v));
        else if (j == j1)
          wrong += finite;
        else
          wrong += !finite;
      }
    if (wrong) {
      char buf[96];
      snprintf(buf, sizeof buf, "%s: %d elements of C have the wrong finiteness", tl_dtype_name(dt),
               wrong);
      th_test_fail_at(__FILE__, __LINE__, buf);
    }
    free(a), free(b), free(c), free(pack);
  }
}

/* tl_gemm_into on a root surface with a pool of two: the product is cut into blocks, each
 * with its own packing scratch; every element agrees with the naive product. */
static void gemm_route_runs_the_packed_kernel_over_the_pool(void) {
  th_held h;
  th_held_open(&h, 2);
  const int64_t m = 230, n = 210, k = 190;
  for (int di = 0; di < 2; di++) {
    const tl_dtype dt = di ? TL_C128 : TL_C64;
    TH_CHECK((tl__gemm_serial_pack_bytes(dt, m, n, k) > 0) == have_kernel());
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    tl_tensor a, b, c;
    TH_CHECK_OK(tl_tensor_create(dt, 2, sa, &a));
    TH_CHECK_OK(tl_tensor_create(dt, 2, sb, &b));
    TH_CHECK_OK(tl_tensor_create(dt, 2, sc, &c));
    uint64_t seed = 5u;
    fill_random(dt, a.data, m * k, &seed);
    fill_random(dt, b.data, k * n, &seed);
    TH_CHECK_OK(tl_gemm_into(h.exec, tl_scalar_real(1.0), &a, &b, tl_scalar_real(0.0), &c));
    const double tol = dt == TL_C64 ? 2e-6 : 1e-14;
    int bad = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double complex sum = 0;
        double scale = 1.0;
        for (int64_t p = 0; p < k; p++) {
          const double complex x = get_c(dt, a.data, i, p, a.strides[0], a.strides[1]);
          const double complex y = get_c(dt, b.data, p, j, b.strides[0], b.strides[1]);
          sum += x * y;
          scale += cabs(x) * cabs(y);
        }
        bad += cabs(get_c(dt, c.data, i, j, c.strides[0], c.strides[1]) - sum) > tol * scale;
      }
    if (bad) {
      char buf[96];
      snprintf(buf, sizeof buf, "%s: %d elements differ from the naive product", tl_dtype_name(dt),
               bad);
      th_test_fail_at(__FILE__, __LINE__, buf);
    }
    tl_tensor_release(&a), tl_tensor_release(&b), tl_tensor_release(&c);
  }
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(packed_complex_kernel_matches_naive),
             TH_CASE(packed_complex_kernel_declines_what_is_not_its),
             TH_CASE(packed_complex_nan_and_inf_stay_in_their_rows_and_columns),
             TH_CASE(gemm_route_runs_the_packed_kernel_over_the_pool))
