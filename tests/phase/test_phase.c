/* tests/phase/test_phase.c: the phase lease, property by property. Lane tests run on
 * contexts of budget 2 and 4 (4 oversubscribes a 2-core machine), so they hold on any
 * machine size. Every wait for a peer is bounded. */
#define _GNU_SOURCE 1
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tenlane/alloc.h"
#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/panic.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "base/fault.h"
#include "map/map_int.h"
#include "th_fixtures.h"
#include "th_test.h"

#define WAIT_MS 10000u
static const int budgets[] = {2, 4};
#define FOR_EACH_BUDGET(var)                                      \
  for (size_t var##_i = 0, var = (size_t)budgets[0]; var##_i < 2; \
       var = (size_t)budgets[++var##_i < 2 ? var##_i : 0])

static tl_session *open_session(tl_context *ctx) {
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  return session;
}

static void finish(tl_context *ctx, tl_session *session) {
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* A generic way to run one callback inside a phase. */
typedef struct phase_call {
  void (*body)(tl_phase *phase, void *arg);
  void *arg;
} phase_call;

static void run_in_phase(tl_session *session, void (*body)(tl_phase *, void *), void *arg) {
  TH_CHECK_OK(tl_session_phase(session, body, arg));
}

/* ---- every lane runs, on its worker, and matches a single-threaded result ------------- */

#define ITEMS 64
#define ITEM_LEN 256

typedef struct sum_job {
  tl_context *ctx;
  atomic_size_t next;
  double in_a[ITEMS][ITEM_LEN], in_b[ITEMS][ITEM_LEN], out[ITEMS][ITEM_LEN];
  atomic_int lane_runs[8];
  atomic_int on_own_worker;
  atomic_int lane_kind_ok;
} sum_job;

static int sum_lane(tl_lane *lane, int lane_index, void *arg) {
  sum_job *job = arg;
  atomic_fetch_add(&job->lane_runs[lane_index], 1);
  if (tl_pool_current_index(tl_context_pool(job->ctx)) == lane_index)
    atomic_fetch_add(&job->on_own_worker, 1);
  tl_exec *exec = tl_lane_exec(lane);
  if (tl_exec_kind_of(exec) == TL_EXEC_LANE && tl_exec_team(exec) == 1)
    atomic_fetch_add(&job->lane_kind_ok, 1);
  for (;;) {
    size_t item = atomic_fetch_add(&job->next, 1);
    if (item >= ITEMS) break;
    tl_tensor a = th_vec_f64(job->in_a[item], ITEM_LEN), b = th_vec_f64(job->in_b[item], ITEM_LEN),
              c = th_vec_f64(job->out[item], ITEM_LEN);
    tl_status status = tl_add_into(exec, &a, &b, &c);
    if (status != TL_OK) return tl_lane_fail(lane, 1, "item %zu: %s", item, tl_status_name(status));
  }
  return 0;
}

static void run_sum(tl_phase *phase, void *arg) {
  sum_job *job = arg;
  TH_CHECK(tl_phase_lanes(phase) == tl_context_budget(job->ctx));
  tl_phase_outcome outcome;
  TH_CHECK_OK(tl_phase_run(phase, sum_lane, job, &outcome));
  TH_CHECK(outcome.kind == TL_PHASE_OK && outcome.lane_index == -1);
  TH_CHECK(outcome.lanes_entered == tl_context_budget(job->ctx) && outcome.lanes_skipped == 0);
}

static void phase_runs_every_lane_and_matches_a_single_threaded_result(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    sum_job *job = calloc(1, sizeof *job);
    job->ctx = ctx;
    for (int i = 0; i < ITEMS; i++) {
      for (int k = 0; k < ITEM_LEN; k++) {
        job->in_a[i][k] = sin(i * 0.1 + k);
        job->in_b[i][k] = cos(i * 0.3 - k);
      }
    }
    run_in_phase(session, run_sum, job);
    for (size_t lane = 0; lane < 8; lane++)
      TH_CHECK(atomic_load(&job->lane_runs[lane]) == (lane < budget ? 1 : 0));
    TH_CHECK(atomic_load(&job->on_own_worker) == (int)budget);
    TH_CHECK(atomic_load(&job->lane_kind_ok) == (int)budget);
    /* The single-threaded reference: the same route on a budget-1 context. */
    tl_context *serial = th_make_context(1);
    tl_session *serial_session = open_session(serial);
    static double ref[ITEM_LEN];
    for (int i = 0; i < ITEMS; i++) {
      tl_tensor a = th_vec_f64(job->in_a[i], ITEM_LEN), b = th_vec_f64(job->in_b[i], ITEM_LEN),
                c = th_vec_f64(ref, ITEM_LEN);
      TH_CHECK_OK(tl_add_into(tl_session_exec(serial_session), &a, &b, &c));
      TH_CHECK(memcmp(ref, job->out[i], sizeof ref) == 0);
    }
    finish(serial, serial_session);
    free(job);
    finish(ctx, session);
  }
}

/* ---- budget 1: one inline lane on the caller ------------------------------------------ */

typedef struct inline_job {
  pthread_t caller;
  int on_caller, kind_inline, runs, index;
  int threads_before, threads_during;
} inline_job;

static int inline_lane(tl_lane *lane, int lane_index, void *arg) {
  inline_job *job = arg;
  job->runs++;
  job->index = lane_index;
  job->on_caller = pthread_equal(pthread_self(), job->caller);
  job->kind_inline = tl_exec_kind_of(tl_lane_exec(lane)) == TL_EXEC_INLINE;
  job->threads_during = th_thread_count();
  double a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, c[3];
  tl_tensor ta = th_vec_f64(a, 3), tb = th_vec_f64(b, 3), tc = th_vec_f64(c, 3);
  if (tl_add_into(tl_lane_exec(lane), &ta, &tb, &tc) != TL_OK || c[2] != 9) return 1;
  return 0;
}

static void run_inline(tl_phase *phase, void *arg) {
  TH_CHECK(tl_phase_lanes(phase) == 1);
  TH_CHECK_OK(tl_phase_run(phase, inline_lane, arg, NULL));
}

static void phase_on_a_one_worker_context_runs_one_lane_on_the_caller(void) {
  int before = th_thread_count();
  tl_context *ctx = th_make_context(1);
  TH_CHECK(tl_context_pool(ctx) == NULL);
  TH_CHECK(th_thread_count() == before); /* no pool, no thread */
  tl_session *session = open_session(ctx);
  inline_job job;
  memset(&job, 0, sizeof job);
  job.caller = pthread_self();
  run_in_phase(session, run_inline, &job);
  TH_CHECK(job.runs == 1 && job.index == 0);
  TH_CHECK(job.on_caller && job.kind_inline);
  TH_CHECK(job.threads_during == before);
  finish(ctx, session);
}

/* ---- the driver must not be a worker of the target pool -------------------------------- */

typedef struct own_pool_job {
  tl_context *ctx;
  atomic_int refused, callback_ran, opened;
} own_pool_job;

static void should_not_run(tl_phase *phase, void *arg) {
  (void)phase;
  atomic_store(&((own_pool_job *)arg)->callback_ran, 1);
}

static void worker_drives_phase(int worker_index, void *arg) {
  own_pool_job *job = arg;
  if (worker_index != 0) return;
  tl_session *session;
  if (tl_session_open(job->ctx, tl_owner_new(), TL_NOWAIT, &session) != TL_OK) return;
  atomic_store(&job->opened, 1);
  if (tl_session_phase(session, should_not_run, job) == TL_E_TARGET_POOL_CALLER)
    atomic_store(&job->refused, 1);
  TH_CHECK_OK(tl_session_close(session));
}

static void phase_rejects_a_caller_inside_its_own_pool(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    own_pool_job job;
    memset(&job, 0, sizeof job);
    job.ctx = ctx;
    TH_CHECK_OK(tl_pool_broadcast(tl_context_pool(ctx), worker_drives_phase, &job));
    TH_CHECK(atomic_load(&job.opened) == 1);
    TH_CHECK(atomic_load(&job.refused) == 1);
    TH_CHECK(atomic_load(&job.callback_ran) == 0);
    tl_context_stats stats;
    TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
    TH_CHECK(stats.session_open == 0 && stats.phase_active == 0);
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
}

/* ---- a worker of another pool may drive, and keeps its own pool running ---------------- */

typedef struct foreign_job {
  tl_context *ctx;
  tl_pool *foreign;
  atomic_int own_job_ran;
  atomic_int lanes_saw_own_job;
  tl_status phase_status;
  int lanes_entered;
} foreign_job;

static int own_job_ran(void *arg) { return atomic_load(&((foreign_job *)arg)->own_job_ran); }

static int foreign_lane(tl_lane *lane, int lane_index, void *arg) {
  (void)lane, (void)lane_index;
  foreign_job *job = arg;
  /* The foreign pool's queued job can only run on its one worker, which is driving this
   * phase: the lanes finish only if it keeps running its own pool while it waits. */
  if (th_wait_until(own_job_ran, job, WAIT_MS)) atomic_fetch_add(&job->lanes_saw_own_job, 1);
  return 0;
}

static void foreign_phase_body(tl_phase *phase, void *arg) {
  foreign_job *job = arg;
  tl_phase_outcome outcome;
  job->phase_status = tl_phase_run(phase, foreign_lane, job, &outcome);
  job->lanes_entered = outcome.lanes_entered;
}

static void foreign_worker_drives(int worker_index, void *arg) {
  (void)worker_index;
  foreign_job *job = arg;
  tl_session *session;
  TH_CHECK_OK(tl_session_open(job->ctx, tl_owner_new(), TL_NOWAIT, &session));
  TH_CHECK_OK(tl_session_phase(session, foreign_phase_body, job));
  TH_CHECK_OK(tl_session_close(session));
}

static void *broadcast_on_foreign(void *arg) {
  foreign_job *job = arg;
  TH_CHECK_OK(tl_pool_broadcast(job->foreign, foreign_worker_drives, job));
  return NULL;
}

static void mark_own_job(size_t begin, size_t end, int worker_index, void *arg) {
  (void)begin, (void)end, (void)worker_index;
  foreign_job *job = arg;
  if (tl_pool_current_index(job->foreign) == 0) atomic_store(&job->own_job_ran, 1);
}

static void phase_runs_from_a_foreign_pool_worker(void) {
  FOR_EACH_BUDGET(budget) {
    foreign_job job;
    memset(&job, 0, sizeof job);
    job.ctx = th_make_context((int)budget);
    tl_pool_config config;
    tl_pool_config_init(&config);
    config.workers = 1;
    TH_CHECK_OK(tl_pool_create(&config, &job.foreign));
    th_thread driver;
    th_thread_start(&driver, broadcast_on_foreign, &job);
    TH_CHECK_OK(tl_pool_parallel_for(job.foreign, 2, 1, mark_own_job, &job));
    th_thread_join(&driver, 2 * WAIT_MS);
    TH_CHECK_OK(job.phase_status);
    TH_CHECK(job.lanes_entered == (int)budget);
    TH_CHECK(atomic_load(&job.lanes_saw_own_job) == (int)budget);
    tl_pool_destroy(job.foreign);
    TH_CHECK_OK(tl_context_destroy(job.ctx));
  }
}

/* ---- one lane error, reported after the join; peers cancelled ------------------------ */

typedef struct error_job {
  int failing_lane;
  int budget;
  atomic_int entered;
  atomic_int saw_cancel;
  atomic_int finished;
  int finished_at_return;
  tl_status status;
  tl_phase_outcome outcome;
} error_job;

static int cancelled(void *arg) { return tl_lane_cancelled(arg); }

static int error_all_entered(void *arg) {
  error_job *job = arg;
  return atomic_load(&job->entered) == job->budget;
}

static int error_lane(tl_lane *lane, int lane_index, void *arg) {
  error_job *job = arg;
  int code = 0;
  atomic_fetch_add(&job->entered, 1);
  if (lane_index == job->failing_lane) {
    /* Fail only once every peer is inside its callback, so each of them must observe the
     * cancellation (a peer that arrived later would skip entry instead: another test). */
    if (!th_wait_until(error_all_entered, job, WAIT_MS)) return 98;
    code = tl_lane_fail(lane, 7, "lane %d gives up on purpose", lane_index);
  } else if (th_wait_until(cancelled, lane, WAIT_MS)) {
    atomic_fetch_add(&job->saw_cancel, 1);
    usleep(2000); /* a slow peer: the run must still wait for it */
  }
  atomic_fetch_add(&job->finished, 1);
  return code;
}

static void run_error(tl_phase *phase, void *arg) {
  error_job *job = arg;
  job->status = tl_phase_run(phase, error_lane, job, &job->outcome);
  job->finished_at_return = atomic_load(&job->finished);
}

static void phase_reports_one_lane_error_after_joining_and_cancels_peers(void) {
  FOR_EACH_BUDGET(budget) {
    for (int failing = 0; failing < (int)budget; failing++) {
      tl_context *ctx = th_make_context((int)budget);
      tl_session *session = open_session(ctx);
      error_job job;
      memset(&job, 0, sizeof job);
      job.failing_lane = failing;
      job.budget = (int)budget;
      run_in_phase(session, run_error, &job);
      TH_CHECK(job.status == TL_E_LANE);
      TH_CHECK(job.outcome.kind == TL_PHASE_LANE);
      TH_CHECK(job.outcome.lane_index == failing && job.outcome.lane_code == 7);
      TH_CHECK(strstr(job.outcome.message, "gives up on purpose") != NULL);
      TH_CHECK(job.finished_at_return == (int)budget);
      TH_CHECK(atomic_load(&job.saw_cancel) == (int)budget - 1);
      finish(ctx, session);
    }
  }
}

/* ---- panics: every lane joins first; the session survives the caught unwind ---------- */

typedef struct panic_job {
  int panicking_lane;
  int budget;
  atomic_int entered;
  atomic_int finished;
  atomic_int saw_cancel;
  int after_run_reached;
} panic_job;

static int panic_all_entered(void *arg) {
  panic_job *job = arg;
  return atomic_load(&job->entered) == job->budget;
}

static int panic_lane(tl_lane *lane, int lane_index, void *arg) {
  panic_job *job = arg;
  atomic_fetch_add(&job->entered, 1);
  if (lane_index == job->panicking_lane) {
    if (!th_wait_until(panic_all_entered, job, WAIT_MS)) return 98;
    tl_panic("lane %d breaks an invariant on purpose", lane_index);
  }
  if (th_wait_until(cancelled, lane, WAIT_MS)) atomic_fetch_add(&job->saw_cancel, 1);
  usleep(2000);
  atomic_fetch_add(&job->finished, 1);
  return 0;
}

static void run_panic(tl_phase *phase, void *arg) {
  panic_job *job = arg;
  tl_phase_run(phase, panic_lane, job, NULL);
  job->after_run_reached = 1; /* never: the panic continues on the driver */
}

typedef struct panic_scope {
  tl_session *session;
  panic_job *job;
} panic_scope;

static void phase_in_scope(void *arg) {
  panic_scope *scope = arg;
  tl_session_phase(scope->session, run_panic, scope->job);
}

static int add_check(tl_exec *exec) {
  double a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {0, 0};
  tl_tensor ta = th_vec_f64(a, 2), tb = th_vec_f64(b, 2), tc = th_vec_f64(c, 2);
  return tl_add_into(exec, &ta, &tb, &tc) == TL_OK && c[0] == 4 && c[1] == 6;
}

static void phase_joins_every_lane_before_a_lane_panic_surfaces(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx); /* outside the caught scope */
    panic_job job;
    memset(&job, 0, sizeof job);
    job.panicking_lane = (int)budget - 1;
    job.budget = (int)budget;
    panic_scope scope = {session, &job};
    tl_panic_info info;
    TH_CHECK_STATUS(tl_catch(phase_in_scope, &scope, &info), TL_E_PANICKED);
    TH_CHECK(strstr(info.message, "breaks an invariant on purpose") != NULL);
    TH_CHECK(job.after_run_reached == 0);
    TH_CHECK(atomic_load(&job.finished) == (int)budget - 1); /* all peers joined */
    TH_CHECK(atomic_load(&job.saw_cancel) == (int)budget - 1);
    tl_context_stats stats;
    TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
    TH_CHECK(stats.session_open == 1 && stats.phase_active == 0 && stats.active_lanes == 0);
    TH_CHECK(add_check(tl_session_exec(session)));
    finish(ctx, session);
  }
}

/* ---- precedence: session failures over lane errors; lowest index among equals -------- */

static int fail_every_lane(tl_lane *lane, int lane_index, void *arg) {
  (void)arg;
  return tl_lane_fail(lane, 10 + lane_index, "lane %d failed", lane_index);
}

static int succeed(tl_lane *lane, int lane_index, void *arg) {
  (void)lane, (void)lane_index, (void)arg;
  return 0;
}

typedef struct precedence_job {
  int budget;
} precedence_job;

static void run_precedence(tl_phase *phase, void *arg) {
  precedence_job *job = arg;
  tl_phase_outcome outcome;
  /* Several lane errors: the lowest lane index is the one reported. */
  TH_CHECK_STATUS(tl_phase_run(phase, fail_every_lane, NULL, &outcome), TL_E_LANE);
  TH_CHECK(outcome.kind == TL_PHASE_LANE);
  /* Lanes that saw the cancel before entry skip; the reported one is the lowest failing. */
  TH_CHECK(outcome.lane_code == 10 + outcome.lane_index);
  /* A child entry failure replaces the lane errors. */
  tl__fault_arm(TL__FAULT_CHILD_ENTRY, 1);
  TH_CHECK_STATUS(tl_phase_run(phase, fail_every_lane, NULL, &outcome), TL_E_NOMEM);
  TH_CHECK(outcome.kind == TL_PHASE_SESSION && outcome.status == TL_E_NOMEM);
  TH_CHECK(strstr(outcome.message, "child entry") != NULL);
  /* A cleanup failure does as well. */
  tl__fault_arm(TL__FAULT_CHILD_CLEANUP, 1);
  TH_CHECK_STATUS(tl_phase_run(phase, fail_every_lane, NULL, &outcome), TL_E_PROVIDER);
  TH_CHECK(outcome.kind == TL_PHASE_SESSION && strstr(outcome.message, "cleanup") != NULL);
  /* And a clean run is clean. */
  TH_CHECK_OK(tl_phase_run(phase, succeed, NULL, &outcome));
  TH_CHECK(outcome.kind == TL_PHASE_OK && outcome.lanes_entered == job->budget);
}

static void session_failures_take_precedence_over_lane_errors(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    precedence_job job = {(int)budget};
    run_in_phase(session, run_precedence, &job);
    tl__fault_arm(TL__FAULT_CHILD_ENTRY, 0);
    tl__fault_arm(TL__FAULT_CHILD_CLEANUP, 0);
    finish(ctx, session);
  }
}

/* Among lanes that all fail at once, reduction picks the lowest index (checked directly,
 * independent of timing: every lane waits until all have entered, then fails). */
typedef struct barrier_fail {
  atomic_int entered;
  int budget;
} barrier_fail;

static int all_entered(void *arg) {
  barrier_fail *job = arg;
  return atomic_load(&job->entered) == job->budget;
}

static int fail_after_barrier(tl_lane *lane, int lane_index, void *arg) {
  barrier_fail *job = arg;
  atomic_fetch_add(&job->entered, 1);
  if (!th_wait_until(all_entered, job, WAIT_MS)) return 99;
  return tl_lane_fail(lane, 20 + lane_index, "lane %d failed after the barrier", lane_index);
}

static void run_barrier_fail(tl_phase *phase, void *arg) {
  tl_phase_outcome outcome;
  TH_CHECK_STATUS(tl_phase_run(phase, fail_after_barrier, arg, &outcome), TL_E_LANE);
  TH_CHECK(outcome.lane_index == 0 && outcome.lane_code == 20);
}

static void among_equal_failures_the_lowest_lane_wins(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    barrier_fail job;
    atomic_init(&job.entered, 0);
    job.budget = (int)budget;
    run_in_phase(session, run_barrier_fail, &job);
    finish(ctx, session);
  }
}

/* ---- repeatable runs on the same lease -------------------------------------------------- */

typedef struct repeat_job {
  int run_number;
  atomic_int lanes_did_work;
  atomic_int lanes_saw_cancel_at_start;
} repeat_job;

static int repeat_lane(tl_lane *lane, int lane_index, void *arg) {
  repeat_job *job = arg;
  if (tl_lane_cancelled(lane)) atomic_fetch_add(&job->lanes_saw_cancel_at_start, 1);
  if (job->run_number == 0 && lane_index == 0) return tl_lane_fail(lane, 3, "first run fails");
  if (job->run_number == 1) {
    if (!add_check(tl_lane_exec(lane))) return 4;
    atomic_fetch_add(&job->lanes_did_work, 1);
  }
  return 0;
}

static void run_twice(tl_phase *phase, void *arg) {
  repeat_job *job = arg;
  job->run_number = 0;
  TH_CHECK_STATUS(tl_phase_run(phase, repeat_lane, job, NULL), TL_E_LANE);
  job->run_number = 1;
  atomic_store(&job->lanes_saw_cancel_at_start, 0);
  tl_phase_outcome outcome;
  TH_CHECK_OK(tl_phase_run(phase, repeat_lane, job, &outcome));
  TH_CHECK(outcome.lanes_skipped == 0);
}

static void phase_repeats_on_the_same_lease_after_a_failure(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    repeat_job job;
    memset(&job, 0, sizeof job);
    run_in_phase(session, run_twice, &job);
    TH_CHECK(atomic_load(&job.lanes_did_work) == (int)budget); /* real work, every lane */
    TH_CHECK(atomic_load(&job.lanes_saw_cancel_at_start) == 0);
    finish(ctx, session);
  }
}

/* ---- the session is usable after a caught lane failure ---------------------------------- */

static void run_failing(tl_phase *phase, void *arg) {
  (void)arg;
  TH_CHECK_STATUS(tl_phase_run(phase, fail_every_lane, NULL, NULL), TL_E_LANE);
}

static void run_ok(tl_phase *phase, void *arg) {
  (void)arg;
  TH_CHECK_OK(tl_phase_run(phase, succeed, NULL, NULL));
}

static void phase_leaves_the_session_usable_after_a_caught_lane_failure(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    run_in_phase(session, run_failing, NULL);
    TH_CHECK(add_check(tl_session_exec(session))); /* root work */
    run_in_phase(session, run_ok, NULL);           /* a fresh phase */
    panic_job job;
    memset(&job, 0, sizeof job);
    job.budget = (int)budget;
    panic_scope scope = {session, &job};
    TH_CHECK_STATUS(tl_catch(phase_in_scope, &scope, NULL), TL_E_PANICKED);
    TH_CHECK(add_check(tl_session_exec(session)));
    run_in_phase(session, run_ok, NULL);
    finish(ctx, session);
  }
}

/* ---- an unrelated owner is refused while lanes do child work ---------------------------- */

typedef struct unrelated_job {
  tl_context *ctx;
  atomic_int outsider_done;
  tl_status outsider_status;
  atomic_int lanes_ok;
} unrelated_job;

static void *outsider(void *arg) {
  unrelated_job *job = arg;
  tl_session *session = NULL;
  job->outsider_status = tl_session_open(job->ctx, tl_owner_new(), TL_NOWAIT, &session);
  atomic_store(&job->outsider_done, 1);
  return NULL;
}

static int outsider_done(void *arg) { return atomic_load(&((unrelated_job *)arg)->outsider_done); }

static int unrelated_lane(tl_lane *lane, int lane_index, void *arg) {
  (void)lane_index;
  unrelated_job *job = arg;
  if (!th_wait_until(outsider_done, job, WAIT_MS)) return 1;
  if (!add_check(tl_lane_exec(lane))) return 2; /* inherited child work still succeeds */
  atomic_fetch_add(&job->lanes_ok, 1);
  return 0;
}

typedef struct unrelated_call {
  unrelated_job *job;
} unrelated_call;

static void run_unrelated(tl_phase *phase, void *arg) {
  unrelated_job *job = arg;
  th_thread thread;
  th_thread_start(&thread, outsider, job);
  TH_CHECK_OK(tl_phase_run(phase, unrelated_lane, job, NULL));
  th_thread_join(&thread, WAIT_MS);
}

static void unrelated_owner_is_rejected_while_lanes_run(void) {
  FOR_EACH_BUDGET(budget) {
    unrelated_job job;
    memset(&job, 0, sizeof job);
    job.ctx = th_make_context((int)budget);
    tl_session *session = open_session(job.ctx);
    run_in_phase(session, run_unrelated, &job);
    TH_CHECK(job.outsider_status == TL_E_BUSY);
    TH_CHECK(atomic_load(&job.lanes_ok) == (int)budget);
    finish(job.ctx, session);
  }
}

/* ---- the lease and the session refuse other threads ------------------------------------ */

typedef struct thief_job {
  tl_phase *phase;
  tl_session *session;
  tl_status run_status, phase_status, close_status;
  int lanes;
} thief_job;

static void *thief(void *arg) {
  thief_job *job = arg;
  job->run_status = tl_phase_run(job->phase, succeed, NULL, NULL);
  job->lanes = tl_phase_lanes(job->phase);
  job->phase_status = tl_session_phase(job->session, run_ok, NULL);
  job->close_status = tl_session_close(job->session);
  return NULL;
}

static void lend_to_thief(tl_phase *phase, void *arg) {
  thief_job *job = arg;
  job->phase = phase;
  th_thread thread;
  th_thread_start(&thread, thief, job);
  th_thread_join(&thread, WAIT_MS);
  /* Still fine on its own thread. */
  TH_CHECK_OK(tl_phase_run(phase, succeed, NULL, NULL));
}

static void phase_lease_refuses_other_threads(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    thief_job job;
    memset(&job, 0, sizeof job);
    job.session = session;
    run_in_phase(session, lend_to_thief, &job);
    TH_CHECK(job.run_status == TL_E_WRONG_THREAD);
    TH_CHECK(job.lanes == 0);
    TH_CHECK(job.phase_status == TL_E_WRONG_THREAD);
    TH_CHECK(job.close_status == TL_E_WRONG_THREAD);
    finish(ctx, session);
  }
}

/* ---- the root surface is parked while the phase is open -------------------------------- */

static void try_root_inside(tl_phase *phase, void *arg) {
  tl_session *session = arg;
  double a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {-1, -1};
  tl_tensor ta = th_vec_f64(a, 2), tb = th_vec_f64(b, 2), tc = th_vec_f64(c, 2);
  TH_CHECK_STATUS(tl_add_into(tl_session_exec(session), &ta, &tb, &tc), TL_E_PHASE_ACTIVE);
  TH_CHECK(c[0] == -1 && c[1] == -1);
  TH_CHECK_STATUS(tl_session_phase(session, run_ok, NULL), TL_E_PHASE_ACTIVE);
  TH_CHECK_STATUS(tl_session_close(session), TL_E_PHASE_ACTIVE);
  TH_CHECK_OK(tl_phase_run(phase, succeed, NULL, NULL));
}

static void the_root_surface_is_parked_while_a_phase_is_open(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    run_in_phase(session, try_root_inside, session);
    TH_CHECK(add_check(tl_session_exec(session)));
    finish(ctx, session);
  }
}

/* ---- more lanes than items, and a lane 64x larger than its peers ----------------------- */

typedef struct skew_job {
  size_t items;
  atomic_size_t next;
  atomic_int lanes_done;
  atomic_int empty_lanes;
  double *data;
  double sums[8];
} skew_job;

static int skew_lane(tl_lane *lane, int lane_index, void *arg) {
  skew_job *job = arg;
  int pulled = 0;
  for (;;) {
    size_t item = atomic_fetch_add(&job->next, 1);
    if (item >= job->items) break;
    pulled++;
    /* Item 0 is 64 times larger than the others. */
    int64_t n = item == 0 ? 64 * 4096 : 4096;
    tl_tensor x = th_vec_f64(job->data, n), out;
    int axis = 0;
    tl_status status = tl_reduce(tl_lane_exec(lane), TL_REDUCE_SUM, &x, 1, &axis, &out);
    if (status != TL_OK) return tl_lane_fail(lane, 1, "reduce: %s", tl_status_name(status));
    job->sums[item] = *(double *)out.data;
    tl_tensor_release(&out);
  }
  if (pulled == 0) atomic_fetch_add(&job->empty_lanes, 1);
  atomic_fetch_add(&job->lanes_done, 1);
  (void)lane_index;
  return 0;
}

static void run_skew(tl_phase *phase, void *arg) {
  TH_CHECK_OK(tl_phase_run(phase, skew_lane, arg, NULL));
}

static void phase_with_empty_and_skewed_lanes_completes(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    skew_job *job = calloc(1, sizeof *job);
    job->items = 2; /* fewer items than lanes: some lanes find the queue empty */
    job->data = malloc(sizeof(double) * 64 * 4096);
    for (int i = 0; i < 64 * 4096; i++) job->data[i] = 1.0;
    run_in_phase(session, run_skew, job);
    TH_CHECK(atomic_load(&job->lanes_done) == (int)budget);
    TH_CHECK(atomic_load(&job->empty_lanes) >= (int)budget - 2);
    TH_CHECK(job->sums[0] == 64.0 * 4096 && job->sums[1] == 4096.0);
    free(job->data);
    free(job);
    finish(ctx, session);
  }
}

/* ---- concurrency bounded by the budget, lanes on the context's workers ----------------- */

typedef struct bound_job {
  tl_context *ctx;
  atomic_int active;
  atomic_int max_active;
  atomic_int on_worker;
  atomic_size_t next;
} bound_job;

static int bound_lane(tl_lane *lane, int lane_index, void *arg) {
  bound_job *job = arg;
  if (tl_pool_current_index(tl_context_pool(job->ctx)) == lane_index)
    atomic_fetch_add(&job->on_worker, 1);
  double a[512], b[512], c[512];
  for (int i = 0; i < 512; i++) a[i] = i, b[i] = 1;
  while (atomic_fetch_add(&job->next, 1) < 400) {
    int now = atomic_fetch_add(&job->active, 1) + 1;
    int seen = atomic_load(&job->max_active);
    while (now > seen && !atomic_compare_exchange_weak(&job->max_active, &seen, now)) {
    }
    tl_tensor ta = th_vec_f64(a, 512), tb = th_vec_f64(b, 512), tc = th_vec_f64(c, 512);
    tl_status status = tl_add_into(tl_lane_exec(lane), &ta, &tb, &tc);
    atomic_fetch_sub(&job->active, 1);
    if (status != TL_OK) return 1;
  }
  return 0;
}

static void run_bound(tl_phase *phase, void *arg) {
  TH_CHECK_OK(tl_phase_run(phase, bound_lane, arg, NULL));
}

static void phase_bounds_concurrent_lane_execution_by_the_thread_budget(void) {
  FOR_EACH_BUDGET(budget) {
    bound_job job;
    memset(&job, 0, sizeof job);
    job.ctx = th_make_context((int)budget);
    tl_session *session = open_session(job.ctx);
    run_in_phase(session, run_bound, &job);
    TH_CHECK(atomic_load(&job.max_active) >= 1);
    TH_CHECK(atomic_load(&job.max_active) <= (int)budget);
    TH_CHECK(atomic_load(&job.on_worker) == (int)budget);
    finish(job.ctx, session);
  }
}

/* ---- concrete route families inside every lane ---------------------------------------- */

#define RM 6
#define RK 5
#define RN 4

typedef struct routes_result {
  double contract[RM * RN];
  double permuted[RM * RK];
  double reshaped[RM * RK];
  double reduced[RK];
  double einsum[RM * RN];
} routes_result;

typedef struct routes_job {
  double a[RM * RK], b[RK * RN];
  routes_result lanes[8];
  routes_result reference;
} routes_job;

static tl_status compute_routes(tl_exec *exec, routes_job *job, routes_result *out) {
  int64_t a_shape[2] = {RM, RK}, b_shape[2] = {RK, RN}, c_shape[2] = {RM, RN};
  tl_tensor a, b, c;
  tl_tensor_wrap(TL_F64, 2, a_shape, NULL, job->a, 0, &a);
  tl_tensor_wrap(TL_F64, 2, b_shape, NULL, job->b, 0, &b);
  tl_tensor_wrap(TL_F64, 2, c_shape, NULL, out->contract, 0, &c);
  int la[2] = {0, 1}, lb[2] = {1, 2}, lc[2] = {0, 2};
  tl_status status = tl_contract_into(exec, lc, &a, la, &b, lb, &c);
  if (status != TL_OK) return status;
  int64_t p_shape[2] = {RK, RM};
  tl_tensor p;
  tl_tensor_wrap(TL_F64, 2, p_shape, NULL, out->permuted, 0, &p);
  int perm[2] = {1, 0};
  if ((status = tl_permute_into(exec, &a, perm, &p)) != TL_OK) return status;
  int64_t r_shape[3] = {2, 3, RK};
  tl_tensor r;
  tl_tensor_wrap(TL_F64, 3, r_shape, NULL, out->reshaped, 0, &r);
  if ((status = tl_reshape_into(exec, &p, &r)) != TL_OK) return status;
  int64_t s_shape[1] = {RK};
  tl_tensor s;
  tl_tensor_wrap(TL_F64, 1, s_shape, NULL, out->reduced, 0, &s);
  int axis = 0;
  if ((status = tl_reduce_into(exec, TL_REDUCE_SUM, &a, 1, &axis, &s)) != TL_OK) return status;
  tl_tensor e;
  tl_tensor_wrap(TL_F64, 2, c_shape, NULL, out->einsum, 0, &e);
  const tl_tensor *ops[2] = {&a, &b};
  return tl_einsum_into(exec, "ik,kj->ij", 2, ops, &e);
}

static int routes_lane(tl_lane *lane, int lane_index, void *arg) {
  routes_job *job = arg;
  tl_status status = compute_routes(tl_lane_exec(lane), job, &job->lanes[lane_index]);
  return status == TL_OK ? 0 : tl_lane_fail(lane, 1, "%s", tl_last_message());
}

static void run_routes(tl_phase *phase, void *arg) {
  TH_CHECK_OK(tl_phase_run(phase, routes_lane, arg, NULL));
}

static void phase_lane_runs_concrete_route_families(void) {
  FOR_EACH_BUDGET(budget) {
    routes_job *job = calloc(1, sizeof *job);
    for (int i = 0; i < RM * RK; i++) job->a[i] = sin(1.0 + i);
    for (int i = 0; i < RK * RN; i++) job->b[i] = cos(2.0 * i);
    tl_context *serial = th_make_context(1);
    tl_session *serial_session = open_session(serial);
    TH_CHECK_OK(compute_routes(tl_session_exec(serial_session), job, &job->reference));
    finish(serial, serial_session);
    /* The reference itself is right: a naive product and sums. */
    for (int i = 0; i < RM; i++) {
      for (int j = 0; j < RN; j++) {
        double sum = 0;
        for (int k = 0; k < RK; k++) sum += job->a[i + RM * k] * job->b[k + RK * j];
        TH_CHECK(fabs(job->reference.contract[i + RM * j] - sum) < 1e-12);
      }
    }
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    run_in_phase(session, run_routes, job);
    for (size_t lane = 0; lane < budget; lane++)
      TH_CHECK(memcmp(&job->lanes[lane], &job->reference, sizeof(routes_result)) == 0);
    free(job);
    finish(ctx, session);
  }
}

/* ---- a lane that arrives after cancellation skips its entry --------------------------- */

typedef struct late_job {
  tl_context *ctx;
  atomic_int blocked_worker[4];
  atomic_int lane_callback[4];
  atomic_int blocked;
  atomic_int release;
  atomic_int callbacks;
  atomic_int first_done;
} late_job;

static int released(void *arg) { return atomic_load(&((late_job *)arg)->release); }

static void block_a_worker(size_t begin, size_t end, int worker_index, void *arg) {
  (void)begin, (void)end, (void)worker_index;
  late_job *job = arg;
  atomic_store(&job->blocked_worker[tl_pool_current_index(tl_context_pool(job->ctx))], 1);
  atomic_fetch_add(&job->blocked, 1);
  th_wait_until(released, job, WAIT_MS);
}

static void *occupy_two_workers(void *arg) {
  late_job *job = arg;
  TH_CHECK_OK(tl_pool_parallel_for(tl_context_pool(job->ctx), 2, 1, block_a_worker, job));
  return NULL;
}

static int two_blocked(void *arg) { return atomic_load(&((late_job *)arg)->blocked) == 2; }

static int early_lane(tl_lane *lane, int lane_index, void *arg) {
  late_job *job = arg;
  atomic_fetch_add(&job->callbacks, 1);
  atomic_store(&job->lane_callback[lane_index], 1);
  if (atomic_fetch_add(&job->first_done, 1) == 0) {
    /* The first lane to run fails, and only then lets the busy workers go. */
    int code = tl_lane_fail(lane, 5, "first lane stops the run");
    tl_lane_cancel(lane); /* the flag is up before the busy workers are let go */
    atomic_store(&job->release, 1);
    return code;
  }
  th_wait_until(cancelled, lane, WAIT_MS);
  return 0;
}

typedef struct late_result {
  late_job *job;
  tl_phase_outcome outcome;
  tl_status status;
} late_result;

static void run_late(tl_phase *phase, void *arg) {
  late_result *result = arg;
  result->status = tl_phase_run(phase, early_lane, result->job, &result->outcome);
}

static void phase_lane_arriving_after_cancellation_skips_entry(void) {
  late_job job;
  memset(&job, 0, sizeof job);
  job.ctx = th_make_context(4);
  tl_session *session = open_session(job.ctx);
  th_thread occupier;
  th_thread_start(&occupier, occupy_two_workers, &job);
  TH_CHECK(th_wait_until(two_blocked, &job, WAIT_MS));
  late_result result;
  memset(&result, 0, sizeof result);
  result.job = &job;
  run_in_phase(session, run_late, &result);
  th_thread_join(&occupier, WAIT_MS);
  TH_CHECK(result.status == TL_E_LANE && result.outcome.lane_code == 5);
  /* The lanes of the two busy workers arrived after the cancel: they skipped entry, so their
   * callbacks never ran. The free lanes ran (the second may also have arrived late). */
  for (int lane = 0; lane < 4; lane++) {
    if (atomic_load(&job.blocked_worker[lane]))
      TH_CHECK(atomic_load(&job.lane_callback[lane]) == 0);
  }
  TH_CHECK(atomic_load(&job.callbacks) >= 1);
  TH_CHECK(result.outcome.lanes_skipped >= 2);
  TH_CHECK(result.outcome.lanes_entered + result.outcome.lanes_skipped == 4);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(job.ctx, &stats));
  TH_CHECK(stats.active_lanes == 0);
  finish(job.ctx, session);
}

/* ---- cancellation while numerical work is in flight ------------------------------------ */

#define BIG 1024

typedef struct flight_job {
  double *a, *b, *c;
  atomic_int in_flight;
  tl_status big_status;
  int items_done_after_cancel;
} flight_job;

static int work_in_flight(void *arg) { return atomic_load(&((flight_job *)arg)->in_flight); }

static int flight_lane(tl_lane *lane, int lane_index, void *arg) {
  flight_job *job = arg;
  if (lane_index == 0) {
    int64_t shape[2] = {BIG, BIG};
    tl_tensor a, b, c;
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job->a, 0, &a);
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job->b, 0, &b);
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job->c, 0, &c);
    atomic_store(&job->in_flight, 1);
    /* Several GEMMs in a row: the cancel lands while one of them runs. */
    tl_status status = TL_OK;
    for (int round = 0; round < 50 && status == TL_OK; round++) {
      status = tl_gemm_into(tl_lane_exec(lane), tl_scalar_real(1), &a, &b, tl_scalar_real(0), &c);
      if (status == TL_OK && tl_lane_cancelled(lane)) job->items_done_after_cancel++;
      if (tl_lane_cancelled(lane)) break;
    }
    job->big_status = status;
    return status == TL_E_CANCELLED ? (int)TL_E_CANCELLED : status == TL_OK ? 0 : 1;
  }
  if (lane_index == 1) {
    if (!th_wait_until(work_in_flight, job, WAIT_MS)) return 2;
    usleep(1000);
    return tl_lane_fail(lane, 6, "lane 1 fails while lane 0 multiplies");
  }
  return 0;
}

static void run_flight(tl_phase *phase, void *arg) {
  tl_phase_outcome outcome;
  TH_CHECK_STATUS(tl_phase_run(phase, flight_lane, arg, &outcome), TL_E_LANE);
  /* Lane 0's cancelled route never outranks the real failure. */
  TH_CHECK(outcome.lane_index == 1 && outcome.lane_code == 6);
}

static void phase_cancellation_while_numerical_work_is_in_flight(void) {
  FOR_EACH_BUDGET(budget) {
    flight_job job;
    memset(&job, 0, sizeof job);
    job.a = malloc(sizeof(double) * BIG * BIG);
    job.b = malloc(sizeof(double) * BIG * BIG);
    job.c = malloc(sizeof(double) * BIG * BIG);
    for (int i = 0; i < BIG * BIG; i++) job.a[i] = (i % 7) * 0.25, job.b[i] = (i % 5) * 0.5;
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    run_in_phase(session, run_flight, &job);
    TH_CHECK(job.big_status == TL_OK || job.big_status == TL_E_CANCELLED);
    fprintf(stderr, "budget %zu: in-flight GEMM %s\n", budget,
            job.big_status == TL_E_CANCELLED ? "stopped at a block boundary" : "completed");
    /* The session and the surfaces are fine: the same product on the root surface is right. */
    int64_t shape[2] = {BIG, BIG};
    tl_tensor a, b, c;
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job.a, 0, &a);
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job.b, 0, &b);
    tl_tensor_wrap(TL_F64, 2, shape, NULL, job.c, 0, &c);
    TH_CHECK_OK(
        tl_gemm_into(tl_session_exec(session), tl_scalar_real(1), &a, &b, tl_scalar_real(0), &c));
    for (int probe = 0; probe < 20; probe++) {
      int i = (probe * 131) % BIG, j = (probe * 17) % BIG;
      double sum = 0;
      for (int k = 0; k < BIG; k++) sum += job.a[i + (size_t)BIG * k] * job.b[k + (size_t)BIG * j];
      TH_CHECK(fabs(job.c[i + (size_t)BIG * j] - sum) <= 1e-9 * (1 + fabs(sum)));
    }
    finish(ctx, session);
    free(job.a), free(job.b), free(job.c);
  }
}

/* ---- a panic inside private N-ary scratch, then recovery ------------------------------ */

static atomic_int panic_on_big_alloc;

static void *panicking_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (size >= ((size_t)1 << 20) && atomic_exchange(&panic_on_big_alloc, 0)) {
    tl_panic("allocator refuses %zu bytes while einsum grows its scratch", size);
  }
  if (align < sizeof(void *)) align = sizeof(void *);
  return aligned_alloc(align, (size + align - 1) & ~(align - 1));
}

static void plain_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

#define EN 22
#define EE 4

typedef struct nary_job {
  double *m[2];
  double *out[8];
  double *reference;
  int panic_lane;
} nary_job;

static tl_status chain(tl_exec *exec, nary_job *job, double *out) {
  int64_t big[4] = {EN, EN, EN, EN}, small[3] = {EN, EN, EE}, out_shape[3] = {EN, EN, EE};
  tl_tensor a, b, o;
  tl_tensor_wrap(TL_F64, 4, big, NULL, job->m[0], 0, &a);
  tl_tensor_wrap(TL_F64, 3, small, NULL, job->m[1], 0, &b);
  tl_tensor_wrap(TL_F64, 3, out_shape, NULL, out, 0, &o);
  /* The contracted labels b and d lie apart in the first operand (c between them), so no
   * choice of rows makes it a GEMM operand in place: its EN^4 doubles (1.9 MiB: under the
   * 2 MiB from which contract.c packs by small blocks) are permuted into the lane's private
   * scratch before the GEMM. */
  const tl_tensor *ops[2] = {&a, &b};
  return tl_einsum_into(exec, "abcd,bde->ace", 2, ops, &o);
}

static int nary_lane(tl_lane *lane, int lane_index, void *arg) {
  nary_job *job = arg;
  if (lane_index == job->panic_lane) atomic_store(&panic_on_big_alloc, 1);
  tl_status status = chain(tl_lane_exec(lane), job, job->out[lane_index]);
  return status == TL_OK ? 0 : 1;
}

static void run_nary(tl_phase *phase, void *arg) { tl_phase_run(phase, nary_lane, arg, NULL); }

typedef struct nary_scope {
  tl_session *session;
  nary_job *job;
} nary_scope;

static void nary_in_scope(void *arg) {
  nary_scope *scope = arg;
  tl_session_phase(scope->session, run_nary, scope->job);
}

static void phase_recovers_from_a_panic_inside_private_nary_scratch(void) {
  tl_allocator hooks = {panicking_alloc, plain_free, NULL};
  tl_allocator_set(&hooks);
  FOR_EACH_BUDGET(budget) {
    nary_job *job = calloc(1, sizeof *job);
    size_t big = (size_t)EN * EN * EN * EN, out_count = (size_t)EN * EN * EE;
    job->m[0] = malloc(sizeof(double) * big);
    job->m[1] = malloc(sizeof(double) * EN * EN * EE);
    for (size_t i = 0; i < big; i++) job->m[0][i] = sin(0.3 * (double)i);
    for (int i = 0; i < EN * EN * EE; i++) job->m[1][i] = cos(0.7 * i);
    job->reference = calloc(out_count, sizeof(double));
    for (int l = 0; l < 8; l++) job->out[l] = calloc(out_count, sizeof(double));
    job->panic_lane = 0;
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    nary_scope scope = {session, job};
    tl_panic_info info;
    tl_status caught = tl_catch(nary_in_scope, &scope, &info);
    /* If the greedy path never needs a big chunk the panic cannot happen: that would make
     * this test vacuous, so it is a failure. */
    TH_CHECK(caught == TL_E_PANICKED);
    TH_CHECK(strstr(info.message, "allocator refuses") != NULL);
    /* Recovery: the session and a fresh phase work, and the lanes' (reused) private
     * scratch gives the right answer. */
    atomic_store(&panic_on_big_alloc, 0);
    job->panic_lane = -1;
    TH_CHECK_OK(chain(tl_session_exec(session), job, job->reference));
    run_in_phase(session, run_nary, job);
    for (size_t l = 0; l < budget; l++)
      TH_CHECK(memcmp(job->out[l], job->reference, sizeof(double) * out_count) == 0);
    tl_context_stats stats;
    TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
    TH_CHECK(stats.active_lanes == 0 && stats.phase_active == 0);
    finish(ctx, session);
    for (int k = 0; k < 2; k++) free(job->m[k]);
    for (int l = 0; l < 8; l++) free(job->out[l]);
    free(job->reference);
    free(job);
  }
  tl_allocator_set(NULL);
}

/* ---- no thread is created by a phase -------------------------------------------------- */

static int running_under_tsan(void) {
#if defined(__SANITIZE_THREAD__)
  return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return 1;
#else
  return 0;
#endif
#else
  return 0;
#endif
}

typedef struct threads_job {
  int before;
  atomic_int max_during;
  double *a, *b, *c[8];
} threads_job;

static int count_threads_lane(tl_lane *lane, int lane_index, void *arg) {
  threads_job *job = arg;
  int64_t shape[2] = {96, 96};
  tl_tensor a, b, c;
  tl_tensor_wrap(TL_F64, 2, shape, NULL, job->a, 0, &a);
  tl_tensor_wrap(TL_F64, 2, shape, NULL, job->b, 0, &b);
  tl_tensor_wrap(TL_F64, 2, shape, NULL, job->c[lane_index], 0, &c);
  if (tl_gemm_into(tl_lane_exec(lane), tl_scalar_real(1), &a, &b, tl_scalar_real(0), &c) != TL_OK)
    return 1;
  /* An SVD too: LAPACK and its BLAS must not start threads of their own either. */
  tl_tensor u, sv, vt;
  int64_t rank = 0;
  if (tl_svd(tl_lane_exec(lane), NULL, &c, &u, &sv, &vt, &rank) != TL_OK || rank < 1) return 2;
  tl_tensor_release(&u);
  tl_tensor_release(&sv);
  tl_tensor_release(&vt);
  int now = th_thread_count();
  int seen = atomic_load(&job->max_during);
  while (now > seen && !atomic_compare_exchange_weak(&job->max_during, &seen, now)) {
  }
  return 0;
}

static void run_count(tl_phase *phase, void *arg) {
  TH_CHECK_OK(tl_phase_run(phase, count_threads_lane, arg, NULL));
}

static void phase_creates_no_thread(void) {
  FOR_EACH_BUDGET(budget) {
    int process_before = th_thread_count();
    tl_context *ctx = th_make_context((int)budget);
    /* Context creation makes exactly the budget's workers (TSan's runtime may start a
     * thread of its own around then, so under TSan only the phase's own count is exact). */
    if (!running_under_tsan()) TH_CHECK(th_thread_count() == process_before + (int)budget);
    tl_session *session = open_session(ctx);
    threads_job job;
    memset(&job, 0, sizeof job);
    job.a = calloc(96 * 96, sizeof(double));
    job.b = calloc(96 * 96, sizeof(double));
    for (int i = 0; i < 96 * 96; i++) job.a[i] = sin(0.1 * i), job.b[i] = cos(0.2 * i);
    for (int l = 0; l < 8; l++) job.c[l] = calloc(96 * 96, sizeof(double));
    job.before = th_thread_count();
    for (int round = 0; round < 3; round++) run_in_phase(session, run_count, &job);
    /* The budget's workers plus this caller: nothing else, ever. */
    TH_CHECK(atomic_load(&job.max_during) == job.before);
    if (!running_under_tsan()) TH_CHECK(job.before == process_before + (int)budget);
    free(job.a), free(job.b);
    for (int l = 0; l < 8; l++) free(job.c[l]);
    finish(ctx, session);
  }
}

/* ---- tl_map: the lowest failing item, after the join ----------------------------------- */

typedef struct map_job {
  atomic_int ran[2000];
  size_t fail_a, fail_b, fail_c;
} map_job;

static int map_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index;
  map_job *job = arg;
  atomic_fetch_add(&job->ran[item], 1);
  double a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {0, 0};
  tl_tensor ta = th_vec_f64(a, 2), tb = th_vec_f64(b, 2), tc = th_vec_f64(c, 2);
  tl_status status = tl_add_into(exec, &ta, &tb, &tc);
  /* Only a cancellation from outside stops a route (another item's failure does not). */
  if (status == TL_E_CANCELLED) return (int)TL_E_CANCELLED;
  if (status != TL_OK || c[0] != 4) return 100;
  if (item == job->fail_a || item == job->fail_b || item == job->fail_c)
    return (int)(item % 97) + 1;
  return 0;
}

static void map_reports_the_lowest_failing_item_after_joining(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    map_job *job = calloc(1, sizeof *job);
    /* A clean map first: every item exactly once. */
    job->fail_a = job->fail_b = job->fail_c = SIZE_MAX;
    tl_map_outcome outcome;
    TH_CHECK_OK(tl_map(session, 2000, map_item, job, &outcome));
    TH_CHECK(outcome.failed == 0 && outcome.items_done == 2000);
    for (int i = 0; i < 2000; i++) TH_CHECK(atomic_load(&job->ran[i]) == 1);
    /* Then with three failing items. */
    for (int i = 0; i < 2000; i++) atomic_store(&job->ran[i], 0);
    job->fail_a = 1500, job->fail_b = 137, job->fail_c = 900;
    TH_CHECK_STATUS(tl_map(session, 2000, map_item, job, &outcome), TL_E_LANE);
    TH_CHECK(outcome.failed == 1 && outcome.failed_item == 137);
    TH_CHECK(outcome.code == 137 % 97 + 1);
    TH_CHECK(strstr(outcome.message, "item 137") != NULL);
    for (int i = 0; i <= 137; i++) TH_CHECK(atomic_load(&job->ran[i]) == 1);
    for (int i = 0; i < 2000; i++) TH_CHECK(atomic_load(&job->ran[i]) <= 1);
    TH_CHECK(add_check(tl_session_exec(session)));
    free(job);
    finish(ctx, session);
  }
}

/* Item 0 is slow (many routes) and fails at its end; item 1, the other lane's, fails at once.
 * Item 1's failure must not cancel item 0's routes, or item 0 would come back cancelled
 * and the map would report item 1. */
static int slow_low_failure(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index, (void)arg;
  if (item != 0) return item == 1 ? 2 : 0;
  double a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {0, 0};
  tl_tensor ta = th_vec_f64(a, 2), tb = th_vec_f64(b, 2), tc = th_vec_f64(c, 2);
  for (int r = 0; r < 20000; r++) {
    tl_status status = tl_add_into(exec, &ta, &tb, &tc);
    if (status != TL_OK) return (int)status;
  }
  return 1;
}

static void map_failure_does_not_cancel_a_slower_item_below_it(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    tl_map_outcome outcome;
    TH_CHECK_STATUS(tl_map(session, 64, slow_low_failure, NULL, &outcome), TL_E_LANE);
    TH_CHECK(outcome.failed == 1 && outcome.failed_item == 0 && outcome.code == 1);
    finish(ctx, session);
  }
}

/* ---- tl_map: chunks of items ---------------------------------------------------------- */

/* The chunk sizes: a pure function of the count taken, the lanes and the last chunk's time. */
static void map_chunk_sizes_grow_shrink_and_stay_guided(void) {
  /* Short chunks double up to the cap; long ones halve down to 1; in between they stay. */
  TH_CHECK(tl__map_chunk_next(1, 0) == 2);
  TH_CHECK(tl__map_chunk_next(8, TL__MAP_CHUNK_TARGET_NS - 1) == 16);
  TH_CHECK(tl__map_chunk_next(TL__MAP_CHUNK_MAX, 0) == TL__MAP_CHUNK_MAX);
  TH_CHECK(tl__map_chunk_next(8, TL__MAP_CHUNK_TARGET_NS) == 8);
  TH_CHECK(tl__map_chunk_next(8, 4 * (uint64_t)TL__MAP_CHUNK_TARGET_NS) == 8);
  TH_CHECK(tl__map_chunk_next(8, 4 * (uint64_t)TL__MAP_CHUNK_TARGET_NS + 1) == 4);
  TH_CHECK(tl__map_chunk_next(1, UINT64_MAX) == 1); /* a slow item stays alone */
  TH_CHECK(tl__map_chunk_next(0, 0) == 1);
  /* The guided bound: the items left over twice the lanes, never below 1. */
  TH_CHECK(tl__map_chunk_bound(400, 0, 2, 1) == 1);
  TH_CHECK(tl__map_chunk_bound(400, 0, 2, 1000) == 100);
  TH_CHECK(tl__map_chunk_bound(400, 300, 2, 1000) == 25);
  TH_CHECK(tl__map_chunk_bound(400, 398, 2, 1000) == 1);
  TH_CHECK(tl__map_chunk_bound(400, 400, 2, 64) == 1);
  TH_CHECK(tl__map_chunk_bound(400, 999, 2, 64) == 1); /* past the end: one more take */
  TH_CHECK(tl__map_chunk_bound(400, 0, 0, 1000) == 200);
  TH_CHECK(tl__map_chunk_bound(400, 0, 2, 0) == 1);
  TH_CHECK(tl__map_chunk_bound(SIZE_MAX, 0, 4, 64) == 64);
}

#define TINY_MAP_ITEMS 20000

typedef struct tiny_job {
  atomic_int ran[TINY_MAP_ITEMS];
  size_t fail_a, fail_b;
} tiny_job;

/* An item of a few nanoseconds: lanes take such items in large chunks. */
static int tiny_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)lane_index;
  tiny_job *job = arg;
  atomic_fetch_add_explicit(&job->ran[item], 1, memory_order_relaxed);
  return item == job->fail_a || item == job->fail_b ? 7 : 0;
}

/* Thousands of tiny items (taken in chunks): each runs once, and after failures every item
 * below the lowest one has run, whichever chunk held it. */
static void map_of_tiny_items_runs_each_once_across_chunks(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    tiny_job *job = calloc(1, sizeof *job);
    TH_CHECK(job != NULL);
    job->fail_a = job->fail_b = SIZE_MAX;
    tl_map_outcome outcome;
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < TINY_MAP_ITEMS; i++) atomic_store(&job->ran[i], 0);
      TH_CHECK_OK(tl_map(session, TINY_MAP_ITEMS, tiny_item, job, &outcome));
      TH_CHECK(outcome.failed == 0 && outcome.items_done == TINY_MAP_ITEMS);
      for (int i = 0; i < TINY_MAP_ITEMS; i++) TH_CHECK(atomic_load(&job->ran[i]) == 1);
    }
    /* Failures late in the range and early, in separate maps, then both in one. */
    const size_t fails[3][2] = {{17001, SIZE_MAX}, {3, SIZE_MAX}, {15000, 9999}};
    for (int f = 0; f < 3; f++) {
      for (int i = 0; i < TINY_MAP_ITEMS; i++) atomic_store(&job->ran[i], 0);
      job->fail_a = fails[f][0], job->fail_b = fails[f][1];
      const size_t lowest = fails[f][0] < fails[f][1] ? fails[f][0] : fails[f][1];
      TH_CHECK_STATUS(tl_map(session, TINY_MAP_ITEMS, tiny_item, job, &outcome), TL_E_LANE);
      TH_CHECK(outcome.failed == 1 && outcome.failed_item == lowest && outcome.code == 7);
      size_t ran_ok = 0;
      for (size_t i = 0; i < TINY_MAP_ITEMS; i++) {
        int ran = atomic_load(&job->ran[i]);
        TH_CHECK(ran <= 1);
        if (i <= lowest) TH_CHECK(ran == 1);
        if (ran == 1 && i != job->fail_a && i != job->fail_b) ran_ok++;
      }
      TH_CHECK(outcome.items_done == ran_ok);
    }
    free(job);
    finish(ctx, session);
  }
}

/* ---- a phase handle kept past its callback is refused ---------------------------------- */

static void keep_handle(tl_phase *phase, void *arg) {
  *(tl_phase **)arg = phase;
  TH_CHECK(tl_phase_lanes(phase) >= 1);
}

static void a_stale_phase_is_refused(void) {
  FOR_EACH_BUDGET(budget) {
    tl_context *ctx = th_make_context((int)budget);
    tl_session *session = open_session(ctx);
    tl_phase *kept = NULL;
    run_in_phase(session, keep_handle, &kept);
    TH_CHECK(kept != NULL);
    tl_phase_outcome outcome;
    TH_CHECK_STATUS(tl_phase_run(kept, succeed, NULL, &outcome), TL_E_STALE);
    TH_CHECK(outcome.kind == TL_PHASE_NOT_RUN);
    TH_CHECK(strstr(tl_last_message(), "after the callback") != NULL);
    TH_CHECK(tl_phase_lanes(kept) == 0);
    /* A new phase does not revive the old handle. */
    run_in_phase(session, run_ok, NULL);
    TH_CHECK_STATUS(tl_phase_run(kept, succeed, NULL, NULL), TL_E_STALE);
    TH_CHECK_STATUS(tl_phase_run(NULL, succeed, NULL, NULL), TL_E_INVALID);
    finish(ctx, session);
    TH_CHECK_STATUS(tl_phase_run(kept, succeed, NULL, NULL), TL_E_STALE);
  }
}

TH_TEST_MAIN(TH_CASE(phase_runs_every_lane_and_matches_a_single_threaded_result),
             TH_CASE(phase_on_a_one_worker_context_runs_one_lane_on_the_caller),
             TH_CASE(phase_rejects_a_caller_inside_its_own_pool),
             TH_CASE(phase_runs_from_a_foreign_pool_worker),
             TH_CASE(phase_reports_one_lane_error_after_joining_and_cancels_peers),
             TH_CASE(phase_joins_every_lane_before_a_lane_panic_surfaces),
             TH_CASE(session_failures_take_precedence_over_lane_errors),
             TH_CASE(among_equal_failures_the_lowest_lane_wins),
             TH_CASE(phase_repeats_on_the_same_lease_after_a_failure),
             TH_CASE(phase_leaves_the_session_usable_after_a_caught_lane_failure),
             TH_CASE(unrelated_owner_is_rejected_while_lanes_run),
             TH_CASE(phase_lease_refuses_other_threads),
             TH_CASE(the_root_surface_is_parked_while_a_phase_is_open),
             TH_CASE(phase_with_empty_and_skewed_lanes_completes),
             TH_CASE(phase_bounds_concurrent_lane_execution_by_the_thread_budget),
             TH_CASE(phase_lane_runs_concrete_route_families),
             TH_CASE(phase_lane_arriving_after_cancellation_skips_entry),
             TH_CASE(phase_cancellation_while_numerical_work_is_in_flight),
             TH_CASE(phase_recovers_from_a_panic_inside_private_nary_scratch),
             TH_CASE(phase_creates_no_thread),
             TH_CASE(map_reports_the_lowest_failing_item_after_joining),
             TH_CASE(map_failure_does_not_cancel_a_slower_item_below_it),
             TH_CASE(map_chunk_sizes_grow_shrink_and_stay_guided),
             TH_CASE(map_of_tiny_items_runs_each_once_across_chunks),
             TH_CASE(a_stale_phase_is_refused))
