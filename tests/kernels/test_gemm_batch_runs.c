/* tests/kernels/test_gemm_batch_runs.c: batches of small GEMMs split over a team in runs of
 * entries (src/kernels/gemm_batch_runs.c): the run length's bounds; every dtype against a
 * naive reference through tl_einsum_into ("bij,bjk->bik" with transposed and negatively
 * strided operands) and tl_contract_scaled_into (alpha and beta), on one thread and on a
 * team of two; a two-axis batch visited whole, with the same bits on one thread and on a
 * team of two (each entry is one provider call of its shape wherever it runs); and the stacked
 * small real kernel (src/kernels/gemm_batch_small.c) at every instruction-set level against a
 * naive reference and bit for bit against the hand kernel on each entry, over one- and two-axis
 * batches, column- and row-major C, beta 0 and 1, with the entries outside its range and
 * the padding of C untouched, and what it declines; row vectors times matrices bit for bit
 * against the thin kernel (src/kernels/gemm_thin.c) on each entry; every square extent 1..17
 * in every dtype with the same bits on a team; a stack past the last-level cache (the
 * kernel's prefetching path) bit for bit the hand kernel's entries. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
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
  TH_CHECK(run > 1 && run * 25 <= 16 * 1024);        /* a run is a few microseconds of work */
  TH_CHECK(tl__gemm_batch_run_length(&g, 1) == run); /* one thread: the same runs */
  g.batches = 40;                                    /* at least 4 runs per thread */
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

/* c[z] == alpha * a[z] @ b[z] + beta * c0[z] for entry z, a, b, c of shape (batch, ., .). */
static void check_entry(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_tensor *c0, double complex alpha, double complex beta, int64_t z) {
  const int64_t m = a->shape[1], k = a->shape[2], n = b->shape[2];
  const double tol = th_num_tolerance(a->dtype);
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

/* check_entry for every entry. */
static void check_batch(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_tensor *c0, double complex alpha, double complex beta) {
  for (int64_t z = 0; z < a->shape[0]; z++) check_entry(a, b, c, c0, alpha, beta, z);
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

/* ---- the stacked small real kernel (gemm_batch_small.c) ----------------------------------- */

#define BS_ENTRIES 12 /* entries of a stack: x 3 by y 4 in the two-axis form */
#define BS_PAD 5      /* spare elements between entries (NaN in C: never read, never written) */

/* A stack over malloc'd buffers: A (m x k), B (k x n), C (m x n) per entry, column- or
 * row-major per operand, entries BS_PAD elements apart, the batch one axis or two. */
typedef struct bs_case {
  tl__gemm_batch g;
  void *a, *b, *c, *c0;
  size_t bytes_a, bytes_b, bytes_c;
} bs_case;

static void bs_fill(tl_dtype dtype, void *buf, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    double v = th_num_uniform(&seed) - 0.5;
    if (dtype == TL_F64)
      ((double *)buf)[i] = v;
    else
      ((float *)buf)[i] = (float)v;
  }
}

static void bs_case_make(bs_case *t, tl_dtype dtype, int64_t m, int64_t n, int64_t k, int row_a,
                         int row_b, int row_c, int two_axes, double beta) {
  memset(t, 0, sizeof *t);
  tl__gemm_batch *g = &t->g;
  const int64_t es = (int64_t)tl_dtype_size(dtype);
  const int64_t sa = m * k + BS_PAD, sb = k * n + BS_PAD, sc = m * n + BS_PAD;
  g->dtype = dtype;
  g->m = m, g->n = n, g->k = k;
  g->alpha = tl_scalar_real(1.0);
  g->beta = tl_scalar_real(beta);
  g->rsa = row_a ? k : 1, g->csa = row_a ? 1 : m;
  g->rsb = row_b ? n : 1, g->csb = row_b ? 1 : k;
  g->rsc = row_c ? n : 1, g->csc = row_c ? 1 : m;
  g->batches = BS_ENTRIES;
  if (two_axes) { /* entry = x + 3 y, laid out y-major with x's stride the largest */
    g->batch_rank = 2;
    g->batch_shape[0] = 3, g->batch_shape[1] = 4;
    for (int o = 0; o < 3; o++) {
      const int64_t s = o == 0 ? sa : o == 1 ? sb : sc;
      g->batch_strides[o][0] = 4 * s, g->batch_strides[o][1] = s;
    }
  } else {
    g->batch_rank = 1;
    g->batch_shape[0] = BS_ENTRIES;
    g->batch_strides[0][0] = sa, g->batch_strides[1][0] = sb, g->batch_strides[2][0] = sc;
  }
  t->bytes_a = (size_t)(BS_ENTRIES * sa * es), t->bytes_b = (size_t)(BS_ENTRIES * sb * es);
  t->bytes_c = (size_t)(BS_ENTRIES * sc * es);
  t->a = malloc(t->bytes_a), t->b = malloc(t->bytes_b);
  t->c = malloc(t->bytes_c), t->c0 = malloc(t->bytes_c);
  TH_CHECK(t->a && t->b && t->c && t->c0);
  bs_fill(dtype, t->a, t->bytes_a / (size_t)es);
  bs_fill(dtype, t->b, t->bytes_b / (size_t)es);
  bs_fill(dtype, t->c0, t->bytes_c / (size_t)es);
  /* the padding after each entry's C: NaN, so a write there or a read of it shows */
  for (int64_t e = 0; e < BS_ENTRIES; e++)
    for (int64_t i = m * n; i < sc; i++) {
      if (dtype == TL_F64)
        ((double *)t->c0)[e * sc + i] = NAN;
      else
        ((float *)t->c0)[e * sc + i] = NAN;
    }
  g->a = t->a, g->b = t->b, g->c = t->c;
}

static void bs_case_free(bs_case *t) { free(t->a), free(t->b), free(t->c), free(t->c0); }

/* Element offsets of entry e (its multi-index over the batch shape, first axis fastest). */
static void bs_offsets(const tl__gemm_batch *g, int64_t e, int64_t *oa, int64_t *ob, int64_t *oc) {
  *oa = *ob = *oc = 0;
  for (int r = 0; r < g->batch_rank; r++) {
    const int64_t idx = e % g->batch_shape[r];
    e /= g->batch_shape[r];
    *oa += idx * g->batch_strides[0][r], *ob += idx * g->batch_strides[1][r];
    *oc += idx * g->batch_strides[2][r];
  }
}

static double bs_get(tl_dtype dtype, const void *buf, int64_t i) {
  return dtype == TL_F64 ? ((const double *)buf)[i] : (double)((const float *)buf)[i];
}

/* Run the kernel at `isa` over entries [begin, end) and check every entry: inside the range,
 * close to the naive sum and bit for bit the hand kernel's result at the same level on that
 * entry alone; outside it (and in every padding), C as it was. */
static void bs_case_check(bs_case *t, int isa, int64_t begin, int64_t end) {
  tl__gemm_batch *g = &t->g;
  const tl_dtype dtype = g->dtype;
  const int64_t es = (int64_t)tl_dtype_size(dtype);
  const double tol = th_num_tolerance(dtype);
  memcpy(t->c, t->c0, t->bytes_c);
  tl__gemm_batch_small(isa, g, begin, end);
  void *single = malloc(t->bytes_c);
  TH_CHECK(single != NULL);
  memcpy(single, t->c0, t->bytes_c);
  for (int64_t e = 0; e < BS_ENTRIES; e++) {
    int64_t oa, ob, oc;
    bs_offsets(g, e, &oa, &ob, &oc);
    const int inside = e >= begin && e < end;
    if (inside)
      tl__small_gemm_kernel(isa, dtype, g->m, g->n, g->k, g->alpha, (const char *)t->a + oa * es,
                            g->rsa, g->csa, (const char *)t->b + ob * es, g->rsb, g->csb, g->beta,
                            (char *)single + oc * es, g->rsc, g->csc);
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        const int64_t ci = oc + i * g->rsc + j * g->csc;
        const double got = bs_get(dtype, t->c, ci), before = bs_get(dtype, t->c0, ci);
        if (!inside) {
          TH_CHECK(got == before);
          continue;
        }
        double want = 0.0, scale = 0.0;
        for (int64_t p = 0; p < g->k; p++) {
          const double x = bs_get(dtype, t->a, oa + i * g->rsa + p * g->csa);
          const double y = bs_get(dtype, t->b, ob + p * g->rsb + j * g->csb);
          want += x * y, scale += fabs(x * y);
        }
        if (g->beta.re != 0.0) want += before, scale += fabs(before);
        TH_CHECK(th_num_close_enough(got, want, tol, scale + 1.0));
      }
  }
  /* bit for bit the hand kernel's entries, the padding (NaN) untouched */
  TH_CHECK(memcmp(t->c, single, t->bytes_c) == 0);
  free(single);
}

static const int64_t bs_extents[] = {2, 3, 4, 5, 7, 8, 9, 12, 13, 16};
static const int64_t bs_depths[] = {1, 2, 3, 5, 8, 16};

/* Every level this CPU has (0 portable, 1 AVX2, 2 AVX-512) over f32 and f64, every m and n
 * of the list (every row-vector count and column tail of the blocks), the depths of the
 * list, one- and two-axis batches, C column- and row-major, beta 0 and 1, part of the stack. */
static void batch_small_kernel_matches_naive_and_hand_kernel_at_every_isa(void) {
  const tl_dtype dtypes[2] = {TL_F64, TL_F32};
  const int levels = tl__small_gemm_isa();
  int cases = 0;
  for (int d = 0; d < 2; d++)
    for (size_t mi = 0; mi < sizeof bs_extents / sizeof bs_extents[0]; mi++)
      for (size_t ni = 0; ni < sizeof bs_extents / sizeof bs_extents[0]; ni++)
        for (size_t ki = 0; ki < sizeof bs_depths / sizeof bs_depths[0]; ki++) {
          const int64_t m = bs_extents[mi], n = bs_extents[ni], k = bs_depths[ki];
          const int variant = (int)(mi + 3 * ni + 7 * ki) % 4;
          const int row_c = variant & 1, two_axes = (variant >> 1) & 1;
          /* the operand C's unit stride pairs with must have it too; the other any layout */
          const int row_a = row_c ? (int)(ki % 2) : 0, row_b = row_c ? 1 : (int)(ki % 2);
          bs_case t;
          bs_case_make(&t, dtypes[d], m, n, k, row_a, row_b, row_c, two_axes,
                       (mi + ni) % 3 == 0 ? 1.0 : 0.0);
          TH_CHECK(tl__gemm_batch_small_takes(&t.g));
          for (int isa = 0; isa <= levels; isa++) {
            bs_case_check(&t, isa, 0, BS_ENTRIES);
            bs_case_check(&t, isa, 3, 10);
            cases++;
          }
          bs_case_free(&t);
        }
  TH_CHECK(cases >= 2 * 10 * 10 * 6);
}

/* What the kernel is not for: it says so, and a call with it writes nothing. */
static void batch_small_kernel_declines_what_is_not_its(void) {
  for (int which = 0; which < 12; which++) {
    bs_case t;
    int64_t m = 4, n = 4, k = 4;
    if (which == 2) m = 1;  /* thin: gemm_thin.c's */
    if (which == 3) n = 1;  /* thin */
    if (which == 4) k = 17; /* deeper than 16 */
    if (which == 5) m = 17; /* taller than 16 */
    if (which == 6) n = 17; /* wider than 16 */
    bs_case_make(&t, TL_F64, m, n, k, which == 9, which == 9, which == 9 || which == 10, 0, 0.0);
    if (which == 0) t.g.dtype = TL_C64; /* the buffers are f64-sized: never read */
    if (which == 1) t.g.dtype = TL_C128;
    if (which == 7) t.g.alpha = tl_scalar_real(2.0);
    if (which == 8) t.g.beta = tl_scalar_real(0.5);
    if (which == 9) t.g.rsb = 1, t.g.csb = 4; /* C row-major, B's rows not at unit stride */
    if (which == 10)
      t.g.rsb = 4, t.g.csb = 1, t.g.rsa = 4, t.g.csa = 1, t.g.rsc = 2,
      t.g.csc = 8;                             /* neither of C's strides 1 */
    if (which == 11) t.g.rsa = 2, t.g.csa = 8; /* C column-major, A's columns strided */
    TH_CHECK(!tl__gemm_batch_small_takes(&t.g));
    memcpy(t.c, t.c0, t.bytes_c);
    tl__gemm_batch_small(-1, &t.g, 0, BS_ENTRIES);
    TH_CHECK(memcmp(t.c, t.c0, t.bytes_c) == 0);
    bs_case_free(&t);
  }
}

/* Row vectors times matrices (m 1: the (N, 1, k) @ (N, k, k) stacks): bit for bit what
 * gemm_thin.c gives each entry alone, at every level (the portable one calls it), for every
 * n and depth of the lists plus 4, 6, 11 and 15, A's row strided or not, C's row apart or
 * not, one- and two-axis batches, part of the stack; taken only where both kernels have a
 * vector level, and not with beta 1 or B's columns strided. */
static void batch_small_kernel_row_vectors_match_the_thin_kernel(void) {
  const tl_dtype dtypes[2] = {TL_F64, TL_F32};
  const int64_t widths[] = {2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16};
  const int levels = tl__small_gemm_isa();
  const int vector_levels = levels >= 1 && tl__gemm_thin_isa() >= 1;
  int cases = 0;
  for (int d = 0; d < 2; d++)
    for (size_t ni = 0; ni < sizeof widths / sizeof widths[0]; ni++)
      for (int64_t k = 1; k <= 16; k++) {
        const int64_t n = widths[ni];
        const int variant = (int)(ni + (size_t)k) % 4;
        bs_case t;
        bs_case_make(&t, dtypes[d], 1, n, k, 1, 1, 1, variant >> 1, 0.0);
        if (variant & 1) t.g.csa = 1 + (k > 1); /* A's row strided (inside its entry's span) */
        if (variant & 1 && k > 1) {
          const int64_t sa = 2 * k + BS_PAD; /* re-space A's entries for the stride */
          free(t.a);
          t.bytes_a = (size_t)(BS_ENTRIES * sa) * tl_dtype_size(dtypes[d]);
          t.a = malloc(t.bytes_a);
          TH_CHECK(t.a != NULL);
          bs_fill(dtypes[d], t.a, BS_ENTRIES * sa);
          t.g.a = t.a;
          if (t.g.batch_rank == 1)
            t.g.batch_strides[0][0] = sa;
          else
            t.g.batch_strides[0][0] = 4 * sa, t.g.batch_strides[0][1] = sa;
        }
        TH_CHECK(tl__gemm_batch_small_takes(&t.g) == vector_levels);
        const int64_t es = (int64_t)tl_dtype_size(dtypes[d]);
        void *single = malloc(t.bytes_c);
        TH_CHECK(single != NULL);
        for (int isa = 0; isa <= levels; isa++)
          for (int part = 0; part < 2; part++) {
            const int64_t begin = part ? 3 : 0, end = part ? 10 : BS_ENTRIES;
            memcpy(t.c, t.c0, t.bytes_c);
            tl__gemm_batch_small(isa, &t.g, begin, end);
            memcpy(single, t.c0, t.bytes_c);
            for (int64_t e = begin; e < end; e++) {
              int64_t oa, ob, oc;
              bs_offsets(&t.g, e, &oa, &ob, &oc);
              TH_CHECK(tl__gemm_thin(dtypes[d], 1, n, k, t.g.alpha, (const char *)t.a + oa * es,
                                     t.g.rsa, t.g.csa, (const char *)t.b + ob * es, t.g.rsb,
                                     t.g.csb, t.g.beta, (char *)single + oc * es, t.g.rsc,
                                     t.g.csc));
            }
            TH_CHECK(memcmp(t.c, single, t.bytes_c) == 0);
            cases++;
          }
        free(single);
        /* beta 1 and B's columns strided are not the thin kernel's axpy form: declined */
        t.g.beta = tl_scalar_real(1.0);
        TH_CHECK(!tl__gemm_batch_small_takes(&t.g));
        t.g.beta = tl_scalar_real(0.0);
        t.g.rsb = 1, t.g.csb = k;
        TH_CHECK(!tl__gemm_batch_small_takes(&t.g));
        bs_case_free(&t);
      }
  TH_CHECK(cases >= 2 * 13 * 16 * 2);
}

/* Every square extent 1..17 in every dtype, an odd count of entries (enough for the team
 * to split them), C row-major and column-major: close to the naive sums on one thread, and
 * the same bits on a team of two (each entry is one kernel call wherever it runs). */
static void batch_runs_every_square_extent_same_bits_on_a_team(void) {
  for (int d = 0; d < TL_DTYPE_COUNT; d++)
    for (int64_t n = 1; n <= 17; n++) {
      int64_t batches = 601; /* odd, and past the team's threshold from n = 5 */
      while (batches < 20001 && 2.0 * (double)(n * n * n * batches) < 1.0e6) batches += 600;
      const int64_t shape[3] = {batches, n, n};
      tl_tensor a = random_tensor((tl_dtype)d, 3, shape);
      tl_tensor b = random_tensor((tl_dtype)d, 3, shape);
      for (int column_major = 0; column_major < 2; column_major++) {
        tl_tensor c[2];
        for (int t = 0; t < 2; t++) {
          th_held held;
          th_held_open(&held, t + 1);
          if (column_major)
            TH_CHECK_OK(tl_tensor_create((tl_dtype)d, 3, shape, &c[t]));
          else
            TH_CHECK_OK(tl_tensor_create_row_major((tl_dtype)d, 3, shape, &c[t]));
          const tl_tensor *ops[2] = {&a, &b};
          TH_CHECK_OK(tl_einsum_into(held.exec, "bij,bjk->bik", 2, ops, &c[t]));
          th_held_close(&held);
        }
        /* every 7th entry and the last against the naive sums, all of them across the team */
        for (int64_t z = 0; z < batches; z += 7) check_entry(&a, &b, &c[0], NULL, 1.0, 0.0, z);
        check_entry(&a, &b, &c[0], NULL, 1.0, 0.0, batches - 1);
        const size_t bytes = (size_t)(batches * n * n) * tl_dtype_size((tl_dtype)d);
        TH_CHECK(memcmp(c[0].data, c[1].data, bytes) == 0);
        for (int t = 0; t < 2; t++) tl_tensor_release(&c[t]);
      }
      tl_tensor_release(&a);
      tl_tensor_release(&b);
    }
}

/* A stack of 16 x 16 f64 entries larger than the last-level cache (the kernel prefetches the
 * next entry there): at every level, whole and cut in two at an odd entry, C row- and
 * column-major, beta 0 and 1, every entry bit for bit the hand kernel's on that entry alone,
 * and the first, a middle and the last entry close to the naive sums. */
static void batch_small_kernel_streaming_stack_matches_hand_kernel(void) {
  const int64_t e_count = 4099, m = 16, sz = m * m; /* 3 x 4099 x 2 KiB: past 24 MiB */
  const size_t bytes = (size_t)(e_count * sz) * sizeof(double);
  double *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes), *c0 = malloc(bytes);
  double *single = malloc(bytes);
  TH_CHECK(a && b && c && c0 && single);
  bs_fill(TL_F64, a, e_count * sz);
  bs_fill(TL_F64, b, e_count * sz);
  bs_fill(TL_F64, c0, e_count * sz);
  const int levels = tl__small_gemm_isa();
  for (int variant = 0; variant < 4; variant++) {
    const int row = variant & 1;
    const double beta = (variant >> 1) ? 1.0 : 0.0;
    tl__gemm_batch g;
    memset(&g, 0, sizeof g);
    g.dtype = TL_F64;
    g.m = g.n = g.k = m;
    g.alpha = tl_scalar_real(1.0);
    g.beta = tl_scalar_real(beta);
    g.a = (const char *)a, g.b = (const char *)b, g.c = (char *)c;
    g.rsa = g.rsb = g.rsc = row ? m : 1;
    g.csa = g.csb = g.csc = row ? 1 : m;
    g.batches = e_count;
    g.batch_rank = 1;
    g.batch_shape[0] = e_count;
    g.batch_strides[0][0] = g.batch_strides[1][0] = g.batch_strides[2][0] = sz;
    TH_CHECK(tl__gemm_batch_small_takes(&g));
    for (int isa = 0; isa <= levels; isa++) {
      memcpy(single, c0, bytes); /* the hand kernel's bits at this level, entry by entry */
      for (int64_t e = 0; e < e_count; e++)
        tl__small_gemm_kernel(isa, TL_F64, m, m, m, g.alpha, a + e * sz, g.rsa, g.csa, b + e * sz,
                              g.rsb, g.csb, g.beta, single + e * sz, g.rsc, g.csc);
      for (int cut = 0; cut < 2; cut++) {
        memcpy(c, c0, bytes);
        if (cut) {
          tl__gemm_batch_small(isa, &g, 2049, e_count);
          tl__gemm_batch_small(isa, &g, 0, 2049);
        } else {
          tl__gemm_batch_small(isa, &g, 0, e_count);
        }
        TH_CHECK(memcmp(c, single, bytes) == 0);
      }
      const int64_t sample[3] = {0, 2048, e_count - 1};
      for (int s = 0; s < 3; s++) {
        const int64_t o = sample[s] * sz;
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < m; j++) {
            double want = beta * c0[o + i * g.rsc + j * g.csc], scale = fabs(want);
            for (int64_t p = 0; p < m; p++) {
              const double x = a[o + i * g.rsa + p * g.csa], y = b[o + p * g.rsb + j * g.csb];
              want += x * y, scale += fabs(x * y);
            }
            TH_CHECK(th_num_close_enough(c[o + i * g.rsc + j * g.csc], want,
                                         th_num_tolerance(TL_F64), scale + 1.0));
          }
      }
    }
  }
  free(a), free(b), free(c), free(c0), free(single);
}

/* Cancellable blocks (tl__gemm_cancel_block): within the bound a block stays as it is; past
 * it, the fewest blocks within the bound, cut equal in multiples of 16 (600 columns whose
 * bound fits 559 lines: two of 304, not 544 and 56), never below the minimum length, and a
 * complex multiply-add counts four times a real one. */
static void cancel_blocks_are_equal_and_within_the_bound(void) {
  const double bound = (double)(1LL << 32);
  /* f64 800 x 600 x 1200: 1.15e9 flops, whole */
  TH_CHECK(tl__gemm_cancel_block(0, 600, 800, 1200, 600, bound, 128) == 600);
  /* c128 800 x 600 x 1200: 4.6e9 flops, two equal blocks */
  TH_CHECK(tl__gemm_cancel_block(1, 600, 800, 1200, 600, bound, 128) == 304);
  /* the bound fits 559 lines: 544 + 56 before, now 304 + 296 */
  const double per_line = 2.0 * 800 * 1200;
  TH_CHECK(tl__gemm_cancel_block(0, 600, 800, 1200, 600, per_line * 559.5, 128) == 304);
  /* within the bound: a team's block is left alone */
  TH_CHECK(tl__gemm_cancel_block(0, 600, 800, 1200, 304, per_line * 559.5, 128) == 304);
  /* many blocks: each within the bound, equal, a multiple of 16, covering dim */
  for (int64_t dim = 100; dim <= 5000; dim += 37) {
    const int64_t len = tl__gemm_cancel_block(0, dim, 1000, 1000, dim, 2e6 * 300, 16);
    const int64_t blocks = (dim + len - 1) / len;
    TH_CHECK(len % 16 == 0 || len == dim);
    TH_CHECK(2e6 * (double)len <= 2e6 * 300 || len == 16);
    TH_CHECK(dim - (blocks - 1) * len > 0);
    /* the last block falls short of the others by the rounding to 16 alone */
    TH_CHECK(dim - (blocks - 1) * len >= len - 16 * blocks);
    TH_CHECK(dim <= 300 || blocks == (dim + 287) / 288); /* the fewest blocks of <= 288 */
  }
  /* the minimum length wins over the bound */
  TH_CHECK(tl__gemm_cancel_block(0, 4096, 1 << 20, 1 << 10, 4096, bound, 128) == 128);
}

TH_TEST_MAIN(TH_CASE(cancel_blocks_are_equal_and_within_the_bound),
             TH_CASE(batch_run_length_bounds), TH_CASE(batch_runs_match_naive_in_every_dtype),
             TH_CASE(batch_runs_match_naive_on_a_team),
             TH_CASE(batch_runs_two_axis_batch_same_bits_on_a_team),
             TH_CASE(batch_small_kernel_matches_naive_and_hand_kernel_at_every_isa),
             TH_CASE(batch_small_kernel_declines_what_is_not_its),
             TH_CASE(batch_small_kernel_row_vectors_match_the_thin_kernel),
             TH_CASE(batch_runs_every_square_extent_same_bits_on_a_team),
             TH_CASE(batch_small_kernel_streaming_stack_matches_hand_kernel))
