/* tests/reliability/test_extremes.c: the class behind issue 28's integer holes. Every public
 * entry point that takes a size, count, step, offset, index or extent is called with values
 * at and next to 0, SIZE_MAX, INT64_MIN and INT64_MAX (and 2^31, 2^62, 2^63), alone and in
 * combination. Each call must return a status with a message, or a result that is right: a
 * tensor that validates and, for a view, stays inside the memory of its source. A crash, a
 * hang (the harness alarm) or a wrong result fails the case. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel_common.h"
#include "tenlane/alloc.h"
#include "tenlane/einsum.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
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
      TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, empty_shape, strides, data, signed_edges[b], &empty));
      for (int64_t index = 0; index < 3; index++) {
        if (!refused(tl_tensor_select(&empty, 0, index, &view), "tl_tensor_select"))
          check_view(&empty, &view, "tl_tensor_select");
      }
      if (!refused(tl_tensor_slice(&empty, 0, 1, 3, 1, &view), "tl_tensor_slice"))
        check_view(&empty, &view, "tl_tensor_slice");
      int64_t merged[2] = {3, 0};
      if (!refused(tl_tensor_reshape_view(&empty, 2, merged, &view), "tl_tensor_reshape_view"))
        check_view(&empty, &view, "tl_tensor_reshape_view");
    }
  }
  TH_CHECK(failures == 0);
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

TH_TEST_MAIN(TH_CASE(extremes_tensor_headers), TH_CASE(extremes_views_and_access),
             TH_CASE(extremes_routes_with_shapes), TH_CASE(extremes_counts))
