/* tests/reliability/test_bad_input.c: malformed calls across the public API, as one table.
 * Each row makes one bad call on a fresh fixture (a held context of budget 2 with valid
 * tensors and sentinel-filled outputs) and must get its typed status, a fresh failure
 * message that contains the name of the argument at fault, no write to any output (every
 * output region, fresh-output struct and out-pointer keeps its sentinel), and, after the
 * fixture is torn down, no allocation left live. Rows that need another thread (wrong
 * thread, an unrelated owner) run the call there and bring back the status and message.
 * Prints "REL-FIGURE bad_input rows=<n>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel_alloc.h"
#include "rel_common.h"
#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "th_fixtures.h"
#include "th_test.h"

typedef struct bad_fx {
  th_held held;
  tl_context *small; /* a context whose scratch limit is 4 KiB, with its session */
  tl_session *small_session;
  tl_tensor a, b, c, a32, q, r, s, big[3], big_out; /* a 4x3, b 3x5, c 4x5 (output), ... */
  double vec[8], vec_out[8];
  tl_tensor fresh; /* a fresh-output struct */
  tl_context *ctx_out;
  tl_session *session_out;
  tl_pool *pool_out;
  int64_t pivots[8];
  tl_einsum_path_info path;
  tl_ticket ticket;
  rel_watch watch;
  char message[512]; /* set by rows that fail on another thread */
  tl_status phase_status;
} bad_fx;

static void make(tl_tensor *t, tl_dtype dtype, int64_t d0, int64_t d1) {
  const int64_t shape[2] = {d0, d1};
  TH_CHECK_OK(tl_tensor_create(dtype, 2, shape, t));
  rel_fill(t, (uint64_t)d0 * 31u + (uint64_t)d1, 1.0);
}

static void fx_open(bad_fx *fx) {
  memset(fx, 0, sizeof *fx);
  th_held_open(&fx->held, 2);
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 1;
  config.scratch_limit = 4096;
  TH_CHECK_OK(tl_context_create(&config, &fx->small));
  TH_CHECK_OK(tl_session_open(fx->small, tl_owner_new(), TL_NOWAIT, &fx->small_session));
  make(&fx->a, TL_F64, 4, 3);
  make(&fx->b, TL_F64, 3, 5);
  make(&fx->c, TL_F64, 4, 5);
  make(&fx->a32, TL_F32, 4, 3);
  make(&fx->q, TL_F64, 4, 3);
  make(&fx->r, TL_F64, 3, 3);
  make(&fx->s, TL_C64, 3, 1);
  make(&fx->big[0], TL_F64, 40, 40);
  make(&fx->big[1], TL_F64, 40, 40);
  make(&fx->big[2], TL_F64, 40, 40);
  make(&fx->big_out, TL_F64, 40, 40);
  TH_CHECK_OK(tl_session_ticket(fx->held.session, &fx->ticket));
  rel_watch_init(&fx->watch);
  rel_watch_tensor(&fx->watch, &fx->c);
  rel_watch_tensor(&fx->watch, &fx->q);
  rel_watch_tensor(&fx->watch, &fx->r);
  rel_watch_tensor(&fx->watch, &fx->s);
  rel_watch_tensor(&fx->watch, &fx->big_out);
  rel_watch_add(&fx->watch, fx->vec_out, sizeof fx->vec_out);
  rel_watch_add(&fx->watch, &fx->fresh, sizeof fx->fresh);
  rel_watch_add(&fx->watch, &fx->ctx_out, sizeof fx->ctx_out);
  rel_watch_add(&fx->watch, &fx->session_out, sizeof fx->session_out);
  rel_watch_add(&fx->watch, &fx->pool_out, sizeof fx->pool_out);
  rel_watch_add(&fx->watch, fx->pivots, sizeof fx->pivots);
  rel_watch_add(&fx->watch, &fx->path, sizeof fx->path);
}

static void fx_close(bad_fx *fx) {
  tl_tensor *all[] = {&fx->a, &fx->b,      &fx->c,      &fx->a32,    &fx->q,      &fx->r,
                      &fx->s, &fx->big[0], &fx->big[1], &fx->big[2], &fx->big_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tl_tensor_release(all[i]);
  if (fx->held.session != NULL) {
    tl_status closed = tl_session_close(fx->held.session);
    TH_CHECK(closed == TL_OK || closed == TL_E_STALE); /* a row may have closed it */
  }
  TH_CHECK_OK(tl_context_destroy(fx->held.ctx));
  TH_CHECK_OK(tl_session_close(fx->small_session));
  TH_CHECK_OK(tl_context_destroy(fx->small));
}

/* Run fn(fx) on a new thread; its status comes back and its message goes to fx->message. */
typedef struct on_thread {
  bad_fx *fx;
  tl_status (*fn)(bad_fx *fx);
  tl_status status;
} on_thread;

static void *thread_main(void *arg) {
  on_thread *call = arg;
  call->status = call->fn(call->fx);
  snprintf(call->fx->message, sizeof call->fx->message, "%s", tl_last_message());
  return NULL;
}

static tl_status run_on_thread(bad_fx *fx, tl_status (*fn)(bad_fx *fx)) {
  on_thread call = {fx, fn, TL_OK};
  pthread_t thread;
  TH_CHECK(pthread_create(&thread, NULL, thread_main, &call) == 0);
  TH_CHECK(pthread_join(thread, NULL) == 0);
  return call.status;
}

/* ---- rows ---------------------------------------------------------------------------------- */

static tl_status ctx_null_config(bad_fx *fx) { return tl_context_create(NULL, &fx->ctx_out); }
static tl_status ctx_negative_threads(bad_fx *fx) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = -3;
  return tl_context_create(&config, &fx->ctx_out);
}
static tl_status ctx_count_without_cpus(bad_fx *fx) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.cpu_count = 3;
  return tl_context_create(&config, &fx->ctx_out);
}
static tl_status ctx_unknown_cpu(bad_fx *fx) {
  tl_context_config config;
  tl_context_config_init(&config);
  static const int cpus[1] = {1 << 20};
  config.cpus = cpus;
  config.cpu_count = 1;
  return tl_context_create(&config, &fx->ctx_out);
}
static tl_status ctx_destroy_while_held(bad_fx *fx) { return tl_context_destroy(fx->held.ctx); }
static tl_status pool_zero_workers(bad_fx *fx) {
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = 0;
  return tl_pool_create(&config, &fx->pool_out);
}
static tl_status pool_null_broadcast(bad_fx *fx) {
  (void)fx;
  return tl_pool_broadcast(NULL, NULL, NULL);
}
static tl_status open_null_ctx(bad_fx *fx) {
  return tl_session_open(NULL, tl_owner_new(), TL_NOWAIT, &fx->session_out);
}
static tl_status open_owner_zero(bad_fx *fx) {
  return tl_session_open(fx->held.ctx, 0, TL_NOWAIT, &fx->session_out);
}
static tl_status open_unknown_mode(bad_fx *fx) {
  return tl_session_open(fx->held.ctx, tl_owner_new(), (tl_wait_mode)7, &fx->session_out);
}
static tl_status open_reentered(bad_fx *fx) {
  return tl_session_open(fx->held.ctx, tl_owner_new(), TL_NOWAIT, &fx->session_out);
}
static tl_status open_busy_there(bad_fx *fx) {
  return tl_session_open(fx->held.ctx, tl_owner_new(), TL_NOWAIT, &fx->session_out);
}
static tl_status open_busy(bad_fx *fx) { return run_on_thread(fx, open_busy_there); }
static tl_status close_null(bad_fx *fx) {
  (void)fx;
  return tl_session_close(NULL);
}
static tl_status close_there(bad_fx *fx) { return tl_session_close(fx->held.session); }
static tl_status close_wrong_thread(bad_fx *fx) { return run_on_thread(fx, close_there); }
static tl_status close_twice(bad_fx *fx) {
  TH_CHECK_OK(tl_session_close(fx->held.session));
  return tl_session_close(fx->held.session);
}
static tl_status ticket_null_out(bad_fx *fx) { return tl_session_ticket(fx->held.session, NULL); }
static int ticket_noop(tl_exec *exec, void *arg) {
  (void)exec, (void)arg;
  return 0;
}
static tl_status ticket_null(bad_fx *fx) {
  (void)fx;
  return tl_ticket_enter(NULL, ticket_noop, NULL, NULL);
}
static tl_status ticket_on_holder(bad_fx *fx) {
  return tl_ticket_enter(&fx->ticket, ticket_noop, NULL, NULL);
}
static tl_status ticket_stale_there(bad_fx *fx) {
  return tl_ticket_enter(&fx->ticket, ticket_noop, NULL, NULL);
}
static tl_status ticket_stale(bad_fx *fx) {
  /* The ticket's session closes and another one opens: the old ticket is stale. */
  TH_CHECK_OK(tl_session_close(fx->held.session));
  TH_CHECK_OK(tl_session_open(fx->held.ctx, tl_owner_new(), TL_NOWAIT, &fx->held.session));
  return run_on_thread(fx, ticket_stale_there);
}
static void phase_noop(tl_phase *phase, void *arg) { (void)phase, (void)arg; }
static tl_status phase_null_session(bad_fx *fx) {
  (void)fx;
  return tl_session_phase(NULL, phase_noop, NULL);
}
static tl_status phase_there(bad_fx *fx) {
  return tl_session_phase(fx->held.session, phase_noop, NULL);
}
static tl_status phase_wrong_thread(bad_fx *fx) { return run_on_thread(fx, phase_there); }
static tl_phase *kept_phase;
static void keep_phase(tl_phase *phase, void *arg) {
  (void)arg;
  kept_phase = phase;
}
static int lane_noop(tl_lane *lane, int lane_index, void *arg) {
  (void)lane, (void)lane_index, (void)arg;
  return 0;
}
static tl_status phase_stale(bad_fx *fx) {
  TH_CHECK_OK(tl_session_phase(fx->held.session, keep_phase, NULL));
  return tl_phase_run(kept_phase, lane_noop, NULL, NULL);
}
static void run_null_lane(tl_phase *phase, void *arg) {
  bad_fx *fx = arg;
  fx->phase_status = tl_phase_run(phase, NULL, NULL, NULL);
  snprintf(fx->message, sizeof fx->message, "%s", tl_last_message());
}
static tl_status phase_null_lane_fn(bad_fx *fx) {
  TH_CHECK_OK(tl_session_phase(fx->held.session, run_null_lane, fx));
  return fx->phase_status;
}
static tl_status map_null_fn(bad_fx *fx) { return tl_map(fx->held.session, 4, NULL, NULL, NULL); }
static void root_call_in_phase(tl_phase *phase, void *arg) {
  (void)phase;
  bad_fx *fx = arg;
  fx->phase_status = tl_add_into(tl_session_exec(fx->held.session), &fx->c, &fx->c, &fx->c);
  snprintf(fx->message, sizeof fx->message, "%s", tl_last_message());
}
static tl_status root_surface_parked(bad_fx *fx) {
  TH_CHECK_OK(tl_session_phase(fx->held.session, root_call_in_phase, fx));
  return fx->phase_status;
}
static int lane_wide_team(tl_lane *lane, int lane_index, void *arg) {
  bad_fx *fx = arg;
  tl_exec *exec = tl_lane_exec(lane);
  TH_CHECK_OK(tl_exec_set_team(exec, 2));
  (void)lane_index;
  tl_status status =
      tl_gemm_into(exec, tl_scalar_real(1), &fx->a, &fx->b, tl_scalar_real(0), &fx->c);
  if (status == TL_OK) return 0;
  /* Whichever lane reports (a peer may skip entry once the first one failed), the outcome
   * carries the route's own message. */
  return tl_lane_fail(lane, (int)status, "%s", tl_exec_message(exec));
}
static void run_wide_team(tl_phase *phase, void *arg) {
  bad_fx *fx = arg;
  tl_phase_outcome outcome;
  tl_phase_run(phase, lane_wide_team, fx, &outcome);
  fx->phase_status = (tl_status)outcome.lane_code;
  snprintf(fx->message, sizeof fx->message, "%s", outcome.message);
}
static tl_status lane_team_unavailable(bad_fx *fx) {
  TH_CHECK_OK(tl_session_phase(fx->held.session, run_wide_team, fx));
  return fx->phase_status;
}
static tl_status set_team_negative(bad_fx *fx) { return tl_exec_set_team(fx->held.exec, -1); }
static tl_status tensor_negative_extent(bad_fx *fx) {
  const int64_t shape[2] = {4, -2};
  return tl_tensor_create(TL_F64, 2, shape, &fx->fresh);
}
static tl_status tensor_overflowing_extents(bad_fx *fx) {
  const int64_t shape[3] = {(int64_t)1 << 30, (int64_t)1 << 30, (int64_t)1 << 30};
  return tl_tensor_create(TL_C128, 3, shape, &fx->fresh);
}
static tl_status tensor_rank_too_big(bad_fx *fx) {
  int64_t shape[TL_MAX_RANK + 1];
  for (int i = 0; i <= TL_MAX_RANK; i++) shape[i] = 1;
  return tl_tensor_create(TL_F64, TL_MAX_RANK + 1, shape, &fx->fresh);
}
static tl_status tensor_unknown_dtype(bad_fx *fx) {
  const int64_t shape[1] = {3};
  return tl_tensor_create((tl_dtype)9, 1, shape, &fx->fresh);
}
static tl_status wrap_null_data(bad_fx *fx) {
  const int64_t shape[1] = {3};
  return tl_tensor_wrap(TL_F64, 1, shape, NULL, NULL, 0, &fx->fresh);
}
static tl_status wrap_overflowing_strides(bad_fx *fx) {
  const int64_t shape[2] = {4, 4}, strides[2] = {1, (int64_t)1 << 62};
  return tl_tensor_wrap(TL_F64, 2, shape, strides, fx->vec, 0, &fx->fresh);
}
static tl_status route_null_exec(bad_fx *fx) { return tl_add_into(NULL, &fx->c, &fx->c, &fx->c); }
static tl_status route_there(bad_fx *fx) {
  return tl_gemm_into(fx->held.exec, tl_scalar_real(1), &fx->a, &fx->b, tl_scalar_real(0), &fx->c);
}
static tl_status route_wrong_thread(bad_fx *fx) { return run_on_thread(fx, route_there); }
static tl_status add_shape_mismatch(bad_fx *fx) {
  return tl_add_into(fx->held.exec, &fx->a, &fx->b, &fx->c);
}
static tl_status add_wrong_dtype(bad_fx *fx) {
  return tl_add_into(fx->held.exec, &fx->a, &fx->a32, &fx->q);
}
static tl_status add_overlapping_output(bad_fx *fx) {
  /* out is a to the letter: an output that overlaps an input. */
  return tl_neg_into(fx->held.exec, &fx->q, &fx->q);
}
static tl_status add_zero_stride_output(bad_fx *fx) {
  tl_tensor x = th_vec_f64(fx->vec, 8), out;
  const int64_t shape[1] = {8}, strides[1] = {0};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, shape, strides, fx->vec_out, 0, &out));
  return tl_copy_into(fx->held.exec, &x, &out);
}
static tl_status gemm_inner_mismatch(bad_fx *fx) {
  return tl_gemm_into(fx->held.exec, tl_scalar_real(1), &fx->a, &fx->a, tl_scalar_real(0), &fx->c);
}
static tl_status permute_not_a_permutation(bad_fx *fx) {
  static const int perm[2] = {0, 0};
  return tl_permute(fx->held.exec, &fx->a, perm, &fx->fresh);
}
static tl_status reduce_axis_out_of_range(bad_fx *fx) {
  static const int axes[1] = {5};
  return tl_reduce(fx->held.exec, TL_REDUCE_SUM, &fx->a, 1, axes, &fx->fresh);
}
static tl_status einsum_unknown_label(bad_fx *fx) {
  const tl_tensor *ops[2] = {&fx->a, &fx->b};
  return tl_einsum_into(fx->held.exec, "i#,#k->ik", 2, ops, &fx->c);
}
static tl_status einsum_output_label_unknown(bad_fx *fx) {
  const tl_tensor *ops[2] = {&fx->a, &fx->b};
  return tl_einsum_into(fx->held.exec, "ij,jk->iz", 2, ops, &fx->c);
}
static tl_status einsum_term_count(bad_fx *fx) {
  const tl_tensor *ops[2] = {&fx->a, &fx->b};
  return tl_einsum_into(fx->held.exec, "ij,jk,kl->il", 2, ops, &fx->c);
}
static tl_status einsum_zero_operands(bad_fx *fx) {
  const tl_tensor *ops[1] = {&fx->a};
  return tl_einsum_into(fx->held.exec, "ij->ij", 0, ops, &fx->c);
}
static tl_status einsum_mixed_dtypes(bad_fx *fx) {
  const tl_tensor *ops[2] = {&fx->a32, &fx->b};
  return tl_einsum_into(fx->held.exec, "ij,jk->ik", 2, ops, &fx->c);
}
static tl_status einsum_rank_mismatch(bad_fx *fx) {
  const tl_tensor *ops[2] = {&fx->a, &fx->b};
  return tl_einsum_into(fx->held.exec, "ijx,jk->ik", 2, ops, &fx->c);
}
static tl_status einsum_path_null_out(bad_fx *fx) {
  (void)fx;
  static const int64_t s0[2] = {2, 3};
  const int64_t *shapes[1] = {s0};
  const int ranks[1] = {2};
  return tl_einsum_path(TL_EINSUM_PATH_AUTO, "ij->ji", 1, ranks, shapes, NULL);
}
static tl_status einsum_path_unknown_kind(bad_fx *fx) {
  static const int64_t s0[2] = {2, 3};
  const int64_t *shapes[1] = {s0};
  const int ranks[1] = {2};
  return tl_einsum_path((tl_einsum_path_kind)9, "ij->ji", 1, ranks, shapes, &fx->path);
}
static tl_status einsum_scratch_limit(bad_fx *fx) {
  const tl_tensor *ops[3] = {&fx->big[0], &fx->big[1], &fx->big[2]};
  /* A 40x40 f64 intermediate is 12.8 KB; the small context's scratch limit is 4 KiB. */
  return tl_einsum_into(tl_session_exec(fx->small_session), "ij,jk,kl->il", 3, ops, &fx->big_out);
}
static tl_status svd_scratch_limit(bad_fx *fx) {
  return tl_svd(tl_session_exec(fx->small_session), NULL, &fx->big[0], NULL, &fx->fresh, NULL,
                NULL);
}
static tl_status qr_wrong_q_shape(bad_fx *fx) {
  return tl_qr_into(fx->held.exec, &fx->a, &fx->c, &fx->r);
}
static tl_status svd_wrong_s_dtype(bad_fx *fx) {
  return tl_svd_into(fx->held.exec, NULL, &fx->a, &fx->q, &fx->s, &fx->r, NULL);
}
static tl_status svd_negative_rtol(bad_fx *fx) {
  tl_truncation truncation = {sizeof(tl_truncation), 0, -1.0, 0.0};
  return tl_svd(fx->held.exec, &truncation, &fx->a, NULL, &fx->fresh, NULL, NULL);
}
static tl_status lu_null_pivots(bad_fx *fx) {
  return tl_lu(fx->held.exec, &fx->a, &fx->fresh, NULL);
}
static tl_status solve_not_square(bad_fx *fx) {
  return tl_solve(fx->held.exec, &fx->a, &fx->q, &fx->fresh);
}
static tl_status solve_singular(bad_fx *fx) {
  tl_tensor zero;
  const int64_t shape[2] = {3, 3};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &zero));
  tl_status status = tl_solve(fx->held.exec, &zero, &fx->r, &fx->fresh);
  tl_tensor_release(&zero);
  return status;
}
static tl_status eigh_unknown_uplo(bad_fx *fx) {
  return tl_eigh(fx->held.exec, (tl_uplo)5, &fx->r, &fx->fresh, NULL);
}

typedef struct bad_row {
  const char *name;
  tl_status (*call)(bad_fx *fx);
  tl_status expected;
  const char *argument; /* must appear in the message */
  /* A known defect of the message, reported to the module's owner: the row then checks the
   * status, the message's freshness and that nothing was written, and says when the message
   * starts naming the argument (time to drop the note). NULL for rows without one. */
  const char *known;
} bad_row;

#define ROW(fn, status, arg) \
  { #fn, fn, status, arg, NULL }
#define KNOWN(fn, status, arg, note) \
  { #fn, fn, status, arg, note }

static const bad_row rows[] = {
    ROW(ctx_null_config, TL_E_INVALID, "config"),
    ROW(ctx_negative_threads, TL_E_INVALID, "threads"),
    ROW(ctx_count_without_cpus, TL_E_INVALID, "cpu_count"),
    ROW(ctx_unknown_cpu, TL_E_INVALID, "cpus[0]"),
    ROW(ctx_destroy_while_held, TL_E_BUSY, "session"),
    ROW(pool_zero_workers, TL_E_INVALID, "workers"),
    ROW(pool_null_broadcast, TL_E_INVALID, "pool"),
    ROW(open_null_ctx, TL_E_INVALID, "ctx"),
    ROW(open_owner_zero, TL_E_INVALID, "owner"),
    ROW(open_unknown_mode, TL_E_INVALID, "mode"),
    ROW(open_reentered, TL_E_REENTERED, "owner"),
    ROW(open_busy, TL_E_BUSY, "owner"),
    ROW(close_null, TL_E_INVALID, "session"),
    ROW(close_wrong_thread, TL_E_WRONG_THREAD, "session"),
    ROW(close_twice, TL_E_STALE, "session"),
    ROW(ticket_null_out, TL_E_INVALID, "out"),
    ROW(ticket_null, TL_E_INVALID, "ticket"),
    ROW(ticket_on_holder, TL_E_REENTERED, "owner"),
    ROW(ticket_stale, TL_E_STALE, "ticket"),
    ROW(phase_null_session, TL_E_INVALID, "session"),
    ROW(phase_wrong_thread, TL_E_WRONG_THREAD, "session"),
    ROW(phase_stale, TL_E_STALE, "phase"),
    ROW(phase_null_lane_fn, TL_E_INVALID, "lane_fn"),
    ROW(map_null_fn, TL_E_INVALID, "fn"),
    ROW(root_surface_parked, TL_E_PHASE_ACTIVE, "surface"),
    ROW(lane_team_unavailable, TL_E_UNAVAILABLE, "team"),
    ROW(set_team_negative, TL_E_INVALID, "team"),
    ROW(tensor_negative_extent, TL_E_SHAPE, "shape"),
    ROW(tensor_overflowing_extents, TL_E_SHAPE, "shape"),
    ROW(tensor_rank_too_big, TL_E_INVALID, "rank"),
    ROW(tensor_unknown_dtype, TL_E_DTYPE, "dtype"),
    ROW(wrap_null_data, TL_E_INVALID, "data"),
    ROW(wrap_overflowing_strides, TL_E_SHAPE, "strides"),
    ROW(route_null_exec, TL_E_INVALID, "exec"),
    ROW(route_wrong_thread, TL_E_WRONG_THREAD, "surface"),
    ROW(add_shape_mismatch, TL_E_SHAPE, "a"),
    ROW(add_wrong_dtype, TL_E_DTYPE, "b"),
    ROW(add_overlapping_output, TL_E_ALIAS, "out"),
    ROW(add_zero_stride_output, TL_E_ALIAS, "out"),
    ROW(gemm_inner_mismatch, TL_E_SHAPE, "b"),
    ROW(permute_not_a_permutation, TL_E_INVALID, "perm"),
    ROW(reduce_axis_out_of_range, TL_E_INVALID, "axes"),
    ROW(einsum_unknown_label, TL_E_INVALID, "spec"),
    ROW(einsum_output_label_unknown, TL_E_INVALID, "spec"),
    ROW(einsum_term_count, TL_E_INVALID, "spec"),
    ROW(einsum_zero_operands, TL_E_INVALID, "n_operands"),
    ROW(einsum_mixed_dtypes, TL_E_DTYPE, "operands[1]"),
    ROW(einsum_rank_mismatch, TL_E_SHAPE, "operand 0"),
    ROW(einsum_path_null_out, TL_E_INVALID, "out"),
    ROW(einsum_path_unknown_kind, TL_E_INVALID, "kind"),
    ROW(einsum_scratch_limit, TL_E_SCRATCH_LIMIT, "scratch limit"),
    ROW(svd_scratch_limit, TL_E_SCRATCH_LIMIT, "scratch limit"),
    ROW(qr_wrong_q_shape, TL_E_SHAPE, "q"),
    ROW(svd_wrong_s_dtype, TL_E_DTYPE, "s"),
    ROW(svd_negative_rtol, TL_E_INVALID, "rtol"),
    ROW(lu_null_pivots, TL_E_INVALID, "pivots"),
    ROW(solve_not_square, TL_E_SHAPE, "a"),
    ROW(solve_singular, TL_E_INVALID, "a"),
    ROW(eigh_unknown_uplo, TL_E_INVALID, "uplo"),
};

/* 1 when `name` appears in `message` as a word of its own (not inside a longer name). */
static int names(const char *message, const char *name) {
  size_t len = strlen(name);
  for (const char *at = strstr(message, name); at != NULL; at = strstr(at + 1, name)) {
    char before = at == message ? ' ' : at[-1];
    char after = at[len];
    int word_before = before == '_' || (before >= 'a' && before <= 'z');
    int word_after = after == '_' || (after >= 'a' && after <= 'z');
    if (!word_before && !word_after) return 1;
  }
  return 0;
}

static void bad_input_table(void) {
  rel_alloc_install();
  long base = rel_alloc_live();
  int failures = 0, known = 0;
  size_t count = sizeof rows / sizeof rows[0];
  for (size_t i = 0; i < count; i++) {
    const bad_row *row = &rows[i];
    bad_fx *fx = calloc(1, sizeof *fx);
    fx_open(fx);
    rel_message_reset();
    tl_status status = row->call(fx);
    const char *message = fx->message[0] != '\0' ? fx->message : tl_last_message();
    char copy[512];
    snprintf(copy, sizeof copy, "%s", message);
    int ok_status = status == row->expected;
    int named = names(copy, row->argument);
    int ok_message = rel_message_fresh(copy) && (named || row->known != NULL);
    int ok_written = rel_watch_unchanged(&fx->watch);
    if (row->known != NULL) {
      known++;
      printf("  known defect, %s: %s%s\n", row->name, row->known,
             named ? " -- the message now names the argument: drop the note" : "");
    }
    if (!ok_status || !ok_message || !ok_written) {
      failures++;
      fprintf(stderr, "row %s: got %s (expected %s)%s%s, message \"%s\" (must name \"%s\")\n",
              row->name, tl_status_name(status), tl_status_name(row->expected),
              ok_message ? "" : ", message does not name the argument",
              ok_written ? "" : ", AN OUTPUT WAS WRITTEN", copy, row->argument);
    } else {
      printf("  %-28s %-22s %s\n", row->name, tl_status_name(status), copy);
    }
    fx_close(fx);
    free(fx);
    if (rel_alloc_live() != base) {
      failures++;
      fprintf(stderr, "row %s: %ld allocations left live\n", row->name, rel_alloc_live() - base);
      base = rel_alloc_live();
    }
  }
  printf("REL-FIGURE bad_input rows=%zu failures=%d known_message_defects=%d\n", count, failures,
         known);
  TH_CHECK(count >= 30);
  TH_CHECK(failures == 0);
}

TH_TEST_MAIN(TH_CASE(bad_input_table))
