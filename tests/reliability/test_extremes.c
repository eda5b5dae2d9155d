/* tests/reliability/test_extremes.c: the class behind issue 28's integer holes. Every public
 * entry point that takes a size, count, step, offset, index or extent is called with values
 * at and next to 0, SIZE_MAX, INT64_MIN and INT64_MAX (and 2^31, 2^62, 2^63), alone and in
 * combination. Each call must return a status with a message, or a result that is right: a
 * tensor that validates and, for a view, stays inside the memory of its source. A crash, a
 * hang (the harness alarm) or a wrong result fails the case.
 *
 * Public calls of the headers under include/tenlane/ that take a size, count, step, offset, index,
 * extent, rank cap, pivot or team, and where they are fed the edges: tensor.h:
 * tl_tensor_create(_row_major), tl_tensor_wrap(_row_major), tl_strides_col_major,
 *     tl_strides_row_major (extremes_tensor_headers); tl_tensor_select, tl_tensor_slice,
 *     tl_tensor_broadcast_view, tl_tensor_reshape_view, tl_tensor_reshape_move,
 *     tl_tensor_get, tl_tensor_set, and views of an empty tensor with extreme strides
 *     (extremes_views_and_access); slice steps near +-2^63 (test_edges).
 *   ops.h: tl_reshape; einsum.h: tl_einsum_path (extremes_routes_with_shapes).
 *   map.h: tl_map, tl_map_ex (extremes_counts); tl_phase_map and tl_map_options.max_lanes at
 *     INT_MIN..INT_MAX (extremes_phase_map_counts).
 *   linalg.h: tl_lu_solve_into with every pivot entry at every edge, tl_truncation.max_rank
 *     for tl_svd and tl_qrcp; session.h: tl_exec_set_team (extremes_linalg_integers).
 *   session.h: tl_exec_scratch sizes; pool.h: tl_pool_parallel_for counts and grains
 *     (test_edges: edges_scratch_sizes_never_wrap, edges_parallel_for_huge_counts).
 *   context.h: tl_context_config.scratch_limit and threads (fuzz_api_calls draws them from
 *     the same table of edges). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/arena.h"
#include "rel_common.h"
#include "tenlane/alloc.h"
#include <limits.h>

#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "th_fixtures.h"
#include "th_test.h"

static const int64_t signed_edges[] = {INT64_MIN,
                                       INT64_MIN + 1,
                                       -((int64_t)1 << 62),
                                       -((int64_t)1 << 31),
                                       -2,
                                       -1,
                                       0,
                                       1,
                                       2,
                                       3,
                                       ((int64_t)1 << 31),
                                       ((int64_t)1 << 32) + 1,
                                       ((int64_t)1 << 62),
                                       INT64_MAX - 1,
                                       INT64_MAX};
#define NS (sizeof signed_edges / sizeof signed_edges[0])

static int failures;

/* Whether the span of (shape, strides, offset), each extent of 0 taken as 1, fits int64 in
 * elements and in bytes of `es`: computed in 128 bits, independently of the library. */
static int span_fits(int rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t es) {
  __int128 lo = offset, hi = offset;
  for (int k = 0; k < rank; k++) {
    __int128 reach = (__int128)(shape[k] > 0 ? shape[k] - 1 : 1) * strides[k];
    if (reach > 0)
      hi += reach;
    else
      lo += reach;
    if (lo < INT64_MIN || hi > INT64_MAX) return 0;
  }
  return lo * es >= INT64_MIN && (hi + 1) * es <= INT64_MAX && (hi - lo + 1) * es <= INT64_MAX;
}

/* A refusal must carry a message; success is checked by the caller. */
static int refused(tl_status status, const char *call) {
  if (status == TL_OK) return 0;
  if (tl_last_message()[0] == '\0') {
    fprintf(stderr, "%s: %s without a message\n", call, tl_status_name(status));
    failures++;
  }
  return 1;
}

/* A view of `src` must validate and touch only elements src touches. */
static void check_view(const tl_tensor *src, const tl_tensor *view, const char *call) {
  if (tl_tensor_validate(view, "view") != TL_OK) {
    fprintf(stderr, "%s: TL_OK with an invalid view (%s)\n", call, tl_last_message());
    failures++;
    return;
  }
  int64_t lo, hi, src_lo, src_hi;
  if (!tl_tensor_extent_range(view, &lo, &hi) || !tl_tensor_extent_range(src, &src_lo, &src_hi)) {
    fprintf(stderr, "%s: TL_OK with a view whose range overflows\n", call);
    failures++;
    return;
  }
  if (lo <= hi && (lo < src_lo || hi > src_hi)) {
    fprintf(stderr, "%s: the view reaches [%lld, %lld] outside [%lld, %lld]\n", call, (long long)lo,
            (long long)hi, (long long)src_lo, (long long)src_hi);
    failures++;
  }
}

/* The machine's allocator refuses what no test machine has (above 1 GiB), rather than
 * handing out 96 GiB of overcommitted pages for a 2^31 x 3 tensor and zeroing them. */
static void *capped_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (size > ((size_t)1 << 30)) return NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void capped_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

/* tl_tensor_create / _row_major / wrap / wrap_row_major / strides with extreme extents,
 * strides and offsets (rank 1 and 2). Created tensors are released. */
static void extremes_tensor_headers(void) {
  static double data[64];
  /* A span whose two ends each fit int64 in bytes, 2^63 + 8 bytes apart (a fake base of 2^62
   * keeps both ends inside the address space): refused, since kernels step through byte
   * offsets relative to one end. Before the width check, wrap took it. */
  {
    int64_t two[1] = {2}, wide[1] = {((int64_t)1 << 60) + 1};
    void *fake = (void *)((uintptr_t)1 << 62);
    tl_tensor t;
    TH_CHECK_STATUS(tl_tensor_wrap(TL_F64, 1, two, wide, fake, -((int64_t)1 << 59), &t),
                    TL_E_SHAPE);
    TH_CHECK(strstr(tl_last_message(), "wider than int64") != NULL);
    wide[0] = (int64_t)1 << 59; /* 2^62 bytes apart: taken */
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, two, wide, fake, -((int64_t)1 << 59), &t));
  }
  const tl_allocator capped = {capped_alloc, capped_free, NULL};
  tl_allocator_set(&capped);
  failures = 0;
  for (size_t a = 0; a < NS; a++) {
    for (size_t b = 0; b < NS; b++) {
      int64_t shape[2] = {signed_edges[a], signed_edges[b]};
      int64_t strides[2];
      (void)tl_strides_col_major(2, shape, strides);
      (void)tl_strides_row_major(2, shape, strides);
      tl_tensor t;
      for (int row = 0; row < 2; row++) {
        tl_status status = row ? tl_tensor_create_row_major(TL_C128, 2, shape, &t)
                               : tl_tensor_create(TL_F32, 2, shape, &t);
        if (!refused(status, "tl_tensor_create")) {
          if (tl_tensor_validate(&t, "t") != TL_OK) failures++;
          tl_tensor_release(&t);
        }
      }
      for (size_t c = 0; c < NS; c++) {
        int64_t shape1[1] = {signed_edges[a] < 0 ? 2 : signed_edges[a] % 5};
        int64_t strides1[1] = {signed_edges[b]};
        tl_status status =
            tl_tensor_wrap(TL_F64, 1, shape1, strides1, data + 32, signed_edges[c], &t);
        if (!refused(status, "tl_tensor_wrap") && tl_tensor_validate(&t, "t") != TL_OK) failures++;
        status = tl_tensor_wrap(TL_F64, 2, shape, strides1[0] == 0 ? NULL : shape, data,
                                signed_edges[c], &t);
        if (!refused(status, "tl_tensor_wrap") && tl_tensor_validate(&t, "t") != TL_OK) failures++;
      }
      tl_status status = tl_tensor_wrap_row_major(TL_F64, 2, shape, data, &t);
      if (!refused(status, "tl_tensor_wrap_row_major") && tl_tensor_validate(&t, "t") != TL_OK)
        failures++;
    }
  }
  tl_allocator_set(NULL);
  TH_CHECK(failures == 0);
}

/* Views: slice (done exactly in test_edges), select, broadcast, reshape, reshape_move, and
 * element access, on a 3 x 4 column-major tensor. */
static void extremes_views_and_access(void) {
  failures = 0;
  double data[12];
  for (int i = 0; i < 12; i++) data[i] = i;
  int64_t shape[2] = {3, 4};
  tl_tensor src;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, data, 0, &src));
  tl_tensor view;
  for (size_t a = 0; a < NS; a++) {
    for (int axis = -1; axis <= 2; axis++) {
      if (!refused(tl_tensor_select(&src, axis, signed_edges[a], &view), "tl_tensor_select"))
        check_view(&src, &view, "tl_tensor_select");
    }
    for (size_t b = 0; b < NS; b++) {
      int64_t pair[2] = {signed_edges[a], signed_edges[b]};
      if (!refused(tl_tensor_slice(&src, 1, pair[0], pair[1], 1, &view), "tl_tensor_slice"))
        check_view(&src, &view, "tl_tensor_slice");
      if (!refused(tl_tensor_broadcast_view(&src, 2, pair, &view), "tl_tensor_broadcast_view"))
        check_view(&src, &view, "tl_tensor_broadcast_view");
      int64_t three[3] = {pair[0], pair[1], 3};
      if (!refused(tl_tensor_broadcast_view(&src, 3, three, &view), "tl_tensor_broadcast_view"))
        check_view(&src, &view, "tl_tensor_broadcast_view");
      if (!refused(tl_tensor_reshape_view(&src, 2, pair, &view), "tl_tensor_reshape_view")) {
        check_view(&src, &view, "tl_tensor_reshape_view");
        if (tl_tensor_numel(&view) != 12) failures++;
      }
      if (!refused(tl_tensor_reshape_view(&src, 3, three, &view), "tl_tensor_reshape_view"))
        check_view(&src, &view, "tl_tensor_reshape_view");
      tl_tensor owned;
      TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &owned));
      if (!refused(tl_tensor_reshape_move(&owned, 2, pair, &view), "tl_tensor_reshape_move")) {
        if (tl_tensor_numel(&view) != 12) failures++;
        tl_tensor_release(&view);
      } else {
        tl_tensor_release(&owned);
      }
      tl_scalar value = {0.0, 0.0};
      tl_status status = tl_tensor_get(&src, pair, &value);
      int inside = pair[0] >= 0 && pair[0] < 3 && pair[1] >= 0 && pair[1] < 4;
      if (!refused(status, "tl_tensor_get")) {
        if (!inside || value.re != (double)(pair[0] + 3 * pair[1])) failures++;
      } else if (inside) {
        failures++;
      }
      status = tl_tensor_set(&src, pair, tl_scalar_real(value.re));
      if (refused(status, "tl_tensor_set") == inside) failures++;
    }
  }
  /* An empty source (an axis of extent 0) validates whatever its strides are, so every view
   * of it meets extreme strides: the fuzzer found select overflowing on one. */
  for (size_t a = 0; a < NS; a++) {
    for (size_t b = 0; b < NS; b++) {
      int64_t empty_shape[3] = {3, 0, 2};
      int64_t strides[3] = {signed_edges[a], signed_edges[b], signed_edges[(a + b) % NS]};
      tl_tensor empty;
      /* The span of an empty tensor is bounded as if each extent of 0 were 2: wrap accepts
       * it exactly when that span, in bytes, fits int64 (it took every stride before issue
       * 28; until 2026-12-04 the stride of the empty axis itself was not bounded). */
      int fits = span_fits(3, empty_shape, strides, signed_edges[b], 8);
      tl_status wrapped =
          tl_tensor_wrap(TL_F64, 3, empty_shape, strides, data, signed_edges[b], &empty);
      if (refused(wrapped, "tl_tensor_wrap") == fits) {
        fprintf(stderr,
                "tl_tensor_wrap of an empty tensor, strides %lld %lld %lld offset %lld: %s\n",
                (long long)strides[0], (long long)strides[1], (long long)strides[2],
                (long long)signed_edges[b], tl_status_name(wrapped));
        failures++;
      }
      if (wrapped != TL_OK) continue;
      for (int axis = 0; axis < 3; axis++) {
        if (!refused(tl_tensor_select(&empty, axis, 0, &view), "tl_tensor_select"))
          check_view(&empty, &view, "tl_tensor_select");
        if (!refused(tl_tensor_slice(&empty, axis, -1, INT64_MIN, -7, &view), "tl_tensor_slice"))
          check_view(&empty, &view, "tl_tensor_slice");
      }
      const int perm[3] = {2, 0, 1};
      if (!refused(tl_tensor_permute_view(&empty, perm, &view), "tl_tensor_permute_view"))
        check_view(&empty, &view, "tl_tensor_permute_view");
      if (!refused(tl_tensor_reverse_view(&empty, &view), "tl_tensor_reverse_view"))
        check_view(&empty, &view, "tl_tensor_reverse_view");
      if (!refused(tl_tensor_unsqueeze(&empty, 3, &view), "tl_tensor_unsqueeze"))
        check_view(&empty, &view, "tl_tensor_unsqueeze");
      for (int64_t index = 0; index < 3; index++) {
        if (!refused(tl_tensor_select(&empty, 0, index, &view), "tl_tensor_select"))
          check_view(&empty, &view, "tl_tensor_select");
      }
      if (!refused(tl_tensor_slice(&empty, 0, 1, 3, 1, &view), "tl_tensor_slice"))
        check_view(&empty, &view, "tl_tensor_slice");
      /* The count of an empty tensor is 0 in any axis order: reversed, the large extents come
       * first and their product alone overflows (the fuzzer found reverse_view failing). */
      int64_t wide_shape[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40}, wide_strides[3] = {1, 1, 1};
      tl_tensor wide;
      TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, wide_shape, wide_strides, data, 0, &wide));
      TH_CHECK_OK(tl_tensor_reverse_view(&wide, &view));
      TH_CHECK(tl_tensor_numel(&view) == 0);
      TH_CHECK_OK(tl_tensor_validate(&view, "reversed"));
      /* A stride of INT64_MIN has no magnitude in int64: self_overlap answers without
       * negating it (the fuzzer found the negation). */
      int64_t two[1] = {2}, min_stride[1] = {INT64_MIN};
      tl_tensor odd = wide;
      odd.rank = 1;
      odd.shape[0] = two[0];
      odd.strides[0] = min_stride[0];
      TH_CHECK(tl_tensor_self_overlap(&odd) == 1);
      int64_t merged[2] = {3, 0};
      if (!refused(tl_tensor_reshape_view(&empty, 2, merged, &view), "tl_tensor_reshape_view"))
        check_view(&empty, &view, "tl_tensor_reshape_view");
    }
  }
  TH_CHECK(failures == 0);
}

/* Empty tensors whose other extents are huge. numpy refuses to make 2^40 x 2^40 x 0 ("array
 * is too big": the bytes of the nonzero extents are bounded in any order), and tenlane does
 * the same in both axis orders; it took 0 x 2^40 x 2^40 before, with strides whose span
 * overflows. What it makes, every consumer takes: views, permute, copy, einsum. */
static void extremes_empty_with_huge_extents(void) {
  const int64_t big = (int64_t)1 << 40, mid = (int64_t)1 << 20;
  const int64_t refused_shapes[][3] = {{big, big, 0}, {0, big, big}, {big, 0, big}};
  tl_tensor t, view;
  for (int r = 0; r < 3; r++) {
    for (int row = 0; row < 2; row++) {
      tl_status status = row ? tl_tensor_create_row_major(TL_F64, 3, refused_shapes[r], &t)
                             : tl_tensor_create(TL_F64, 3, refused_shapes[r], &t);
      TH_CHECK_STATUS(status, TL_E_SHAPE);
      TH_CHECK(strstr(tl_last_message(), "nonzero extents") != NULL);
    }
  }
  /* 2^20 x 2^20 x 0 of f64 is 2^43 bytes of nonzero extents: made, empty, no data read. */
  const int64_t shapes[][3] = {{mid, mid, 0}, {0, mid, mid}, {mid, 0, mid}};
  th_held held;
  th_held_open(&held, 1);
  for (int r = 0; r < 3; r++) {
    for (int row = 0; row < 2; row++) {
      tl_status status = row ? tl_tensor_create_row_major(TL_F64, 3, shapes[r], &t)
                             : tl_tensor_create(TL_F64, 3, shapes[r], &t);
      TH_CHECK_OK(status);
      TH_CHECK(tl_tensor_numel(&t) == 0);
      TH_CHECK_OK(tl_tensor_validate(&t, "t"));
      TH_CHECK_OK(tl_tensor_reverse_view(&t, &view));
      TH_CHECK(tl_tensor_numel(&view) == 0);
      const int perm[3] = {2, 0, 1};
      tl_tensor permuted, copy, summed, moved;
      TH_CHECK_OK(tl_permute(held.exec, &t, perm, &permuted));
      TH_CHECK(tl_tensor_numel(&permuted) == 0 && permuted.shape[0] == shapes[r][2]);
      TH_CHECK_OK(tl_tensor_create(TL_F64, 3, shapes[r], &copy));
      TH_CHECK_OK(tl_copy_into(held.exec, &t, &copy));
      const tl_tensor *ops[1] = {&t};
      TH_CHECK_OK(tl_einsum(held.exec, "ijk->kji", 1, ops, &moved));
      TH_CHECK(moved.shape[0] == shapes[r][2] && moved.shape[2] == shapes[r][0]);
      /* Summing out the empty axis gives zeros only where the result is small: here the
       * empty axis is kept, so the result is empty as well. */
      int kept = shapes[r][2] == 0 ? 2 : (shapes[r][0] == 0 ? 0 : 1);
      const char *specs[3] = {"ijk->i", "ijk->j", "ijk->k"};
      TH_CHECK_OK(tl_einsum(held.exec, specs[kept], 1, ops, &summed));
      TH_CHECK(summed.rank == 1 && summed.shape[0] == 0);
      /* A reshape of the empty tensor to a shape whose own strides overflow is refused. */
      const int64_t wide[3] = {0, big, big};
      TH_CHECK_STATUS(tl_tensor_reshape_view(&t, 3, wide, &view), TL_E_SHAPE);
      TH_CHECK(tl_last_message()[0] != '\0');
      tl_tensor_release(&permuted);
      tl_tensor_release(&copy);
      tl_tensor_release(&summed);
      tl_tensor_release(&moved);
      tl_tensor_release(&t);
    }
  }
  th_held_close(&held);
}

/* Queries that take any tensor, validated or not: layout tests and overlap must answer
 * without overflowing (UBSan) on extents and offsets at the edges. */
static void extremes_queries_on_unchecked_tensors(void) {
  static double cell[8];
  tl_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = TL_C128;
  t.rank = 3;
  t.data = cell;
  const int64_t quarter = (int64_t)1 << 62;
  /* Column-major up to axis 1, where step * extent leaves int64. */
  t.shape[0] = quarter;
  t.shape[1] = 4;
  t.shape[2] = 2;
  t.strides[0] = 1;
  t.strides[1] = quarter;
  t.strides[2] = 1;
  TH_CHECK(tl_tensor_is_col_major(&t) == 0);
  t.strides[2] = quarter;
  t.strides[1] = 2;
  t.strides[0] = 1;
  t.shape[0] = 2;
  t.shape[1] = 4;
  t.shape[2] = quarter;
  TH_CHECK(tl_tensor_is_row_major(&t) == 0);
  /* Element ranges that fit int64 but whose bytes (16 per element) do not: overlap answers
   * conservatively instead of overflowing the byte products. */
  tl_tensor a = t, b = t;
  a.rank = b.rank = 1;
  a.shape[0] = b.shape[0] = 2;
  a.strides[0] = b.strides[0] = 1;
  a.offset = quarter;
  b.offset = -quarter;
  TH_CHECK(tl_tensor_overlap(&a, &b) == 1);
  TH_CHECK(tl_tensor_overlap(&b, &a) == 1);
  a.offset = b.offset = 0;
  TH_CHECK(tl_tensor_overlap(&a, &b) == 1);
  b.data = cell + 4; /* a covers cell[0..3] (two c128 elements) */
  TH_CHECK(tl_tensor_overlap(&a, &b) == 0);
}

/* Routes that take shapes: tl_reshape and tl_einsum_path with extreme extents. */
static void extremes_routes_with_shapes(void) {
  failures = 0;
  th_held held;
  th_held_open(&held, 1);
  double data[12] = {0};
  int64_t shape[2] = {3, 4};
  tl_tensor src;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, data, 0, &src));
  for (size_t a = 0; a < NS; a++) {
    for (size_t b = 0; b < NS; b++) {
      int64_t pair[2] = {signed_edges[a], signed_edges[b]};
      tl_tensor out;
      if (!refused(tl_reshape(held.exec, 2, pair, &src, &out), "tl_reshape")) {
        if (tl_tensor_numel(&out) != 12) failures++;
        tl_tensor_release(&out);
      }
      const int ranks[2] = {2, 2};
      int64_t other[2] = {pair[1], 5};
      const int64_t *shapes[2] = {pair, other};
      tl_einsum_path_info info;
      (void)refused(tl_einsum_path(TL_EINSUM_PATH_AUTO, "ij,jk->ik", 2, ranks, shapes, &info),
                    "tl_einsum_path");
    }
  }
  th_held_close(&held);
  TH_CHECK(failures == 0);
}

/* Counts: maps of up to SIZE_MAX items that stop at an early failing item, and of 0 items. */
static int fail_third(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)lane_index, (void)arg;
  return item >= 2 ? 5 : 0;
}

/* The arena's own contract (src/exec/arena.h): scratch aligned to any power of two up to
 * 4096, whatever was taken before, on fresh and reused chunks. The audit of arena.c found
 * that the offset inside a chunk was aligned, not the address (chunk data is only 64-aligned),
 * so 128- to 4096-byte alignments came out 64-aligned. Written over in full (ASan checks the
 * bounds). */
static void extremes_arena_alignment(void) {
  tl__arena arena;
  tl__arena_init(&arena, SIZE_MAX);
  static const size_t sizes[] = {1, 3, 100, 4095, 70000};
  for (int round = 0; round < 2; round++) { /* the second round reuses the chunks */
    for (size_t align = 1; align <= 4096; align *= 2) {
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        void *p = NULL;
        TH_CHECK_OK(tl__arena_alloc(&arena, sizes[s], align, &p));
        if (((uintptr_t)p & (align - 1)) != 0)
          fprintf(stderr, "align %zu, %zu bytes: %p\n", align, sizes[s], p);
        TH_CHECK(((uintptr_t)p & (align - 1)) == 0);
        memset(p, 0xab, sizes[s]);
      }
    }
    tl__arena_reset(&arena);
  }
  void *p = NULL;
  TH_CHECK_STATUS(tl__arena_alloc(&arena, 8, 8192, &p), TL_E_INVALID);
  TH_CHECK_STATUS(tl__arena_alloc(&arena, SIZE_MAX - 100, 4096, &p), TL_E_SCRATCH_LIMIT);
  tl__arena_release(&arena);
}

/* tl_contract_into with an empty contracted group whose other extents multiply past int64
 * (inputs of stride 0, so the span is 0 and they validate): the audit of contract.c found
 * the K extent multiplied unchecked before the empty K was noticed (a signed overflow, which
 * UBSan reports in build-asan). Now c = 0 as for any empty K. (M, N and batch extents come
 * from c, a valid output: their product is bounded by its span.) */
static void extremes_contract_empty_huge_extents(void) {
  th_held held;
  th_held_open(&held, 1);
  double storage[1] = {7.0};
  const int64_t big = (int64_t)1 << 32;
  int64_t zeros[4] = {0, 0, 0, 0};
  tl_tensor a, b, c;
  /* c (2) = sum over K = (2^32, 2^32, 0) of a b: empty K, so c = 0. */
  int64_t a2_shape[4] = {2, big, big, 0}, b2_shape[3] = {big, big, 0}, c2_shape[1] = {2};
  int a2_labels[4] = {0, 1, 2, 3}, b2_labels[3] = {1, 2, 3}, c2_labels[1] = {0};
  double out[2] = {5.0, 5.0};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 4, a2_shape, zeros, storage, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, b2_shape, zeros, storage, 0, &b));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, c2_shape, NULL, out, 0, &c));
  TH_CHECK_OK(tl_contract_into(held.exec, c2_labels, &a, a2_labels, &b, b2_labels, &c));
  TH_CHECK(out[0] == 0.0 && out[1] == 0.0);
  th_held_close(&held);
}

/* A tensor header over an address that is never dereferenced when the call refuses. */
static void *fake_at(int shift) { return (void *)((uintptr_t)1 << shift); }

/* A refusal with a message naming a byte count (the checked product that refused it). */
static int refused_on_bytes(tl_status status) {
  const char *m = tl_last_message();
  if (status == TL_OK || m == NULL || strstr(m, "bytes") == NULL) {
    fprintf(stderr, "expected a refusal naming bytes, got %s (%s)\n", tl_status_name(status),
            m != NULL ? m : "no message");
    return 0;
  }
  return 1;
}

/* The dense copy of a broadcast operand (contract.c's pack_operand): a f32 2^31 x 2^31 with
 * stride 0 is a valid a of 2^62 elements over one float, and its copy is 2^64 bytes. The
 * byte count was an unchecked size_t product: it wrapped to 0, a 64-byte scratch block was
 * taken and the copy wrote 2^62 elements into it (heap overflow, then a segfault). Now the
 * product is checked and the call refused with the bytes named. Both labels are summed here
 * (a full contraction with a b of the same view): a label of c along which a is broadcast
 * is no longer copied at all (contract_constant), so only a summed one still needs the copy.
 * b and c sit over addresses that are never read or written: the refusal comes first. */
static void extremes_contract_broadcast_copy_bytes(void) {
  th_held held;
  th_held_open(&held, 1);
  float storage[1] = {1.0f};
  const int64_t big = (int64_t)1 << 31;
  int64_t a_shape[2] = {big, big}, a_strides[2] = {0, 0};
  int a_labels[2] = {0, 1}, b_labels[2] = {0, 1};
  tl_tensor a, b, c;
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 2, a_shape, a_strides, storage, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 2, a_shape, a_strides, fake_at(42), 0, &b));
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 0, NULL, NULL, fake_at(44), 0, &c));
  TH_CHECK(refused_on_bytes(tl_contract_into(held.exec, NULL, &a, a_labels, &b, b_labels, &c)));
  th_held_close(&held);
}

/* contract.c's blocked route (a large a not in GEMM form, b and c in it) with a contracted
 * extent that only a fake address allows: c128 c (3, 2, 2) = sum over k = (2^60 + 8) / 9 of
 * a b; a has stride 0 along k and along the last label (1.5 x 2^60 elements over 6), b is
 * 2^56.8 elements over an address never read (above 2^48, clear of the stack and heap). The
 * route's tests multiplied c's extents by a's row bytes unchecked: a block of c's first two
 * labels, 6 x k x 16 bytes (2^63.4), wrapped negative and passed as "fits", the next label's
 * product wrapped too (signed overflows, UBSan in build-asan), and the scratch of three
 * threads' slots (a context of 2 workers with team 2) wrapped to 256 bytes plus the complex
 * kernel's packing space: the gather wrote 2^63 bytes into it (a segfault). Now every
 * product is checked (saturated for the tests): the block is c's first label alone, its
 * honest size is asked for and refused, on one thread and on three slots. */
static void extremes_contract_blocked_huge_extents(void) {
  /* A scratch limit of 1 GiB: the honest requests are refused by the arena before the
   * allocator sees them (ASan aborts on an allocation past 2^40 bytes). */
  th_held held;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  config.scratch_limit = (size_t)1 << 30;
  TH_CHECK_OK(tl_context_create(&config, &held.ctx));
  TH_CHECK_OK(tl_session_open(held.ctx, tl_owner_new(), TL_NOWAIT, &held.session));
  held.exec = tl_session_exec(held.session);
  const int64_t k = (int64_t)128102389400760776; /* (2^60 + 8) / 9 */
  int64_t a_shape[4] = {k, 3, 2, 2}, a_strides[4] = {0, 1, 3, 0};
  int64_t b_shape[1] = {k}, c_shape[3] = {3, 2, 2};
  int a_labels[4] = {3, 0, 1, 2}, b_labels[1] = {3}, c_labels[3] = {0, 1, 2};
  double a_storage[12] = {0}, c_storage[24] = {0};
  tl_tensor a, b, c;
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 4, a_shape, a_strides, a_storage, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 1, b_shape, NULL, fake_at(48), 0, &b));
  TH_CHECK_OK(tl_tensor_wrap(TL_C128, 3, c_shape, NULL, c_storage, 0, &c));
  for (int team = 1; team <= 2; team++) {
    TH_CHECK_OK(tl_exec_set_team(held.exec, team));
    TH_CHECK(
        refused_on_bytes(tl_contract_into(held.exec, c_labels, &a, a_labels, &b, b_labels, &c)));
  }
  th_held_close(&held);
}

static void extremes_counts(void) {
  const size_t counts[] = {0, 1, 3, SIZE_MAX / 2, SIZE_MAX - 1, SIZE_MAX};
  for (int budget = 1; budget <= 2; budget++) {
    th_held held;
    th_held_open(&held, budget);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      tl_map_outcome outcome;
      tl_status status = tl_map(held.session, counts[c], fail_third, NULL, &outcome);
      if (counts[c] <= 2) {
        TH_CHECK_OK(status);
      } else {
        TH_CHECK_STATUS(status, TL_E_LANE);
        TH_CHECK(outcome.failed_item == 2 && outcome.items_done >= 2);
      }
      tl_map_options options = {sizeof(tl_map_options), 1};
      status = tl_map_ex(held.session, &options, counts[c], fail_third, NULL, &outcome);
      TH_CHECK(counts[c] <= 2 ? status == TL_OK : status == TL_E_LANE);
    }
    th_held_close(&held);
  }
}

/* tl_phase_map inside an open phase, with the same counts as tl_map. */
typedef struct phase_counts {
  int bad; /* calls whose status or outcome was wrong */
} phase_counts;

static void map_in_phase(tl_phase *phase, void *arg) {
  phase_counts *pc = arg;
  const size_t counts[] = {0, 1, 2, 3, SIZE_MAX / 2, SIZE_MAX - 1, SIZE_MAX};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    tl_map_outcome outcome;
    tl_status status = tl_phase_map(phase, counts[c], fail_third, NULL, &outcome);
    int right = counts[c] <= 2 ? status == TL_OK
                               : status == TL_E_LANE && outcome.failed_item == 2 &&
                                     outcome.items_done >= 2 && tl_last_message()[0] != '\0';
    if (!right) {
      fprintf(stderr, "tl_phase_map of %zu items: %s (%s)\n", counts[c], tl_status_name(status),
              tl_last_message());
      pc->bad++;
    }
  }
}

static void extremes_phase_map_counts(void) {
  for (int budget = 1; budget <= 2; budget++) {
    th_held held;
    th_held_open(&held, budget);
    phase_counts pc = {0};
    TH_CHECK_OK(tl_session_phase(held.session, map_in_phase, &pc));
    TH_CHECK(pc.bad == 0);
    /* Lane caps at the ends of int: below 0 refused with a message, above the budget every
     * lane. */
    const int caps[] = {INT_MIN, -1, 0, 1, 2, INT_MAX};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
      tl_map_options options;
      tl_map_options_init(&options);
      options.max_lanes = caps[c];
      tl_map_outcome outcome;
      tl_status status = tl_map_ex(held.session, &options, 5, fail_third, NULL, &outcome);
      TH_CHECK(caps[c] < 0 ? status == TL_E_INVALID : status == TL_E_LANE);
      TH_CHECK(tl_last_message()[0] != '\0');
    }
    th_held_close(&held);
  }
}

/* Linear algebra's integers: the pivots tl_lu_solve_into takes from the caller, truncation
 * ranks, team requests. A 3 x 3 system; every pivot entry in turn takes every edge value. */
static void extremes_linalg_integers(void) {
  failures = 0;
  th_held held;
  th_held_open(&held, 2);
  double a_data[9] = {4, 1, 0, 1, 5, 2, 0, 2, 6}, b_data[3] = {1, 2, 3}, x_data[3];
  int64_t shape[2] = {3, 3}, vec[1] = {3};
  tl_tensor a, b, x, lu;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, a_data, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, vec, NULL, b_data, 0, &b));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, vec, NULL, x_data, 0, &x));
  int64_t pivots[3];
  TH_CHECK_OK(tl_lu(held.exec, &a, &lu, pivots));
  for (int at = 0; at < 3; at++) {
    for (size_t e = 0; e < NS; e++) {
      int64_t hostile[3] = {pivots[0], pivots[1], pivots[2]};
      hostile[at] = signed_edges[e];
      tl_status status = tl_lu_solve_into(held.exec, TL_NO_TRANS, &lu, hostile, &b, &x);
      int in_range = signed_edges[e] >= 0 && signed_edges[e] < 3;
      if (!refused(status, "tl_lu_solve_into") && !in_range) {
        fprintf(stderr, "tl_lu_solve_into took pivot %lld at %d\n", (long long)signed_edges[e], at);
        failures++;
      }
    }
  }
  tl_tensor_release(&lu);
  for (size_t e = 0; e < NS; e++) {
    tl_truncation truncation;
    tl_truncation_init(&truncation);
    truncation.max_rank = signed_edges[e];
    tl_tensor u, s, vt, q, r;
    int64_t rank = -1, perm[3];
    tl_status status = tl_svd(held.exec, &truncation, &a, &u, &s, &vt, &rank);
    if (!refused(status, "tl_svd")) {
      int64_t want = signed_edges[e] > 0 && signed_edges[e] < 3 ? signed_edges[e] : 3;
      if (signed_edges[e] < 0 || rank != want) failures++;
      tl_tensor_release(&u);
      tl_tensor_release(&s);
      tl_tensor_release(&vt);
    }
    status = tl_qrcp(held.exec, &truncation, &a, &q, &r, perm, &rank);
    if (!refused(status, "tl_qrcp")) {
      if (signed_edges[e] < 0 || rank < 0 || rank > 3) failures++;
      for (int64_t j = 0; j < 3; j++)
        if (perm[j] < 0 || perm[j] >= 3) failures++;
      tl_tensor_release(&q);
      tl_tensor_release(&r);
    }
  }
  const int teams[] = {INT_MIN, -1, 0, 1, 2, 3, INT_MAX};
  for (size_t t = 0; t < sizeof teams / sizeof teams[0]; t++) {
    tl_status status = tl_exec_set_team(held.exec, teams[t]);
    if (refused(status, "tl_exec_set_team") != (teams[t] < 0)) failures++;
    tl_tensor lu2;
    int64_t piv[3];
    status = tl_lu(held.exec, &a, &lu2, piv);
    if (!refused(status, "tl_lu")) tl_tensor_release(&lu2);
  }
  TH_CHECK_OK(tl_exec_set_team(held.exec, 0));
  th_held_close(&held);
  TH_CHECK(failures == 0);
}

TH_TEST_MAIN(TH_CASE(extremes_tensor_headers), TH_CASE(extremes_views_and_access),
             TH_CASE(extremes_empty_with_huge_extents),
             TH_CASE(extremes_queries_on_unchecked_tensors), TH_CASE(extremes_routes_with_shapes),
             TH_CASE(extremes_counts), TH_CASE(extremes_arena_alignment),
             TH_CASE(extremes_contract_empty_huge_extents),
             TH_CASE(extremes_contract_broadcast_copy_bytes),
             TH_CASE(extremes_contract_blocked_huge_extents), TH_CASE(extremes_phase_map_counts),
             TH_CASE(extremes_linalg_integers))
