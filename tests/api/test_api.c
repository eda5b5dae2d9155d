/* tests/api/test_api.c: the calls issue 14 added: version, element access, owning reshape,
 * conversion, fill/identity/random, the order of fresh results, per-map lane caps, public
 * scratch scopes, and the truncation report of tl_svd_reported / tl_qrcp_reported. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "tenlane/tenlane.h"
#include "th_fixtures.h"
#include "th_test.h"

static void version_macros_match_the_library(void) {
  char text[32];
  snprintf(text, sizeof text, "%d.%d.%d", TL_VERSION_MAJOR, TL_VERSION_MINOR, TL_VERSION_PATCH);
  TH_CHECK(strcmp(text, TL_VERSION_STRING) == 0);
  TH_CHECK(strcmp(tl_version(), TL_VERSION_STRING) == 0);
}

static void tensor_get_set_round_trip_every_dtype(void) {
  int64_t shape[2] = {3, 4}, at[2] = {2, 1}, bad[2] = {3, 0};
  for (int d = 0; d < TL_DTYPE_COUNT; d++) {
    tl_tensor t;
    TH_CHECK_OK(tl_tensor_create((tl_dtype)d, 2, shape, &t));
    int complex = tl_dtype_is_complex((tl_dtype)d);
    tl_scalar v = {1.5, complex ? -2.25 : 0.0}, got;
    TH_CHECK_OK(tl_tensor_set(&t, at, v));
    TH_CHECK_OK(tl_tensor_get(&t, at, &got));
    TH_CHECK(got.re == 1.5 && got.im == (complex ? -2.25 : 0.0));
    /* the element sits where the strides say (column-major: 2 + 1 * 3) */
    TH_CHECK(tl_tensor_element(&t, at) == (char *)t.data + 5 * tl_dtype_size((tl_dtype)d));
    TH_CHECK_STATUS(tl_tensor_get(&t, bad, &got), TL_E_SHAPE);
    TH_CHECK(strstr(tl_last_message(), "tl_tensor_get: index[0] is 3") != NULL);
    if (!complex) {
      tl_scalar imag = {0.0, 1.0};
      TH_CHECK_STATUS(tl_tensor_set(&t, at, imag), TL_E_DTYPE);
    }
    tl_tensor_release(&t);
  }
}

static void reshape_move_takes_ownership(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t shape[2] = {2, 6}, flat[1] = {12}, cube[3] = {2, 3, 2};
  tl_tensor a;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &a));
  TH_CHECK_OK(tl_random_into(h.exec, 7, &a));
  double first = ((double *)a.data)[5];
  void *buffer = a.owned;
  tl_tensor v;
  TH_CHECK_OK(tl_tensor_reshape_move(&a, 1, flat, &v));
  TH_CHECK(v.owned == buffer && a.owned == NULL && a.data == NULL && v.shape[0] == 12);
  TH_CHECK(((double *)v.data)[5] == first);
  TH_CHECK_OK(tl_tensor_reshape_move(&v, 3, cube, &v)); /* in place */
  TH_CHECK(v.owned == buffer && v.rank == 3);
  tl_tensor view;
  TH_CHECK_OK(tl_tensor_slice(&v, 0, 0, 1, 1, &view));
  TH_CHECK_STATUS(tl_tensor_reshape_move(&view, 1, flat, &a), TL_E_INVALID);
  TH_CHECK_STATUS(tl_tensor_reshape_move(&v, 1, shape, &a), TL_E_SHAPE);
  TH_CHECK(v.owned == buffer);
  tl_tensor_release(&v);
  th_held_close(&h);
}

static void convert_every_dtype_pair(void) {
  th_held h;
  th_held_open(&h, 2);
  int64_t shape[2] = {5, 3};
  for (int from = 0; from < TL_DTYPE_COUNT; from++) {
    tl_tensor x;
    TH_CHECK_OK(tl_tensor_create((tl_dtype)from, 2, shape, &x));
    TH_CHECK_OK(tl_random_into(h.exec, 11, &x));
    for (int to = 0; to < TL_DTYPE_COUNT; to++) {
      tl_tensor y;
      TH_CHECK_OK(tl_convert(h.exec, (tl_dtype)to, &x, &y));
      TH_CHECK(y.dtype == (tl_dtype)to && y.rank == 2);
      int single = to == TL_F32 || to == TL_C64 || from == TL_F32 || from == TL_C64;
      for (int64_t i = 0; i < 5; i++) {
        for (int64_t j = 0; j < 3; j++) {
          int64_t idx[2] = {i, j};
          tl_scalar a, b;
          TH_CHECK_OK(tl_tensor_get(&x, idx, &a));
          TH_CHECK_OK(tl_tensor_get(&y, idx, &b));
          double tol = single ? 1e-7 : 0.0;
          TH_CHECK(fabs(a.re - b.re) <= tol);
          TH_CHECK(fabs((tl_dtype_is_complex((tl_dtype)to) ? a.im : 0.0) - b.im) <= tol);
        }
      }
      tl_tensor_release(&y);
    }
    tl_tensor_release(&x);
  }
  /* a broadcast input into a strided output */
  double one[1] = {4.0};
  tl_tensor s = th_vec_f64(one, 1), out;
  int64_t wide[1] = {6};
  TH_CHECK_OK(tl_tensor_create(TL_C128, 1, wide, &out));
  TH_CHECK_OK(tl_convert_into(h.exec, &s, &out));
  TH_CHECK(((double *)out.data)[10] == 4.0 && ((double *)out.data)[11] == 0.0);
  TH_CHECK_STATUS(tl_convert(h.exec, (tl_dtype)9, &s, &out), TL_E_DTYPE);
  tl_tensor_release(&out);
  th_held_close(&h);
}

static void fill_identity_random_write_what_they_say(void) {
  th_held h;
  th_held_open(&h, 2);
  int64_t shape[2] = {4, 6};
  tl_tensor m, r;
  TH_CHECK_OK(tl_tensor_create(TL_C64, 2, shape, &m));
  TH_CHECK_OK(tl_fill_into(h.exec, (tl_scalar){2.0, -1.0}, &m));
  TH_CHECK(((float *)m.data)[46] == 2.0f && ((float *)m.data)[47] == -1.0f);
  TH_CHECK_OK(tl_identity_into(h.exec, &m));
  for (int64_t i = 0; i < 4; i++) {
    for (int64_t j = 0; j < 6; j++) {
      tl_scalar v;
      TH_CHECK_OK(tl_tensor_get(&m, (int64_t[2]){i, j}, &v));
      TH_CHECK(v.re == (i == j ? 1.0 : 0.0) && v.im == 0.0);
    }
  }
  /* random: same seed, same values whatever the layout; another seed differs */
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F64, 2, shape, &r));
  tl_tensor c;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &c));
  TH_CHECK_OK(tl_random_into(h.exec, 42, &r));
  TH_CHECK_OK(tl_random_into(h.exec, 42, &c));
  double sum = 0.0;
  int same = 1;
  for (int64_t i = 0; i < 4; i++) {
    for (int64_t j = 0; j < 6; j++) {
      tl_scalar a, b;
      TH_CHECK_OK(tl_tensor_get(&r, (int64_t[2]){i, j}, &a));
      TH_CHECK_OK(tl_tensor_get(&c, (int64_t[2]){i, j}, &b));
      same = same && a.re == b.re;
      TH_CHECK(a.re >= -1.0 && a.re < 1.0);
      sum += fabs(a.re);
    }
  }
  TH_CHECK(same && sum > 1.0);
  TH_CHECK_OK(tl_random_into(h.exec, 43, &c));
  TH_CHECK(((double *)c.data)[0] != ((double *)r.data)[0]);
  int64_t three[3] = {2, 2, 2};
  tl_tensor t3;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 3, three, &t3));
  TH_CHECK_STATUS(tl_identity_into(h.exec, &t3), TL_E_SHAPE);
  tl_tensor_release(&t3);
  tl_tensor_release(&m);
  tl_tensor_release(&r);
  tl_tensor_release(&c);
  th_held_close(&h);
}

static void fresh_results_follow_the_surface_order(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t shape[2] = {3, 5};
  tl_tensor a, sum, u, s, vt;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &a));
  TH_CHECK_OK(tl_random_into(h.exec, 3, &a));
  TH_CHECK_OK(tl_add(h.exec, &a, &a, &sum));
  TH_CHECK(tl_tensor_is_col_major(&sum) && !tl_tensor_is_row_major(&sum));
  tl_tensor_release(&sum);
  TH_CHECK_OK(tl_exec_set_order(h.exec, TL_ORDER_ROW_MAJOR));
  TH_CHECK_OK(tl_add(h.exec, &a, &a, &sum));
  TH_CHECK(tl_tensor_is_row_major(&sum) && sum.offset == 0);
  tl_scalar x, y;
  TH_CHECK_OK(tl_tensor_get(&a, (int64_t[2]){2, 3}, &x));
  TH_CHECK_OK(tl_tensor_get(&sum, (int64_t[2]){2, 3}, &y));
  TH_CHECK(y.re == 2.0 * x.re);
  TH_CHECK_OK(tl_svd(h.exec, NULL, &a, &u, &s, &vt, NULL));
  TH_CHECK(tl_tensor_is_row_major(&u) && tl_tensor_is_row_major(&vt));
  TH_CHECK_STATUS(tl_exec_set_order(h.exec, (tl_order)5), TL_E_INVALID);
  tl_tensor_release(&a);
  tl_tensor_release(&sum);
  tl_tensor_release(&u);
  tl_tensor_release(&s);
  tl_tensor_release(&vt);
  th_held_close(&h);
}

typedef struct lanes_seen {
  atomic_int items[4];
} lanes_seen;

static int note_lane(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)item;
  atomic_fetch_add(&((lanes_seen *)arg)->items[lane_index], 1);
  return 0;
}

static void map_ex_caps_the_lanes(void) {
  th_held h;
  th_held_open(&h, 2);
  for (int cap = 0; cap <= 3; cap++) {
    lanes_seen seen = {0};
    tl_map_options options = {sizeof(tl_map_options), cap};
    tl_map_outcome outcome;
    TH_CHECK_OK(tl_map_ex(h.session, &options, 64, note_lane, &seen, &outcome));
    TH_CHECK(outcome.items_done == 64);
    TH_CHECK(atomic_load(&seen.items[0]) + atomic_load(&seen.items[1]) == 64);
    if (cap == 1) TH_CHECK(atomic_load(&seen.items[1]) == 0);
  }
  tl_map_options bad = {sizeof(tl_map_options), -1};
  TH_CHECK_STATUS(tl_map_ex(h.session, &bad, 4, note_lane, NULL, NULL), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "tl_map_ex") == tl_last_message());
  th_held_close(&h);
}

typedef struct scratch_check {
  double *lane_block[2];
  void *first_item_block[2];
  int failures;
} scratch_check;

static int use_scratch(tl_exec *exec, size_t item, int lane_index, void *arg) {
  scratch_check *check = arg;
  if (check->lane_block[lane_index] == NULL) {
    void *p;
    if (tl_exec_scratch(exec, 64 * sizeof(double), TL_SCRATCH_LANE, &p) != TL_OK) return 1;
    check->lane_block[lane_index] = p;
    for (int i = 0; i < 64; i++) check->lane_block[lane_index][i] = (double)lane_index;
  }
  /* the lane block survives every item */
  for (int i = 0; i < 64; i++) {
    if (check->lane_block[lane_index][i] != (double)lane_index) check->failures++;
  }
  void *item_block;
  if (tl_exec_scratch(exec, 4096, TL_SCRATCH_ITEM, &item_block) != TL_OK) return 2;
  memset(item_block, 0x5a, 4096);
  /* item scratch is reclaimed after each item: every item gets the same block back */
  if (check->first_item_block[lane_index] == NULL) check->first_item_block[lane_index] = item_block;
  if (item_block != check->first_item_block[lane_index]) check->failures++;
  (void)item;
  return 0;
}

static void exec_scratch_item_and_lane_scopes(void) {
  th_held h;
  th_held_open(&h, 2);
  scratch_check check;
  /* warm up until both lanes have taken items (a lane's arena grows at its first scratch) */
  int both = 0;
  for (int round = 0; round < 200 && !both; round++) {
    memset(&check, 0, sizeof check);
    TH_CHECK_OK(tl_map(h.session, 200, use_scratch, &check, NULL));
    TH_CHECK(check.failures == 0);
    both = check.lane_block[0] != NULL && check.lane_block[1] != NULL;
  }
  void *p;
  TH_CHECK_STATUS(tl_exec_scratch(h.exec, 64, TL_SCRATCH_ITEM, &p), TL_E_UNAVAILABLE);
  TH_CHECK(strstr(tl_exec_message(h.exec), "tl_exec_scratch") != NULL);
  /* a second map allocates nothing: the arenas kept their memory */
  memset(&check, 0, sizeof check);
  uint64_t before = tl_allocation_count();
  TH_CHECK_OK(tl_map(h.session, 200, use_scratch, &check, NULL));
  TH_CHECK(check.failures == 0);
  /* (a lane that never took an item in the warm-up may still grow its arena here) */
  if (both) TH_CHECK(tl_allocation_count() == before);
  th_held_close(&h);
}

static void svd_and_qrcp_report_the_discarded_weight(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t shape[2] = {12, 9};
  for (int d = 0; d < TL_DTYPE_COUNT; d++) {
    tl_tensor a, u, s, vt, q, r, full_u, full_s, full_vt;
    TH_CHECK_OK(tl_tensor_create((tl_dtype)d, 2, shape, &a));
    TH_CHECK_OK(tl_random_into(h.exec, 5 + d, &a));
    tl_truncation keep4 = {sizeof(tl_truncation), 4, 0.0, 0.0};
    tl_truncation_report report;
    TH_CHECK_OK(tl_svd_reported(h.exec, &keep4, &a, &u, &s, &vt, &report));
    TH_CHECK_OK(tl_svd(h.exec, NULL, &a, &full_u, &full_s, &full_vt, NULL));
    double total = 0.0, dropped = 0.0;
    for (int64_t i = 0; i < 9; i++) {
      tl_scalar v;
      TH_CHECK_OK(tl_tensor_get(&full_s, &i, &v));
      total += v.re * v.re;
      if (i >= 4) dropped += v.re * v.re;
    }
    double tol = (d == TL_F32 || d == TL_C64) ? 1e-4 : 1e-10;
    TH_CHECK(report.rank == 4 && s.shape[0] == 4);
    TH_CHECK(fabs(report.total_weight - total) <= tol * total);
    TH_CHECK(fabs(report.discarded_weight - dropped) <= tol * total);
    TH_CHECK(dropped > 0.01 * total);
    int64_t perm[9];
    TH_CHECK_OK(tl_qrcp_reported(h.exec, &keep4, &a, &q, &r, perm, &report));
    /* the residual of the kept factors is what the report says was dropped */
    tl_tensor ap, qr, diff, norm;
    TH_CHECK_OK(tl_tensor_create((tl_dtype)d, 2, shape, &ap));
    for (int64_t j = 0; j < 9; j++) {
      tl_tensor src, dst;
      TH_CHECK_OK(tl_tensor_select(&a, 1, perm[j], &src));
      TH_CHECK_OK(tl_tensor_select(&ap, 1, j, &dst));
      TH_CHECK_OK(tl_copy_into(h.exec, &src, &dst));
    }
    TH_CHECK_OK(tl_gemm(h.exec, &q, &r, &qr));
    TH_CHECK_OK(tl_sub(h.exec, &ap, &qr, &diff));
    TH_CHECK_OK(tl_reduce(h.exec, TL_REDUCE_NORM2, &diff, 2, (int[2]){0, 1}, &norm));
    tl_scalar residual;
    TH_CHECK_OK(tl_tensor_get(&norm, NULL, &residual));
    TH_CHECK(report.rank == 4);
    TH_CHECK(fabs(residual.re * residual.re - report.discarded_weight) <= 10 * tol * total);
    TH_CHECK(fabs(report.total_weight - total) <= tol * total);
    tl_tensor *all[] = {&a,      &u,       &s,  &vt, &q,    &r,   &full_u,
                        &full_s, &full_vt, &ap, &qr, &diff, &norm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tl_tensor_release(all[i]);
  }
  th_held_close(&h);
}

/* qrcp's discarded weight is summed from the dropped part itself: exactly 0 when nothing is
 * dropped, and on a rank-3 matrix plus a 1e-9 perturbation it matches the squared residual
 * ||a[:, perm] - q r||^2 to a relative 1e-3, where ||a||^2 - ||r||^2 was off by about
 * machine epsilon times ||a||^2 (1e-14 against a true 1e-16). */
static void qrcp_discarded_weight_is_accurate_in_the_dropped_part(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t shape[2] = {12, 9};
  tl_dtype dtypes[2] = {TL_F64, TL_C128};
  for (int d = 0; d < 2; d++) {
    tl_tensor x, y, noise, a, q, r, ap, qr, diff, norm;
    TH_CHECK_OK(tl_tensor_create(dtypes[d], 2, (int64_t[2]){12, 3}, &x));
    TH_CHECK_OK(tl_tensor_create(dtypes[d], 2, (int64_t[2]){3, 9}, &y));
    TH_CHECK_OK(tl_tensor_create(dtypes[d], 2, shape, &noise));
    TH_CHECK_OK(tl_random_into(h.exec, 11, &x));
    TH_CHECK_OK(tl_random_into(h.exec, 12, &y));
    TH_CHECK_OK(tl_random_into(h.exec, 13, &noise));
    TH_CHECK_OK(tl_gemm(h.exec, &x, &y, &a));
    for (int64_t i = 0; i < 12; i++)
      for (int64_t j = 0; j < 9; j++) {
        int64_t at[2] = {i, j};
        tl_scalar v, e;
        TH_CHECK_OK(tl_tensor_get(&a, at, &v));
        TH_CHECK_OK(tl_tensor_get(&noise, at, &e));
        v.re += 1e-9 * e.re;
        v.im += 1e-9 * e.im;
        TH_CHECK_OK(tl_tensor_set(&a, at, v));
      }
    tl_truncation_report report;
    int64_t perm[9];
    /* nothing dropped: exactly zero, whatever ||a|| is */
    TH_CHECK_OK(tl_qrcp_reported(h.exec, NULL, &a, &q, &r, perm, &report));
    TH_CHECK(report.rank == 9 && report.discarded_weight == 0.0);
    tl_tensor_release(&q);
    tl_tensor_release(&r);
    tl_truncation keep3 = {sizeof(tl_truncation), 3, 0.0, 0.0};
    TH_CHECK_OK(tl_qrcp_reported(h.exec, &keep3, &a, &q, &r, perm, &report));
    TH_CHECK_OK(tl_tensor_create(dtypes[d], 2, shape, &ap));
    for (int64_t j = 0; j < 9; j++) {
      tl_tensor src, dst;
      TH_CHECK_OK(tl_tensor_select(&a, 1, perm[j], &src));
      TH_CHECK_OK(tl_tensor_select(&ap, 1, j, &dst));
      TH_CHECK_OK(tl_copy_into(h.exec, &src, &dst));
    }
    TH_CHECK_OK(tl_gemm(h.exec, &q, &r, &qr));
    TH_CHECK_OK(tl_sub(h.exec, &ap, &qr, &diff));
    TH_CHECK_OK(tl_reduce(h.exec, TL_REDUCE_NORM2, &diff, 2, (int[2]){0, 1}, &norm));
    tl_scalar residual;
    TH_CHECK_OK(tl_tensor_get(&norm, NULL, &residual));
    double res2 = residual.re * residual.re;
    TH_CHECK(report.rank == 3);
    TH_CHECK(res2 > 1e-19 && res2 < 1e-14); /* the perturbation's size: 1e-18 * ~100 entries */
    TH_CHECK(fabs(report.discarded_weight - res2) <= 1e-3 * res2);
    tl_tensor *all[] = {&x, &y, &noise, &a, &q, &r, &ap, &qr, &diff, &norm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tl_tensor_release(all[i]);
  }
  th_held_close(&h);
}

/* A config or options struct not filled by its _init (size 0) is refused with a message that
 * names the call, the type and the _init to use; each _init sets size to the struct's size. */
static void unsized_options_are_refused(void) {
  tl_context_config cc;
  tl_context_config_init(&cc);
  TH_CHECK(cc.size == sizeof cc);
  cc.size = 0;
  tl_context *ctx = NULL;
  TH_CHECK_STATUS(tl_context_create(&cc, &ctx), TL_E_INVALID);
  TH_CHECK(ctx == NULL);
  TH_CHECK(strstr(tl_last_message(), "tl_context_create: tl_context_config.size is 0") != NULL);
  TH_CHECK(strstr(tl_last_message(), "tl_context_config_init") != NULL);

  tl_pool_config pc;
  tl_pool_config_init(&pc);
  TH_CHECK(pc.size == sizeof pc);
  pc.size = sizeof pc - 1;
  tl_pool *pool = NULL;
  TH_CHECK_STATUS(tl_pool_create(&pc, &pool), TL_E_INVALID);
  TH_CHECK(pool == NULL && strstr(tl_last_message(), "tl_pool_config.size") != NULL);

  th_held h;
  th_held_open(&h, 2);
  tl_map_options mo;
  tl_map_options_init(&mo);
  TH_CHECK(mo.size == sizeof mo && mo.max_lanes == 0);
  mo.size = 0;
  tl_map_outcome outcome;
  TH_CHECK_STATUS(tl_map_ex(h.session, &mo, 4, note_lane, NULL, &outcome), TL_E_INVALID);
  TH_CHECK(outcome.status == TL_E_INVALID && strstr(outcome.message, "tl_map_options") != NULL);

  int64_t shape[2] = {4, 3};
  tl_tensor a, s, out;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &a));
  TH_CHECK_OK(tl_random_into(h.exec, 3, &a));
  tl_truncation cut;
  tl_truncation_init(&cut);
  TH_CHECK(cut.size == sizeof cut && cut.max_rank == 0 && cut.rtol == 0.0 && cut.atol == 0.0);
  cut.size = 0;
  TH_CHECK_STATUS(tl_svd(h.exec, &cut, &a, NULL, &s, NULL, NULL), TL_E_INVALID);
  TH_CHECK(strstr(tl_exec_message(h.exec), "tl_truncation.size is 0") != NULL);

  tl_einsum_options eo;
  tl_einsum_options_init(&eo);
  TH_CHECK(eo.size == sizeof eo && eo.path_kind == TL_EINSUM_PATH_AUTO);
  const tl_tensor *ops[1] = {&a};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, (int64_t[2]){3, 4}, &out));
  TH_CHECK_OK(tl_einsum_ex_into(h.exec, &eo, "ij->ji", 1, ops, &out));
  eo.size = 0;
  TH_CHECK_STATUS(tl_einsum_ex_into(h.exec, &eo, "ij->ji", 1, ops, &out), TL_E_INVALID);
  TH_CHECK(strstr(tl_exec_message(h.exec), "tl_einsum_ex_into: tl_einsum_options.size") != NULL);
  tl_tensor_release(&a);
  tl_tensor_release(&out);
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(version_macros_match_the_library), TH_CASE(unsized_options_are_refused),
             TH_CASE(tensor_get_set_round_trip_every_dtype), TH_CASE(reshape_move_takes_ownership),
             TH_CASE(convert_every_dtype_pair), TH_CASE(fill_identity_random_write_what_they_say),
             TH_CASE(fresh_results_follow_the_surface_order), TH_CASE(map_ex_caps_the_lanes),
             TH_CASE(exec_scratch_item_and_lane_scopes),
             TH_CASE(svd_and_qrcp_report_the_discarded_weight),
             TH_CASE(qrcp_discarded_weight_is_accurate_in_the_dropped_part))
