/* tests/kernels/test_gemm_batch_runs.c: batches of small GEMMs split over a team in runs of
 * entries (src/kernels/gemm_batch_runs.c): the run length's bounds; every dtype against a
 * naive reference through tl_einsum_into ("bij,bjk->bik" with transposed and negatively
 * strided operands) and tl_contract_scaled_into (alpha and beta), on one thread and on a
 * team of two; a two-axis batch visited whole, with the same bits on one thread and on a
 * team of two (each entry is one provider call of its shape wherever it runs). */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static uint64_t seed = 0x243f6a8885a308d3ull;

/* A fresh row-major tensor of `shape` with random entries (complex ones with both parts). */
static tl_tensor random_tensor(tl_dtype dtype, int rank, const int64_t *shape) {
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_create_row_major(dtype, rank, shape, &t));
  int64_t n = tl_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++)
    th_num_store_parts(dtype, t.data, i, th_num_uniform(&seed) - 0.5,
                       tl_dtype_is_complex(dtype) ? th_num_uniform(&seed) - 0.5 : 0.0);
  return t;
}

static void batch_run_length_bounds(void) {
  tl__gemm_batch g;
  memset(&g, 0, sizeof g);
  g.dtype = TL_C128;
  g.m = 1, g.n = 5, g.k = 5;
  g.batches = 20000;
  size_t run = tl__gemm_batch_run_length(&g, 2);
  TH_CHECK(run > 1 && run * 25 <= 16 * 1024);      /* a run is a few microseconds of work */
  TH_CHECK(tl__gemm_batch_run_length(&g, 1) == 1); /* no team: nothing to split */
  g.batches = 40;                                  /* at least 4 runs per thread */
  TH_CHECK(tl__gemm_batch_run_length(&g, 2) == 5);
  g.batches = 6;
  TH_CHECK(tl__gemm_batch_run_length(&g, 2) == 1);
  g.batches = 20000;
  g.m = g.n = g.k = 32; /* a large product is its own run */
  TH_CHECK(tl__gemm_batch_run_length(&g, 2) == 1);
  g.k = 0;
  g.m = g.n = 2;
  TH_CHECK(tl__gemm_batch_run_length(&g, 4) >= 1);
}

/* c[b] == alpha * a[b] @ b[b] + beta * c0[b] entry by entry, a, b, c of shape (batch, ., .). */
static void check_batch(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_tensor *c0, double complex alpha, double complex beta) {
  const int64_t batches = a->shape[0], m = a->shape[1], k = a->shape[2], n = b->shape[2];
  const double tol = th_num_tolerance(a->dtype);
  for (int64_t z = 0; z < batches; z++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double complex want = 0;
        double scale = 0;
        for (int64_t l = 0; l < k; l++) {
          double complex x = th_num_get(a, (int64_t[]){z, i, l});
          double complex y = th_num_get(b, (int64_t[]){z, l, j});
          want += x * y;
          scale += cabs(x) * cabs(y);
        }
        want *= alpha;
        if (c0) want += beta * th_num_get(c0, (int64_t[]){z, i, j});
        double complex got = th_num_get(c, (int64_t[]){z, i, j});
        TH_CHECK(th_num_close_enough(got, want, tol, scale + 1.0));
      }
}

static const int64_t shapes[][3] = {{1, 1, 1}, {2, 3, 2},  {4, 4, 4},    {5, 5, 5},   {3, 8, 7},
                                    {8, 8, 8}, {9, 9, 16}, {16, 16, 16}, {1, 12, 16}, {16, 1, 3}};

/* "bij,bjk->bik" on a root surface of `threads`, for every dtype and shape, with a's batch
 * axis last in memory (a transposed view) and b negatively strided on j. */
static void batch_runs_match_naive(int threads) {
  th_held held;
  th_held_open(&held, threads);
  for (int d = 0; d < TL_DTYPE_COUNT; d++) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2], batches = 600;
      tl_tensor a_store = random_tensor((tl_dtype)d, 3, (int64_t[]){m, k, batches});
      tl_tensor b_store = random_tensor((tl_dtype)d, 3, (int64_t[]){batches, k, n});
      tl_tensor a, b, b_rev, c;
      TH_CHECK_OK(tl_tensor_permute_view(&a_store, (int[]){2, 0, 1}, &a));  /* (batch, m, k) */
      TH_CHECK_OK(tl_tensor_slice(&b_store, 1, k - 1, -k - 1, -1, &b_rev)); /* l reversed */
      TH_CHECK_OK(tl_tensor_create_row_major((tl_dtype)d, 3, (int64_t[]){batches, m, n}, &c));
      const tl_tensor *ops[2] = {&a, &b_rev};
      TH_CHECK_OK(tl_einsum_into(held.exec, "bij,bjk->bik", 2, ops, &c));
      check_batch(&a, &b_rev, &c, NULL, 1.0, 0.0);
      /* alpha and beta through the contraction route, c column-major (its own strides) */
      tl_tensor c0 = random_tensor((tl_dtype)d, 3, (int64_t[]){batches, m, n});
      tl_tensor c1;
      TH_CHECK_OK(tl_tensor_create((tl_dtype)d, 3, (int64_t[]){batches, m, n}, &c1));
      TH_CHECK_OK(tl_copy_into(held.exec, &c0, &c1));
      const int is_complex = tl_dtype_is_complex((tl_dtype)d);
      tl_scalar alpha = {0.5, is_complex ? -2.0 : 0.0}, beta = {-1.5, is_complex ? 0.25 : 0.0};
      TH_CHECK_OK(tl_contract_scaled_into(held.exec, alpha, beta, (int[]){0, 1, 3}, &a,
                                          (int[]){0, 1, 2}, &b_store, (int[]){0, 2, 3}, &c1));
      b = b_store;
      check_batch(&a, &b, &c1, &c0, alpha.re + I * alpha.im, beta.re + I * beta.im);
      tl_tensor_release(&c0);
      tl_tensor_release(&c1);
      tl_tensor_release(&c);
      tl_tensor_release(&a_store);
      tl_tensor_release(&b_store);
    }
  }
  th_held_close(&held);
}

static void batch_runs_match_naive_in_every_dtype(void) { batch_runs_match_naive(1); }

static void batch_runs_match_naive_on_a_team(void) { batch_runs_match_naive(2); }

/* A two-axis batch ("xyij,xyjk->xyik" with y of odd extent): the odometer over the batch
 * axes visits every entry once, on one thread and on a team, with the same bits. */
static void batch_runs_two_axis_batch_same_bits_on_a_team(void) {
  const int64_t x = 37, y = 29, m = 5, k = 6, n = 7;
  tl_tensor a = random_tensor(TL_C128, 4, (int64_t[]){x, y, m, k});
  tl_tensor b = random_tensor(TL_C128, 4, (int64_t[]){x, y, k, n});
  tl_tensor c[2];
  for (int t = 0; t < 2; t++) {
    th_held held;
    th_held_open(&held, t + 1);
    TH_CHECK_OK(tl_tensor_create_row_major(TL_C128, 4, (int64_t[]){x, y, m, n}, &c[t]));
    const tl_tensor *ops[2] = {&a, &b};
    TH_CHECK_OK(tl_einsum_into(held.exec, "xyij,xyjk->xyik", 2, ops, &c[t]));
    th_held_close(&held);
  }
  TH_CHECK(memcmp(c[0].data, c[1].data, (size_t)(x * y * m * n) * 16) == 0);
  tl_tensor a3 = a, b3 = b, c3 = c[0]; /* the same memory seen with one batch axis */
  a3.rank = b3.rank = c3.rank = 3;
  a3.shape[0] = b3.shape[0] = c3.shape[0] = x * y;
  for (int r = 1; r < 3; r++) {
    a3.shape[r] = a.shape[r + 1], a3.strides[r] = a.strides[r + 1];
    b3.shape[r] = b.shape[r + 1], b3.strides[r] = b.strides[r + 1];
    c3.shape[r] = c[0].shape[r + 1], c3.strides[r] = c[0].strides[r + 1];
  }
  a3.strides[0] = a.strides[1], b3.strides[0] = b.strides[1], c3.strides[0] = c[0].strides[1];
  check_batch(&a3, &b3, &c3, NULL, 1.0, 0.0);
  for (int t = 0; t < 2; t++) tl_tensor_release(&c[t]);
  tl_tensor_release(&a);
  tl_tensor_release(&b);
}

TH_TEST_MAIN(TH_CASE(batch_run_length_bounds), TH_CASE(batch_runs_match_naive_in_every_dtype),
             TH_CASE(batch_runs_match_naive_on_a_team),
             TH_CASE(batch_runs_two_axis_batch_same_bits_on_a_team))
