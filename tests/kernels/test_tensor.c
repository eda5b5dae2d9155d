/* tests/kernels/test_tensor.c: the tensor value (creation, validation, views, reshape
 * views, overlap) and the pure kernel cores (loop plans, the transpose tile), called
 * directly without a session. */
#include "kt_support.h"
#include "kernels/kernels.h"

static void tensor_create_wrap_release_and_strides(void) {
  int64_t shape[3] = {2, 3, 4};
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_create(TL_C128, 3, shape, &t));
  TH_CHECK(t.owned == t.data && t.strides[0] == 1 && t.strides[1] == 2 && t.strides[2] == 6);
  TH_CHECK(tl_tensor_numel(&t) == 24 && tl_tensor_is_col_major(&t) && !tl_tensor_is_row_major(&t));
  for (int i = 0; i < 24 * 2; i++) TH_CHECK(((double *)t.data)[i] == 0.0); /* zeroed */
  tl_tensor_release(&t);
  TH_CHECK(t.data == NULL && t.owned == NULL && t.rank == 0);
  tl_tensor_release(&t); /* twice is harmless */
  tl_tensor_release(NULL);
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F32, 3, shape, &t));
  TH_CHECK(t.strides[2] == 1 && t.strides[1] == 4 && t.strides[0] == 12 &&
           tl_tensor_is_row_major(&t));
  tl_tensor_release(&t);
  double buffer[24];
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, shape, NULL, buffer, 0, &t));
  TH_CHECK(t.owned == NULL && t.data == buffer && tl_tensor_is_col_major(&t));
  TH_CHECK_OK(tl_tensor_wrap_row_major(TL_F64, 3, shape, buffer, &t));
  TH_CHECK(tl_tensor_is_row_major(&t));
  int64_t idx[3] = {1, 2, 3};
  TH_CHECK(tl_tensor_element(&t, idx) == (void *)&buffer[12 + 8 + 3]);
  /* rank 0 and empty tensors */
  TH_CHECK_OK(tl_tensor_create(TL_F64, 0, NULL, &t));
  TH_CHECK(tl_tensor_numel(&t) == 1);
  tl_tensor_release(&t);
  int64_t empty[2] = {0, 5};
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 2, empty, NULL, NULL, 0, &t));
  TH_CHECK(tl_tensor_numel(&t) == 0);
  TH_CHECK(tl_dtype_size(TL_C64) == 8 && tl_dtype_size((tl_dtype)9) == 0);
  TH_CHECK(strcmp(tl_dtype_name(TL_C128), "c128") == 0 && tl_dtype_real(TL_C64) == TL_F32);
}

static void tensor_validate_rejects_malformed_tensors(void) {
  double buffer[8];
  int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
  tl_tensor t, untouched;
  memset(&untouched, 0x5a, sizeof untouched);
  t = untouched;
  int64_t bad_rank_shape[TL_MAX_RANK + 1];
  for (int i = 0; i < TL_MAX_RANK + 1; i++) bad_rank_shape[i] = 1;
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, TL_MAX_RANK + 1, bad_rank_shape, &t), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, -1, shape, &t), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_create((tl_dtype)7, 2, shape, &t), TL_E_DTYPE);
  TH_CHECK(strstr(tl_last_message(), "dtype") != NULL);
  int64_t negative[2] = {2, -3};
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, 2, negative, &t), TL_E_SHAPE);
  TH_CHECK(strstr(tl_last_message(), "-3") != NULL);
  int64_t huge[2] = {INT64_MAX / 2, 4};
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, 2, huge, &t), TL_E_SHAPE);
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, 2, NULL, &t), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_create(TL_F64, 2, shape, NULL), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_wrap(TL_F64, 2, shape, strides, NULL, 0, &t), TL_E_INVALID);
  int64_t wild[2] = {INT64_MAX / 4, INT64_MAX / 4};
  TH_CHECK_STATUS(tl_tensor_wrap(TL_F64, 2, shape, wild, buffer, 0, &t), TL_E_SHAPE);
  TH_CHECK_STATUS(tl_tensor_wrap(TL_F64, 2, shape, strides, buffer, INT64_MAX, &t), TL_E_SHAPE);
  TH_CHECK(memcmp(&t, &untouched, sizeof t) == 0); /* every failure left *out alone */
  TH_CHECK_STATUS(tl_tensor_validate(NULL, "q"), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "q") != NULL);
  TH_CHECK(tl_tensor_numel(NULL) == -1);
}

static void tensor_views_slice_permute_select_broadcast(void) {
  double buffer[60];
  for (int i = 0; i < 60; i++) buffer[i] = i;
  int64_t shape[3] = {3, 4, 5};
  tl_tensor t, v;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, shape, NULL, buffer, 0, &t));
  TH_CHECK_OK(tl_tensor_slice(&t, 1, 3, -5, -2, &v)); /* axis 1: 3, 1 */
  TH_CHECK(v.shape[1] == 2 && v.strides[1] == -6 && v.owned == NULL);
  int64_t i0[3] = {2, 1, 4};
  TH_CHECK(*(double *)tl_tensor_element(&v, i0) == 2 + 3 * 1 + 12 * 4);
  TH_CHECK_OK(tl_tensor_slice(&t, 2, 1, 100, 2, &v)); /* 1, 3 */
  TH_CHECK(v.shape[2] == 2 && v.offset == 12);
  TH_CHECK_STATUS(tl_tensor_slice(&t, 3, 0, 1, 1, &v), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_slice(&t, 0, 0, 1, 0, &v), TL_E_INVALID);
  int perm[3] = {2, 0, 1};
  TH_CHECK_OK(tl_tensor_permute_view(&t, perm, &v));
  TH_CHECK(v.shape[0] == 5 && v.strides[0] == 12 && v.shape[2] == 4 && v.strides[2] == 3);
  int badperm[3] = {0, 0, 1};
  TH_CHECK_STATUS(tl_tensor_permute_view(&t, badperm, &v), TL_E_INVALID);
  TH_CHECK_OK(tl_tensor_transpose_view(&t, 0, 2, &v));
  TH_CHECK(v.shape[0] == 5 && v.shape[2] == 3);
  TH_CHECK_OK(tl_tensor_reverse_view(&t, &v));
  TH_CHECK(v.shape[0] == 5 && v.strides[2] == 1);
  TH_CHECK_OK(tl_tensor_select(&t, 1, 2, &v));
  TH_CHECK(v.rank == 2 && v.offset == 6 && v.shape[1] == 5);
  TH_CHECK_STATUS(tl_tensor_select(&t, 1, 4, &v), TL_E_INVALID);
  TH_CHECK_OK(tl_tensor_unsqueeze(&t, 1, &v));
  TH_CHECK(v.rank == 4 && v.shape[1] == 1);
  int64_t target[4] = {3, 4, 5, 2};
  TH_CHECK_OK(tl_tensor_broadcast_view(&t, 4, target, &v));
  TH_CHECK(v.strides[3] == 0 && tl_tensor_self_overlap(&v));
  int64_t bad_target[3] = {3, 2, 5};
  TH_CHECK_STATUS(tl_tensor_broadcast_view(&t, 3, bad_target, &v), TL_E_SHAPE);
}

static void tensor_reshape_view_only_when_strides_allow(void) {
  double buffer[60];
  int64_t shape[3] = {3, 4, 5};
  tl_tensor t, v;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, shape, NULL, buffer, 0, &t));
  int64_t s2[2] = {12, 5}, s4[4] = {3, 1, 20, 1}, s1[1] = {60}, bad[2] = {7, 9};
  TH_CHECK_OK(tl_tensor_reshape_view(&t, 2, s2, &v));
  TH_CHECK(v.strides[0] == 1 && v.strides[1] == 12);
  TH_CHECK_OK(tl_tensor_reshape_view(&t, 4, s4, &v));
  TH_CHECK(v.strides[2] == 3);
  TH_CHECK_OK(tl_tensor_reshape_view(&t, 1, s1, &v));
  TH_CHECK_STATUS(tl_tensor_reshape_view(&t, 2, bad, &v), TL_E_SHAPE);
  /* a slice along axis 1 keeps 0 and 1 mergeable, but not 1 and 2 */
  tl_tensor sl;
  TH_CHECK_OK(tl_tensor_slice(&t, 1, 0, 2, 1, &sl)); /* 3 x 2 x 5, strides 1 3 12 */
  int64_t m01[2] = {6, 5}, m12[2] = {3, 10};
  TH_CHECK_OK(tl_tensor_reshape_view(&sl, 2, m01, &v));
  TH_CHECK_STATUS(tl_tensor_reshape_view(&sl, 2, m12, &v), TL_E_UNAVAILABLE);
  /* row-major merges only in reverse */
  TH_CHECK_OK(tl_tensor_wrap_row_major(TL_F64, 3, shape, buffer, &t));
  TH_CHECK_STATUS(tl_tensor_reshape_view(&t, 2, s2, &v), TL_E_UNAVAILABLE);
}

static void tensor_overlap_and_self_overlap(void) {
  double buffer[100];
  int64_t shape[2] = {4, 5};
  tl_tensor a, b, c;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, buffer, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, buffer, 19, &b)); /* shares element 19 */
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, buffer, 20, &c));
  TH_CHECK(tl_tensor_overlap(&a, &b) && !tl_tensor_overlap(&a, &c));
  int64_t collide[2] = {1, 2};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, collide, buffer, 0, &b));
  TH_CHECK(tl_tensor_self_overlap(&b) && !tl_tensor_self_overlap(&a));
  int64_t neg[2] = {-1, -4};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, neg, buffer, 99, &b));
  TH_CHECK(!tl_tensor_self_overlap(&b) && !tl_tensor_overlap(&a, &b));
  int64_t empty[2] = {0, 5};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, empty, NULL, buffer, 0, &b));
  TH_CHECK(!tl_tensor_overlap(&a, &b));
}

static void kernel_core_loop_plan_merges_and_visits_every_index(void) {
  /* a column-major output and a row-major input of 4 x 6: merging impossible; a dense
   * pair of 3-D tensors merges to one axis */
  float x[24], y[24];
  int64_t shape[3] = {2, 3, 4};
  tl_tensor a, b;
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 3, shape, NULL, x, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 3, shape, NULL, y, 0, &b));
  const tl_tensor *ts[2] = {&a, &b};
  tl__loop loop;
  tl__loop_plan(&loop, 2, ts);
  TH_CHECK(loop.rank == 1 && loop.inner == 24 && loop.rows == 1);
  TH_CHECK_OK(tl_tensor_wrap_row_major(TL_F32, 3, shape, y, &b));
  tl__loop_plan(&loop, 2, ts);
  TH_CHECK(loop.rank == 3 && loop.inner == 2 && loop.rows == 12);
  for (int i = 0; i < 24; i++) y[i] = (float)i, x[i] = -1;
  tl__permute_plan plan;
  tl__permute_plan_make(&plan, &a, &b);
  tl__permute_run(&plan, 0, plan.blocks);
  TH_NUM_FOR_EACH(idx, 3, shape) TH_CHECK(th_num_get(&a, idx) == th_num_get(&b, idx));
}

static void kernel_core_transpose_tile_moves_bits_exactly(void) {
  /* every element size, sizes around the micro-tile edges, NaN payloads preserved */
  for (int es = 4; es <= 16; es *= 2)
    for (int r = 1; r <= 19; r += 3)
      for (int c = 1; c <= 21; c += 4) {
        unsigned char src[32 * 32 * 16], dst[32 * 32 * 16];
        for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 131 + 7);
        memset(dst, 0xee, sizeof dst);
        int64_t ss = r + 3, ds = c + 1;
        tl__transpose_tile(es, r, c, (const char *)src, ss, (char *)dst, ds);
        for (int i = 0; i < r; i++)
          for (int j = 0; j < c; j++)
            TH_CHECK(memcmp(dst + (size_t)(j + i * ds) * es, src + (size_t)(i + j * ss) * es,
                            (size_t)es) == 0);
        TH_CHECK(dst[(size_t)(c + (r - 1) * ds) * es] == 0xee); /* the gap is untouched */
      }
}

TH_TEST_MAIN(TH_CASE(tensor_create_wrap_release_and_strides),
             TH_CASE(tensor_validate_rejects_malformed_tensors),
             TH_CASE(tensor_views_slice_permute_select_broadcast),
             TH_CASE(tensor_reshape_view_only_when_strides_allow),
             TH_CASE(tensor_overlap_and_self_overlap),
             TH_CASE(kernel_core_loop_plan_merges_and_visits_every_index),
             TH_CASE(kernel_core_transpose_tile_moves_bits_exactly))
