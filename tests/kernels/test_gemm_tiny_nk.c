/* tests/kernels/test_gemm_tiny_nk.c: the tiny-B GEMM rows (gemm_tiny_nk.c) against a naive
 * reference in every floating dtype: n and k from 1 to the reach's edges (odd ones, each
 * padded width), A's rows apart by more than k, B row- and column-major and strided, C with
 * row and column strides, alpha 1 and other, beta 0 over a C full of NaN (it must not be
 * read) and beta nonzero; a row's bits do not depend on m (one call over every row against
 * one call per row); nothing between C's elements is written; the reach says no past its
 * edges. The einsum step that reaches it (the blocked route of contract.c) is
 * tests/einsum/test_einsum_blocked.c's. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"
#include "th_numeric.h"
#include "th_test.h"

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

#define M_MAX 37
#define NK_MAX 16
/* Elements of each buffer (doubles: two per element, room for any dtype). */
#define A_ELEMS (M_MAX * (NK_MAX + 3))
#define B_ELEMS (2 * NK_MAX * NK_MAX)
#define C_ELEMS (2 * M_MAX * NK_MAX)
static double buf_a[2 * A_ELEMS], buf_b[2 * B_ELEMS];
static double buf_c[2 * C_ELEMS], buf_c1[2 * C_ELEMS], buf_c0[2 * C_ELEMS];

static void gemm_tiny_nk_matches_naive(void) {
  static const int64_t nk[][2] = {{1, 1},  {1, 16}, {2, 3},  {3, 4},  {4, 4},  {5, 7},
                                  {7, 9},  {8, 8},  {9, 5},  {13, 3}, {16, 4}, {16, 1},
                                  {3, 16}, {6, 10}, {11, 5}, {2, 16}};
  static const int64_t ms[3] = {1, 6, M_MAX};
  uint64_t state = 29;
  int bad = 0;
  for (int di = 0; di < 4; di++) {
    tl_dtype dt = dtypes[di];
    int cplx = tl_dtype_is_complex(dt);
    for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++) {
      int64_t n = nk[s][0], k = nk[s][1];
      TH_CHECK(tl__gemm_tiny_nk_fits(dt, n, k));
      for (int mi = 0; mi < 3; mi++)
        for (int lb = 0; lb < 3; lb++)
          for (int lc = 0; lc < 2; lc++)
            for (int ab = 0; ab < 3; ab++) {
              int64_t m = ms[mi], rsa = k + (lb == 2 ? 3 : 0);
              int64_t rsb = lb == 0 ? n : lb == 1 ? 1 : 2 * n, csb = lb == 0 ? 1 : lb == 1 ? k : 2;
              int64_t rsc = lc == 0 ? n + 1 : 1, csc = lc == 0 ? 1 : 2 * m;
              int beta_kind = ab == 2, unit = ab == 0;
              for (int64_t i = 0; i < A_ELEMS; i++)
                th_num_store(dt, buf_a, i, th_num_uniform(&state) - 0.5);
              for (int64_t i = 0; i < B_ELEMS; i++)
                th_num_store(dt, buf_b, i, th_num_uniform(&state) - 0.5);
              for (int64_t i = 0; i < C_ELEMS; i++)
                th_num_store(dt, buf_c, i, beta_kind ? th_num_uniform(&state) - 0.5 : NAN);
              memcpy(buf_c1, buf_c, sizeof buf_c);
              memcpy(buf_c0, buf_c, sizeof buf_c);
              tl_scalar alpha = unit   ? tl_scalar_real(1.0)
                                : cplx ? (tl_scalar){0.75, -0.5}
                                       : tl_scalar_real(0.75);
              tl_scalar beta = beta_kind ? (cplx ? (tl_scalar){-1.25, 0.5} : tl_scalar_real(-1.25))
                                         : tl_scalar_real(0.0);
              tl__gemm_tiny_nk(dt, m, n, k, alpha, buf_a, rsa, buf_b, rsb, csb, beta, buf_c, rsc,
                               csc);
              /* The same rows one call each: the same bits. */
              size_t es = tl_dtype_size(dt);
              for (int64_t i = 0; i < m; i++)
                tl__gemm_tiny_nk(dt, 1, n, k, alpha, (char *)buf_a + (size_t)(i * rsa) * es, rsa,
                                 buf_b, rsb, csb, beta, (char *)buf_c1 + (size_t)(i * rsc) * es,
                                 rsc, csc);
              double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
              for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                  double complex sum = 0;
                  double scale = 1;
                  for (int64_t p = 0; p < k; p++) {
                    double complex x = th_num_load(dt, buf_a, i * rsa + p);
                    double complex y = th_num_load(dt, buf_b, p * rsb + j * csb);
                    sum += x * y;
                    scale += cabs(x * y);
                  }
                  double complex before = th_num_load(dt, buf_c0, i * rsc + j * csc);
                  double complex want = al * sum + (beta_kind ? be * before : 0);
                  double complex got = th_num_load(dt, buf_c, i * rsc + j * csc);
                  double complex got1 = th_num_load(dt, buf_c1, i * rsc + j * csc);
                  if (memcmp(&got, &got1, sizeof got) != 0) bad++;
                  if (!th_num_close_enough(got, want, th_num_tolerance(dt) * 4, scale + 2)) bad++;
                }
              /* Nothing outside C's elements was written (C's layout leaves gaps). */
              for (int64_t e = 0; e < C_ELEMS; e++) {
                int64_t i = lc == 0 ? e / (n + 1) : e % (2 * m);
                int64_t j = lc == 0 ? e % (n + 1) : e / (2 * m);
                if (i < m && j < n) continue;
                double complex now = th_num_load(dt, buf_c, e), was = th_num_load(dt, buf_c0, e);
                if (memcmp(&now, &was, sizeof now) != 0) bad++;
              }
            }
    }
  }
  if (bad) fprintf(stderr, "  %d mismatches\n", bad);
  TH_CHECK(bad == 0);
}

/* Every instruction set the machine has gives the portable kernel's bits (the AVX2 rows take
 * f64 and c128 with n <= 4, alpha 1, beta 0 and contiguous columns of C; the other calls
 * fall through to the portable rows at every level). */
static void gemm_tiny_nk_same_bits_at_every_isa(void) {
  static const tl_dtype wide[2] = {TL_F64, TL_C128};
  uint64_t state = 31;
  int bad = 0, compared = 0;
  for (int di = 0; di < 2; di++) {
    tl_dtype dt = wide[di];
    for (int64_t n = 1; n <= 5; n++)
      for (int64_t k = 1; k <= 16; k += 3) /* 1, 4, 7, 10, 13, 16 */
        for (int variant = 0; variant < 4; variant++) {
          /* variant bit 0: alpha 1 (else 0.5); bit 1: rows of A k apart and, for one column,
           * C's rows contiguous (the 4 x 4 blocks of the one-column rows when k = 4) */
          int unit = variant & 1, packed = variant >> 1;
          int64_t m = M_MAX, rsa = packed ? k : k + 1, rsc = packed && n == 1 ? 1 : n + 1;
          for (int64_t i = 0; i < A_ELEMS; i++)
            th_num_store(dt, buf_a, i, th_num_uniform(&state) - 0.5);
          for (int64_t i = 0; i < B_ELEMS; i++)
            th_num_store(dt, buf_b, i, th_num_uniform(&state) - 0.5);
          for (int64_t i = 0; i < C_ELEMS; i++) th_num_store(dt, buf_c0, i, NAN);
          tl_scalar alpha = tl_scalar_real(unit ? 1.0 : 0.5), beta = tl_scalar_real(0.0);
          tl__gemm_tiny_nk_at(TL__ISA_PORTABLE, dt, m, n, k, alpha, buf_a, rsa, buf_b, n, 1, beta,
                              buf_c0, rsc, 1);
          for (int isa = TL__ISA_AVX2; isa <= tl__isa_level(); isa++) {
            for (int64_t i = 0; i < C_ELEMS; i++) th_num_store(dt, buf_c, i, NAN);
            tl__gemm_tiny_nk_at(isa, dt, m, n, k, alpha, buf_a, rsa, buf_b, n, 1, beta, buf_c, rsc,
                                1);
            if (memcmp(buf_c, buf_c0, (size_t)(m * rsc) * tl_dtype_size(dt)) != 0) bad++;
            compared++;
          }
        }
  }
  if (bad) fprintf(stderr, "  %d of %d calls differ from the portable bits\n", bad, compared);
  if (compared == 0) fprintf(stderr, "  this machine runs the portable kernels only\n");
  TH_CHECK(bad == 0);
}

static void gemm_tiny_nk_reach(void) {
  for (int di = 0; di < 4; di++) {
    TH_CHECK(tl__gemm_tiny_nk_fits(dtypes[di], 3, 4));
    TH_CHECK(tl__gemm_tiny_nk_fits(dtypes[di], 16, 4));
    TH_CHECK(!tl__gemm_tiny_nk_fits(dtypes[di], 17, 1));
    TH_CHECK(!tl__gemm_tiny_nk_fits(dtypes[di], 1, 17));
    TH_CHECK(!tl__gemm_tiny_nk_fits(dtypes[di], 5, 13)); /* 65 elements */
    TH_CHECK(!tl__gemm_tiny_nk_fits(dtypes[di], 0, 4));
    TH_CHECK(!tl__gemm_tiny_nk_fits(dtypes[di], 4, 0));
  }
}

TH_TEST_MAIN(TH_CASE(gemm_tiny_nk_matches_naive), TH_CASE(gemm_tiny_nk_same_bits_at_every_isa),
             TH_CASE(gemm_tiny_nk_reach))
