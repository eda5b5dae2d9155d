/* tests/kernels/test_permute_group.c: the permute path for short dense axes (tiles over
 * axis groups, src/kernels/permute_group.c) against a naive element-by-element reference:
 * random shapes of rank 3 to 6 with extents 1 to 20, random orders, every dtype, sources
 * column-major, reversed (negative strides) or every-other-element views, outputs
 * column-major or reversed; on one thread and split over two; and outputs large enough
 * for streaming stores (f64 and c128); at every instruction set the CPU has. Each case also says
 * whether the plan took the grouped path, and the test requires that a good share did, so it cannot
 * pass by testing the other paths only. */
#include <complex.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kt_isa.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static int64_t draw(int64_t lo, int64_t hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* A view of `shape` over a fresh buffer: layout 0 column-major, 1 every axis but the first
 * reversed (negative strides), 2 every other element along the last axis (a strided view),
 * 3 every axis reversed. base receives the owner. */
static void make_view(tl_dtype dt, int rank, const int64_t *shape, int layout, tl_tensor *base,
                      tl_tensor *view) {
  int64_t bshape[TL_MAX_RANK];
  memcpy(bshape, shape, sizeof(int64_t) * (size_t)rank);
  if (layout == 2) bshape[rank - 1] *= 2;
  TH_CHECK_OK(tl_tensor_create(dt, rank, bshape, base));
  *view = *base;
  view->owned = NULL;
  memcpy(view->shape, shape, sizeof(int64_t) * (size_t)rank);
  if (layout == 1 || layout == 3) {
    for (int k = layout == 1 ? 1 : 0; k < rank; k++) {
      view->offset += (shape[k] - 1) * view->strides[k];
      view->strides[k] = -view->strides[k];
    }
  } else if (layout == 2) {
    view->strides[rank - 1] *= 2;
  }
}

/* One permute: returns 1 when the plan took the grouped path. */
static int check_case(tl_exec *exec, tl_dtype dt, int rank, const int64_t *shape, const int *perm,
                      int lx, int lo) {
  int64_t oshape[TL_MAX_RANK];
  for (int k = 0; k < rank; k++) oshape[k] = shape[perm[k]];
  tl_tensor xb, x, ob, out;
  make_view(dt, rank, shape, lx, &xb, &x);
  make_view(dt, rank, oshape, lo, &ob, &out);
  uint64_t state = (uint64_t)draw(1, 1 << 30);
  TH_NUM_FOR_EACH(idx, rank, shape) {
    th_num_set_parts(&x, idx, th_num_uniform(&state), th_num_uniform(&state));
  }
  tl__permute_plan plan;
  tl_tensor permuted;
  TH_CHECK_OK(tl_tensor_permute_view(&x, perm, &permuted));
  tl__permute_plan_make(&plan, &out, &permuted);
  TH_CHECK_OK(tl_permute_into(exec, &x, perm, &out));

  int64_t src[TL_MAX_RANK];
  TH_NUM_FOR_EACH(idx, rank, oshape) {
    for (int k = 0; k < rank; k++) src[perm[k]] = idx[k];
    if (th_num_get(&out, idx) != th_num_get(&x, src)) {
      char what[200];
      snprintf(what, sizeof what, "%s rank %d layouts %d %d grouped %d: element differs",
               tl_dtype_name(dt), rank, lx, lo, plan.grouped);
      th_test_fail_at(__FILE__, __LINE__, what);
      break;
    }
  }
  tl_tensor_release(&xb);
  tl_tensor_release(&ob);
  return plan.grouped;
}

static void random_orders(tl_exec *exec, int cases, int *grouped, int *total) {
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  for (int t = 0; t < cases; t++) {
    int rank = (int)draw(3, 6);
    int64_t shape[TL_MAX_RANK];
    int64_t numel = 1;
    for (int k = 0; k < rank; k++) {
      shape[k] = draw(1, 20);
      if (numel * shape[k] > 200000) shape[k] = 2;
      numel *= shape[k];
    }
    int perm[TL_MAX_RANK];
    for (int k = 0; k < rank; k++) perm[k] = k;
    for (int k = rank - 1; k > 0; k--) {
      int j = (int)draw(0, k), tmp = perm[k];
      perm[k] = perm[j], perm[j] = tmp;
    }
    /* mostly a transpose of the dense axes (the grouped path's case), sometimes not */
    if (perm[0] == 0 && t % 8 != 0) perm[0] = perm[1], perm[1] = 0;
    if (shape[0] == 1) shape[0] = 3;
    if (shape[perm[0]] == 1) shape[perm[0]] = 2;
    *grouped += check_case(exec, dtypes[t % 4], rank, shape, perm, (int)draw(0, 3), t % 4 == 3);
    (*total)++;
  }
}

static void short_axes_at_this_isa(void) {
  rng = 0x243f6a8885a308d3ull; /* the same cases at every instruction set */
  int grouped = 0, total = 0;
  th_held h1;
  th_held_open(&h1, 1);
  /* the bench's 6-D order on a smaller cube, each dtype and layout */
  int64_t s6[6] = {6, 7, 5, 6, 4, 6};
  int p6[6] = {5, 3, 1, 4, 2, 0};
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  for (int d = 0; d < 4; d++)
    for (int lx = 0; lx < 4; lx++)
      for (int lo = 0; lo < 2; lo++) {
        grouped += check_case(h1.exec, dtypes[d], 6, s6, p6, lx, lo);
        total++;
      }
  random_orders(h1.exec, 160, &grouped, &total);
  th_held_close(&h1);
  /* two threads split the tiles between them (big enough to be split) */
  th_held h2;
  th_held_open(&h2, 2);
  int64_t c6[6] = {9, 10, 8, 9, 7, 8};
  for (int d = 0; d < 4; d++) {
    grouped += check_case(h2.exec, dtypes[d], 6, c6, p6, d % 3, d % 2);
    total++;
  }
  random_orders(h2.exec, 40, &grouped, &total);
  th_held_close(&h2);
  char what[96];
  snprintf(what, sizeof what, "only %d of %d cases took the grouped path", grouped, total);
  /* the path needs the source's dense axis forward (not reversed) and a dense chain in one
   * of the two operands; about half the random cases have both */
  if (grouped * 3 < total) th_test_fail_at(__FILE__, __LINE__, what);
}

/* 12^6 doubles (24 MB out) and complex doubles (48 MB): large enough for streaming stores,
 * rows 32-byte aligned; the complex one checks both parts of every element. */
static void permute_short_axes_streaming_output_matches_naive(void) {
  th_held h;
  th_held_open(&h, 2);
  int64_t s6[6] = {12, 12, 12, 12, 12, 12};
  int p6[6] = {5, 3, 1, 4, 2, 0};
  const tl_dtype dtypes[2] = {TL_F64, TL_C128};
  for (int t = 0; t < 2; t++) {
    const int parts = t == 0 ? 1 : 2;
    tl_tensor x, out;
    TH_CHECK_OK(tl_tensor_create(dtypes[t], 6, s6, &x));
    TH_CHECK_OK(tl_tensor_create(dtypes[t], 6, s6, &out));
    double *xd = x.data;
    for (int64_t i = 0; i < tl_tensor_numel(&x); i++) {
      xd[parts * i] = (double)i;
      if (parts == 2) xd[2 * i + 1] = -0.5 * (double)i;
    }
    tl_tensor permuted;
    TH_CHECK_OK(tl_tensor_permute_view(&x, p6, &permuted));
    tl__permute_plan plan;
    tl__permute_plan_make(&plan, &out, &permuted);
    TH_CHECK(plan.grouped);
    TH_CHECK(plan.stream == (tl__small_gemm_isa() >= 1)); /* streaming stores need AVX2 */
    TH_CHECK_OK(tl_permute_into(h.exec, &x, p6, &out));
    const double *od = out.data;
    int64_t idx[6] = {0}, bad = 0;
    for (int64_t i = 0; i < tl_tensor_numel(&out); i++) {
      int64_t want = 0, stride = 1;
      int64_t src[6];
      for (int k = 0; k < 6; k++) src[p6[k]] = idx[k];
      for (int k = 0; k < 6; k++) want += src[k] * stride, stride *= 12;
      bad += od[parts * i] != (double)want;
      if (parts == 2) bad += od[2 * i + 1] != -0.5 * (double)want;
      for (int k = 0; k < 6 && ++idx[k] == 12; k++) idx[k] = 0;
    }
    TH_CHECK(bad == 0);
    tl_tensor_release(&x);
    tl_tensor_release(&out);
  }
  th_held_close(&h);
}

/* A dense run shared by source and destination (the permutation keeps axis 0, of extent 1
 * to 8) with the other axes in random order: the plan folds a short run into the element
 * (permute_core.c's fold_short_run: elements of 4 to 64 bytes, tiled or grouped). Random
 * shapes of rank 3 to 6, every dtype and layout, and the einsum benchmark's bit-reversal
 * (2^10 x run, axes 1..10 reversed) for run 1 to 5; the test requires that a good share of
 * cases folded. Returns through the harness. */
static void shared_runs_at_this_isa(void) {
  rng = 0x9e3779b97f4a7c15ull;
  th_held h;
  th_held_open(&h, 1);
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  int folded = 0, total = 0;
  for (int t = 0; t < 160; t++) {
    int rank = (int)draw(3, 6);
    int64_t shape[TL_MAX_RANK], numel = 1;
    int perm[TL_MAX_RANK];
    for (int k = 0; k < rank; k++) {
      shape[k] = k == 0 ? draw(1, 8) : draw(1, 9);
      if (numel * shape[k] > 100000) shape[k] = 2;
      numel *= shape[k];
      perm[k] = k;
    }
    for (int k = rank - 1; k > 1; k--) { /* axis 0 stays first */
      int j = (int)draw(1, k), tmp = perm[k];
      perm[k] = perm[j], perm[j] = tmp;
    }
    tl_dtype dt = dtypes[t % 4];
    int lx = (int)draw(0, 3), lo = t % 4 == 3;
    tl_tensor xb, x, permuted, ob, out;
    int64_t oshape[TL_MAX_RANK];
    for (int k = 0; k < rank; k++) oshape[k] = shape[perm[k]];
    make_view(dt, rank, shape, lx, &xb, &x);
    make_view(dt, rank, oshape, lo, &ob, &out);
    TH_CHECK_OK(tl_tensor_permute_view(&x, perm, &permuted));
    tl__permute_plan plan;
    tl__permute_plan_make(&plan, &out, &permuted);
    folded += plan.loop.esize[0] != (int64_t)tl_dtype_size(dt);
    total++;
    tl_tensor_release(&xb);
    tl_tensor_release(&ob);
    check_case(h.exec, dt, rank, shape, perm, lx, lo);
  }
  for (int64_t run = 1; run <= 5; run++) {
    int64_t shape[11];
    int perm[11];
    shape[0] = run;
    perm[0] = 0;
    for (int k = 1; k < 11; k++) shape[k] = 2, perm[k] = 11 - k;
    for (int d = 0; d < 4; d++) check_case(h.exec, dtypes[d], 11, shape, perm, 0, 0);
  }
  th_held_close(&h);
  char what[96];
  fprintf(stderr, "%d of %d shared-run cases folded\n", folded, total);
  snprintf(what, sizeof what, "only %d of %d shared-run cases folded", folded, total);
  if (folded * 4 < total) th_test_fail_at(__FILE__, __LINE__, what);
}

static void permute_shared_short_runs_match_naive(void) {
  KT_FOR_EACH_PERMUTE_ISA(isa) shared_runs_at_this_isa();
}

/* every instruction set the CPU has: the portable, AVX2 and AVX-512 group kernels */
static void permute_short_axes_match_naive_in_every_dtype(void) {
  KT_FOR_EACH_PERMUTE_ISA(isa) short_axes_at_this_isa();
}

TH_TEST_MAIN(TH_CASE(permute_short_axes_match_naive_in_every_dtype),
             TH_CASE(permute_shared_short_runs_match_naive),
             TH_CASE(permute_short_axes_streaming_output_matches_naive))
