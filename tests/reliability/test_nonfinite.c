/* tests/reliability/test_nonfinite.c: NaN and infinity into the linear algebra routes,
 * LAPACK's argument errors, and int64_t outputs that overlap a call's tensors (issue 11,
 * items 1-3 and 11). A route that is handed NaN or infinity must return TL_E_NONFINITE
 * at once, naming itself, the argument and the first bad index, and write nothing; a
 * LAPACK argument error must come back as TL_E_PROVIDER naming the routine and the
 * argument, on whichever thread it happened; the process must never end or hang. The
 * binary registers an exit hook that fails any case that did not finish, because
 * LAPACK's own xerbla ends the process with status 0. */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "rel_common.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static volatile int case_finished;

static void fail_unfinished(void) {
  if (!case_finished) {
    fprintf(stderr,
            "FAIL: the process is ending before the case finished (exit from inside "
            "a provider)\n");
    _exit(1);
  }
}

static void begin_case(void) {
  case_finished = 0;
  atexit(fail_unfinished);
}

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

static tl_tensor matrix(tl_dtype dtype, int64_t m, int64_t n, uint64_t seed) {
  int64_t shape[2] = {m, n};
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_create(dtype, 2, shape, &t));
  rel_fill(&t, seed, m == n ? (double)n : 0.0);
  return t;
}

static void put(tl_tensor *t, int64_t i, int64_t j, double value) {
  int64_t idx[2] = {i, j};
  th_num_set_parts(t, idx, value, 0.0);
}

/* The message names the route first and the element's index. */
static void check_message(const char *route, const char *index) {
  const char *message = tl_last_message();
  if (strncmp(message, route, strlen(route)) != 0 || strstr(message, index) == NULL) {
    fprintf(stderr, "message \"%s\" should start with %s and name %s\n", message, route, index);
    TH_CHECK(0);
  }
}

/* Item 1: +-inf into tl_svd (full, values-only, truncated), every dtype, 40x40 and 130x90. */
static void nonfinite_inf_into_svd_returns(void) {
  begin_case();
  th_held held;
  th_held_open(&held, 1);
  const int64_t sizes[2][2] = {{40, 40}, {130, 90}};
  tl_truncation cut = {sizeof(tl_truncation), 5, 1e-6, 0.0};
  for (int d = 0; d < 4; d++) {
    for (int z = 0; z < 2; z++) {
      for (int form = 0; form < 3; form++) {
        int64_t m = sizes[z][0], n = sizes[z][1];
        tl_tensor a = matrix(dtypes[d], m, n, 7u + (uint64_t)d);
        put(&a, m / 2, n / 3, form == 1 ? -INFINITY : INFINITY);
        tl_tensor u, s, vt;
        int64_t rank = -7;
        memset(&s, 0xA5, sizeof s);
        rel_message_reset();
        tl_status status = tl_svd(held.exec, form == 2 ? &cut : NULL, &a, form == 1 ? NULL : &u, &s,
                                  form == 1 ? NULL : &vt, &rank);
        TH_CHECK_STATUS(status, TL_E_NONFINITE);
        char index[64];
        snprintf(index, sizeof index, "a[%lld, %lld]", (long long)(m / 2), (long long)(n / 3));
        check_message("tl_svd", index);
        TH_CHECK(rank == -7);
        TH_CHECK(strstr(tl_session_message(held.session), "tl_svd") != NULL);
        tl_tensor_release(&a);
      }
    }
  }
  rel_check_idle(held.ctx);
  th_held_close(&held);
  case_finished = 1;
}

/* Item 2: one +inf in a 3x5 or 5x3 matrix, SVD with vectors (LAPACK's bidiagonal QR loops
 * on it for ever). */
static void nonfinite_inf_small_svd_with_vectors_returns(void) {
  begin_case();
  th_held held;
  th_held_open(&held, 2);
  for (int d = 0; d < 4; d++) {
    for (int shape = 0; shape < 2; shape++) {
      int64_t m = shape ? 5 : 3, n = shape ? 3 : 5;
      for (int64_t at = 0; at < m * n; at += 4) {
        tl_tensor a = matrix(dtypes[d], m, n, 3u + (uint64_t)at);
        put(&a, at % m, at / m, INFINITY);
        tl_tensor u, s, vt;
        int64_t rank = -1;
        TH_CHECK_STATUS(tl_svd(held.exec, NULL, &a, &u, &s, &vt, &rank), TL_E_NONFINITE);
        tl_tensor_release(&a);
      }
    }
  }
  th_held_close(&held);
  case_finished = 1;
}

/* Item 3: one answer for NaN and for infinity in every linear algebra route: TL_E_NONFINITE
 * naming the argument, outputs untouched. */
static void nonfinite_one_policy_every_route(void) {
  begin_case();
  th_held held;
  th_held_open(&held, 2);
  const double bad_values[3] = {NAN, INFINITY, -INFINITY};
  for (int d = 0; d < 4; d++) {
    for (int v = 0; v < 3; v++) {
      double bad = bad_values[v];
      tl_dtype dtype = dtypes[d];
      tl_tensor a = matrix(dtype, 6, 6, 11u), b = matrix(dtype, 6, 2, 12u);
      put(&a, 4, 1, bad); /* lower triangle, below the diagonal */
      tl_tensor q, r, u, s, vt, w, vecs, lu, x;
      int64_t perm[6], pivots[6], rank = -3;
      tl_truncation cut = {sizeof(tl_truncation), 0, 1e-3, 0.0};
      TH_CHECK_STATUS(tl_qr(held.exec, &a, &q, &r), TL_E_NONFINITE);
      check_message("tl_qr", "a[4, 1]");
      /* tl_qr_into with dense column-major a, q and r factors in q: refused before then. */
      tl_tensor q_into = matrix(dtype, 6, 6, 16u), r_into = matrix(dtype, 6, 6, 17u);
      rel_watch qr_watch;
      rel_watch_init(&qr_watch);
      rel_watch_tensor(&qr_watch, &q_into);
      rel_watch_tensor(&qr_watch, &r_into);
      TH_CHECK_STATUS(tl_qr_into(held.exec, &a, &q_into, &r_into), TL_E_NONFINITE);
      check_message("tl_qr_into", "a[4, 1]");
      TH_CHECK(rel_watch_unchanged(&qr_watch));
      tl_tensor_release(&q_into);
      tl_tensor_release(&r_into);
      TH_CHECK_STATUS(tl_qrcp(held.exec, &cut, &a, &q, &r, perm, &rank), TL_E_NONFINITE);
      check_message("tl_qrcp", "a[4, 1]");
      TH_CHECK(rank == -3);
      TH_CHECK_STATUS(tl_qrcp(held.exec, NULL, &a, &q, &r, perm, &rank), TL_E_NONFINITE);
      TH_CHECK_STATUS(tl_svd(held.exec, NULL, &a, NULL, &s, NULL, &rank), TL_E_NONFINITE);
      check_message("tl_svd", "a[4, 1]");
      TH_CHECK_STATUS(tl_svd(held.exec, NULL, &a, &u, &s, &vt, &rank), TL_E_NONFINITE);
      TH_CHECK_STATUS(tl_eigh(held.exec, TL_LOWER, &a, &w, &vecs), TL_E_NONFINITE);
      check_message("tl_eigh", "a[4, 1]");
      TH_CHECK_STATUS(tl_eigh(held.exec, TL_LOWER, &a, &w, NULL), TL_E_NONFINITE);
      TH_CHECK_STATUS(tl_lu(held.exec, &a, &lu, pivots), TL_E_NONFINITE);
      check_message("tl_lu", "a[4, 1]");
      /* tl_lu_into with column-major a and lu factors in lu itself: refused before then. */
      tl_tensor lu_into = matrix(dtype, 6, 6, 15u);
      rel_watch lu_watch;
      rel_watch_init(&lu_watch);
      rel_watch_tensor(&lu_watch, &lu_into);
      TH_CHECK_STATUS(tl_lu_into(held.exec, &a, &lu_into, pivots), TL_E_NONFINITE);
      check_message("tl_lu_into", "a[4, 1]");
      TH_CHECK(rel_watch_unchanged(&lu_watch));
      tl_tensor_release(&lu_into);
      TH_CHECK_STATUS(tl_solve(held.exec, &a, &b, &x), TL_E_NONFINITE);
      check_message("tl_solve", "a[4, 1]");
      TH_CHECK_STATUS(
          tl_triangular_solve(held.exec, TL_LEFT, TL_LOWER, TL_NO_TRANS, TL_NON_UNIT, &a, &b, &x),
          TL_E_NONFINITE);
      check_message("tl_triangular_solve", "t[4, 1]");
      /* The triangle eigh and the triangular solve do not read: the bad value is ignored. */
      TH_CHECK_OK(tl_eigh(held.exec, TL_UPPER, &a, &w, NULL));
      tl_tensor_release(&w);
      TH_CHECK_OK(
          tl_triangular_solve(held.exec, TL_LEFT, TL_UPPER, TL_NO_TRANS, TL_NON_UNIT, &a, &b, &x));
      tl_tensor_release(&x);
      /* A bad right-hand side, and a bad factorization. */
      tl_tensor good = matrix(dtype, 6, 6, 13u);
      put(&b, 5, 1, bad);
      TH_CHECK_STATUS(tl_solve(held.exec, &good, &b, &x), TL_E_NONFINITE);
      check_message("tl_solve", "b[5, 1]");
      TH_CHECK_OK(tl_lu(held.exec, &good, &lu, pivots));
      tl_tensor x_into = matrix(dtype, 6, 2, 14u);
      rel_watch watch;
      rel_watch_init(&watch);
      rel_watch_tensor(&watch, &x_into);
      TH_CHECK_STATUS(tl_lu_solve_into(held.exec, TL_NO_TRANS, &lu, pivots, &b, &x_into),
                      TL_E_NONFINITE);
      check_message("tl_lu_solve_into", "b[5, 1]");
      TH_CHECK(rel_watch_unchanged(&watch));
      tl_tensor_release(&x_into);
      tl_tensor_release(&lu);
      tl_tensor_release(&good);
      tl_tensor_release(&a);
      tl_tensor_release(&b);
      rel_check_idle(held.ctx);
    }
  }
  th_held_close(&held);
  case_finished = 1;
}

/* A LAPACK argument error raised outside tenlane (a direct LAPACKE call with lda 0) returns
 * to its caller instead of ending the process, and does not leak into the next route. */
static void nonfinite_lapack_argument_error_keeps_process(void) {
  begin_case();
  double a[4] = {1, 2, 3, 4}, tau[2], work[64];
  lapack_int info = LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, 2, 2, a, 0, tau, work, 64);
  TH_CHECK(info < 0);
  th_held held;
  th_held_open(&held, 1);
  tl_tensor m = matrix(TL_F64, 5, 4, 21u), q, r;
  TH_CHECK_OK(tl_qr(held.exec, &m, &q, &r));
  tl_tensor_release(&q);
  tl_tensor_release(&r);
  tl_tensor_release(&m);
  th_held_close(&held);
  case_finished = 1;
}

static int svd_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index;
  (void)arg;
  tl_tensor a = matrix(TL_F64, 8, 6, 40u + item), u, s, vt;
  int64_t rank;
  tl_status status = tl_svd(exec, NULL, &a, &u, &s, &vt, &rank);
  tl_tensor_release(&a);
  if (status == TL_OK) {
    tl_tensor_release(&u);
    tl_tensor_release(&s);
    tl_tensor_release(&vt);
  }
  return (int)status;
}

/* A LAPACK argument error (injected: lda 0 reaches dgesdd, which calls xerbla_) on the
 * root surface and inside a lane: TL_E_PROVIDER naming the routine and the argument; the
 * lane fails like any lane, the map reports the status by name and the session keeps the
 * map's message. */
static void nonfinite_lapack_argument_error_typed_anywhere(void) {
  begin_case();
  for (int budget = 1; budget <= 2; budget++) {
    th_held held;
    th_held_open(&held, budget);
    tl__fault_arm(TL__FAULT_LAPACK_ARGUMENT, 1);
    TH_CHECK_STATUS((tl_status)svd_item(held.exec, 0, 0, NULL), TL_E_PROVIDER);
    check_message("tl_svd", "DGESDD rejected its argument 5");
    TH_CHECK_OK((tl_status)svd_item(held.exec, 1, 0, NULL)); /* the next call is clean */
    tl__fault_arm(TL__FAULT_LAPACK_ARGUMENT, 3);
    tl_map_outcome outcome;
    TH_CHECK_STATUS(tl_map(held.session, 8, svd_item, NULL, &outcome), TL_E_LANE);
    TH_CHECK(outcome.code == (int)TL_E_PROVIDER);
    if (strstr(outcome.message, "returned TL_E_PROVIDER") == NULL ||
        strstr(outcome.message, "DGESDD rejected its argument 5") == NULL) {
      fprintf(stderr, "outcome message: %s\n", outcome.message);
      TH_CHECK(0);
    }
    check_message("tl_map", "DGESDD");
    const char *kept = tl_session_message(held.session);
    if (strncmp(kept, "tl_map: ", 8) != 0 || strstr(kept, "DGESDD") == NULL) {
      fprintf(stderr, "session message: %s\n", kept);
      TH_CHECK(0);
    }
    rel_check_idle(held.ctx);
    TH_CHECK_OK(tl_map(held.session, 8, svd_item, NULL, &outcome));
    tl__fault_arm(TL__FAULT_LAPACK_ARGUMENT, 0);
    th_held_close(&held);
  }
  case_finished = 1;
}

/* Item 11: int64_t outputs (pivots, perm, rank) that overlap the call's tensors. */
static void nonfinite_int_outputs_overlap_refused(void) {
  begin_case();
  th_held held;
  th_held_open(&held, 1);
  tl_tensor a = matrix(TL_F64, 4, 4, 31u), lu = matrix(TL_F64, 4, 4, 32u);
  rel_watch watch;
  rel_watch_init(&watch);
  rel_watch_tensor(&watch, &a);
  rel_watch_tensor(&watch, &lu);
  TH_CHECK_STATUS(tl_lu_into(held.exec, &a, &lu, (int64_t *)a.data), TL_E_ALIAS);
  check_message("tl_lu_into", "pivots");
  TH_CHECK_STATUS(tl_lu_into(held.exec, &a, &lu, (int64_t *)lu.data + 3), TL_E_ALIAS);
  TH_CHECK_STATUS(tl_lu(held.exec, &a, &lu, (int64_t *)a.data + 12), TL_E_ALIAS);
  TH_CHECK(rel_watch_unchanged(&watch));
  tl_tensor q = matrix(TL_F64, 4, 4, 33u), r = matrix(TL_F64, 4, 4, 34u),
            s = matrix(TL_F64, 4, 1, 35u);
  tl_tensor s1;
  int64_t perm[4], rank;
  TH_CHECK_STATUS(tl_qrcp_into(held.exec, NULL, &a, &q, &r, (int64_t *)q.data, &rank), TL_E_ALIAS);
  check_message("tl_qrcp_into", "perm");
  TH_CHECK_STATUS(tl_qrcp_into(held.exec, NULL, &a, &q, &r, perm, (int64_t *)r.data + 5),
                  TL_E_ALIAS);
  check_message("tl_qrcp_into", "rank");
  TH_CHECK_STATUS(tl_qrcp(held.exec, NULL, &a, &q, &r, perm, perm + 2), TL_E_ALIAS);
  int64_t s_shape[1] = {4};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 1, s_shape, &s1));
  TH_CHECK_STATUS(tl_svd_into(held.exec, NULL, &a, &q, &s1, &r, (int64_t *)s1.data + 1),
                  TL_E_ALIAS);
  check_message("tl_svd_into", "rank");
  TH_CHECK_STATUS(tl_svd(held.exec, NULL, &a, &q, &s, &r, (int64_t *)a.data), TL_E_ALIAS);
  TH_CHECK(rel_watch_unchanged(&watch));
  tl_tensor_release(&s1);
  tl_tensor_release(&q);
  tl_tensor_release(&r);
  tl_tensor_release(&s);
  tl_tensor_release(&a);
  tl_tensor_release(&lu);
  th_held_close(&held);
  case_finished = 1;
}

/* The count of entries of x (n doubles) that are +-inf, and 1 in *nan when one is NaN. */
static int64_t count_inf(const double *x, int64_t n, int *nan) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) *nan = 1;
    if (isinf(x[i])) count++;
  }
  return count;
}

/* Finite input whose spectrum passes the dtype's range (a random 100 x 100 matrix scaled to
 * DBL_MAX / 4: most eigenvalues and singular values are beyond DBL_MAX): tl_eigh and tl_svd
 * return TL_OK with +-inf in those places (linalg.h), never NaN, in order, and finite
 * vectors. */
static void nonfinite_spectrum_beyond_range_overflows_to_inf(void) {
  begin_case();
  th_held held;
  th_held_open(&held, 1);
  const int64_t n = 100;
  int64_t shape[2] = {n, n};
  tl_tensor a, w, v, u, s, vt;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &a));
  TH_CHECK_OK(tl_random_into(held.exec, 7, &a));
  double *entries = a.data;
  for (int64_t i = 0; i < n * n; i++) entries[i] *= DBL_MAX / 4;
  int nan = 0;
  TH_CHECK_OK(tl_eigh(held.exec, TL_LOWER, &a, &w, &v));
  const double *wd = w.data;
  int64_t beyond = count_inf(wd, n, &nan);
  fprintf(stderr, "eigh: %lld of %lld eigenvalues beyond the range\n", (long long)beyond,
          (long long)n);
  TH_CHECK(beyond > 0 && beyond < n && !nan);
  TH_CHECK(wd[0] == -INFINITY && wd[n - 1] == INFINITY);
  for (int64_t i = 1; i < n; i++) TH_CHECK(wd[i - 1] <= wd[i]);
  TH_CHECK(count_inf(v.data, n * n, &nan) == 0 && !nan);
  TH_CHECK_OK(tl_svd(held.exec, NULL, &a, &u, &s, &vt, NULL));
  const double *sd = s.data;
  beyond = count_inf(sd, n, &nan);
  fprintf(stderr, "svd: %lld of %lld singular values beyond the range\n", (long long)beyond,
          (long long)n);
  TH_CHECK(beyond > 0 && beyond < n && !nan && sd[0] == INFINITY);
  for (int64_t i = 1; i < n; i++) TH_CHECK(sd[i - 1] >= sd[i] && sd[i] >= 0.0);
  TH_CHECK(count_inf(u.data, n * n, &nan) == 0 && count_inf(vt.data, n * n, &nan) == 0 && !nan);
  tl_tensor_release(&w);
  tl_tensor_release(&v);
  tl_tensor_release(&u);
  tl_tensor_release(&s);
  tl_tensor_release(&vt);
  tl_tensor_release(&a);
  th_held_close(&held);
  case_finished = 1;
}

TH_TEST_MAIN(TH_CASE(nonfinite_inf_into_svd_returns),
             TH_CASE(nonfinite_inf_small_svd_with_vectors_returns),
             TH_CASE(nonfinite_one_policy_every_route),
             TH_CASE(nonfinite_lapack_argument_error_keeps_process),
             TH_CASE(nonfinite_lapack_argument_error_typed_anywhere),
             TH_CASE(nonfinite_int_outputs_overlap_refused),
             TH_CASE(nonfinite_spectrum_beyond_range_overflows_to_inf))
