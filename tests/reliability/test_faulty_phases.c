/* tests/reliability/test_faulty_phases.c: randomized phases with faults, seeded and
 * reproducible. Three contexts (budget 1, 2 and 4) each keep a session held by the test's
 * thread; every iteration picks one and runs a phase whose lanes, at random, work (small
 * routes on their own surfaces, polling cancellation), fail with a code, panic, or cancel the
 * run; child entry and child cleanup failures are injected through the internal fault sites;
 * threads of a foreign tl_pool enter tickets while the lanes run, and unrelated owners try
 * to open the context, without waiting (refused) and waiting (queued until the holder lets
 * go, then served). After every run the test checks that every lane callback that started
 * also ended, that the outcome is the one the precedence rules (docs/design/core.md, the phase
 * lease, invariant 7) give for what the lanes actually did, and that the session is idle and
 * usable; at the end that nothing leaked (the allocator's live count).
 * Hostile input and dead owners (issue 11): some lanes hand NaN or infinity to tl_svd
 * (TL_E_NONFINITE, the lane fails with it), one lane of some runs meets a LAPACK argument
 * error injected through TL__FAULT_LAPACK_ARGUMENT (TL_E_PROVIDER naming DGESDD), and in
 * some iterations a thread opens a fourth context, runs a map, and exits holding its
 * session: the next opener (waiting with TL_WAIT) or destroy gets TL_E_OWNER_DEAD once,
 * then the context is used and closed (or destroyed and made again).
 *
 * Knobs (environment): TL_SOAK_SEED (the seed; printed at start, random when unset),
 * TL_SOAK_PHASES (at least this many phases, default 10000), TL_SOAK_SECONDS (and keep
 * going until this many seconds have passed, default 0). `make soak` runs it for longer. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fault.h"
#include "rel_alloc.h"
#include "rel_common.h"
#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/panic.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "th_fixtures.h"
#include "th_test.h"

#define LANES_MAX 4
#define VEC 16
#define WAIT_MS 20000u

enum { ACT_WORK, ACT_FAIL, ACT_PANIC, ACT_CANCEL, ACT_NONFINITE, ACT_LAPACK };

typedef struct lane_plan {
  int action;
  int items;          /* items of work before the action (ACT_WORK: all of them) */
  int cancelled_code; /* ACT_WORK that sees cancellation: return TL_E_CANCELLED (1) or 0 */
} lane_plan;

typedef struct lane_state {
  atomic_int started, ended, panicked;
  int code; /* what the callback returned */
  double a[VEC], b[VEC], c[VEC];
  double m[9], n[9], p[9];
} lane_state;

typedef struct run_plan {
  int lanes;
  /* When > 1: the lanes planned to fail or panic (this many) meet before acting (bounded
   * to about 2 ms), so several really fail in one run and the lowest-index rule is tested. */
  int rendezvous;
  atomic_int arrived;
  int lapack_lane; /* the one ACT_LAPACK lane, or -1 */
  lane_plan lane[LANES_MAX];
  lane_state state[LANES_MAX];
} run_plan;

typedef struct counters {
  long phases, lanes_run, lane_failures, panics, entry_faults, cleanup_faults, cancels,
      cancelled_returns, tickets, busy_refusals, waiters_served, recoveries, root_calls, nonfinite,
      lapack_errors, orphans;
} counters;

static counters totals;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- lanes ------------------------------------------------------------------------------- */

static int do_item(tl_exec *exec, lane_state *state, int item) {
  if (item % 4 == 3) {
    tl_tensor m, n, p;
    const int64_t shape[2] = {3, 3};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, state->m, 0, &m));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, state->n, 0, &n));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, state->p, 0, &p));
    const tl_tensor *ops[2] = {&m, &n};
    return (int)tl_einsum_into(exec, "ij,jk->ik", 2, ops, &p);
  }
  tl_tensor a = th_vec_f64(state->a, VEC), b = th_vec_f64(state->b, VEC),
            c = th_vec_f64(state->c, VEC);
  return (int)tl_add_into(exec, &a, &b, &c);
}

/* A values-only SVD of a 4 x 3 matrix: with a NaN or an infinity in it (ACT_NONFINITE) it
 * must be refused with TL_E_NONFINITE naming the element; under the armed LAPACK fault
 * (ACT_LAPACK, at most one such lane per run) with TL_E_PROVIDER naming DGESDD. The lane
 * fails with that status as its code. */
static int hostile_svd(tl_exec *exec, int action, int lane_index) {
  double values[12];
  for (int k = 0; k < 12; k++) values[k] = (double)(k % 5) - 1.5;
  if (action == ACT_NONFINITE) values[(lane_index * 5) % 12] = lane_index % 2 ? NAN : -INFINITY;
  const int64_t shape[2] = {4, 3};
  tl_tensor a, s;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, values, 0, &a));
  tl_status status = tl_svd(exec, NULL, &a, NULL, &s, NULL, NULL);
  if (status == TL_E_CANCELLED) return (int)status; /* another lane failed first */
  if (action == ACT_NONFINITE) {
    TH_CHECK_STATUS(status, TL_E_NONFINITE);
    TH_CHECK(strncmp(tl_last_message(), "tl_svd: a[", 10) == 0);
  } else {
    TH_CHECK_STATUS(status, TL_E_PROVIDER);
    TH_CHECK(strstr(tl_last_message(), "DGESDD rejected its argument") != NULL);
  }
  return (int)status;
}

static int plan_lane(tl_lane *lane, int lane_index, void *arg) {
  run_plan *plan = arg;
  lane_state *state = &plan->state[lane_index];
  const lane_plan *lp = &plan->lane[lane_index];
  TH_CHECK(atomic_fetch_add(&state->started, 1) == 0); /* one callback per lane per run */
  tl_exec *exec = tl_lane_exec(lane);
  int code = 0;
  int acts = lp->action != ACT_WORK && lp->action != ACT_CANCEL;
  for (int item = 0; item < lp->items; item++) {
    /* Lanes that will fail or panic ignore cancellation (it is cooperative). */
    if (!acts && tl_lane_cancelled(lane)) {
      code = lp->cancelled_code ? (int)TL_E_CANCELLED : 0;
      goto done;
    }
    int status = do_item(exec, state, item);
    if (status == (int)TL_E_CANCELLED) {
      code = status;
      goto done;
    }
    TH_CHECK(status == 0);
  }
  if (acts && plan->rendezvous > 1) {
    atomic_fetch_add(&plan->arrived, 1);
    double deadline = now_seconds() + 0.002;
    while (atomic_load(&plan->arrived) < plan->rendezvous && now_seconds() < deadline)
      sched_yield();
  }
  switch (lp->action) {
    case ACT_FAIL:
      code = tl_lane_fail(lane, 100 + lane_index, "lane %d fails on purpose", lane_index);
      break;
    case ACT_PANIC:
      atomic_store(&state->panicked, 1);
      atomic_store(&state->ended, 1);
      tl_panic("lane %d panics on purpose", lane_index);
    case ACT_CANCEL:
      tl_lane_cancel(lane);
      break;
    case ACT_NONFINITE:
    case ACT_LAPACK:
      code = hostile_svd(exec, lp->action, lane_index);
      break;
    default:
      break;
  }
done:
  state->code = code;
  atomic_store(&state->ended, 1);
  return code;
}

/* ---- the foreign pool and unrelated owners ----------------------------------------------- */

typedef struct helper_job {
  tl_context *ctx;
  tl_ticket ticket;
  tl_pool *foreign;
  int entries_per_worker;
  atomic_int tickets_ok, tickets_bad, busy, not_busy;
  double a[2][VEC], b[2][VEC], c[2][VEC];
} helper_job;

typedef struct ticket_arg {
  helper_job *job;
  int worker;
} ticket_arg;

static int ticket_work(tl_exec *exec, void *arg) {
  ticket_arg *ta = arg;
  helper_job *job = ta->job;
  if (tl_exec_kind_of(exec) != TL_EXEC_TICKET) return 1;
  tl_tensor a = th_vec_f64(job->a[ta->worker], VEC), b = th_vec_f64(job->b[ta->worker], VEC),
            c = th_vec_f64(job->c[ta->worker], VEC);
  return (int)tl_add_into(exec, &a, &b, &c);
}

static void foreign_worker(int worker_index, void *arg) {
  helper_job *job = arg;
  /* A pool worker never waits for admission, even when asked to. */
  tl_session *session;
  if (tl_session_open(job->ctx, tl_owner_new(), TL_WAIT, &session) == TL_E_BUSY)
    atomic_fetch_add(&job->busy, 1);
  else
    atomic_fetch_add(&job->not_busy, 1);
  ticket_arg ta = {job, worker_index};
  for (int i = 0; i < job->entries_per_worker; i++) {
    int result = -1;
    tl_status status = tl_ticket_enter(&job->ticket, ticket_work, &ta, &result);
    if (status == TL_OK && result == 0)
      atomic_fetch_add(&job->tickets_ok, 1);
    else
      atomic_fetch_add(&job->tickets_bad, 1);
  }
}

static void *helper_main(void *arg) {
  helper_job *job = arg;
  tl_session *session;
  if (tl_session_open(job->ctx, tl_owner_new(), TL_NOWAIT, &session) == TL_E_BUSY)
    atomic_fetch_add(&job->busy, 1);
  else
    atomic_fetch_add(&job->not_busy, 1);
  TH_CHECK_OK(tl_pool_broadcast(job->foreign, foreign_worker, job));
  return NULL;
}

typedef struct waiter_job {
  tl_context *ctx;
  atomic_int admitted;
  tl_status open_status, op_status, phase_status, close_status;
  run_plan plan;
} waiter_job;

static void waiter_phase(tl_phase *phase, void *arg) {
  waiter_job *job = arg;
  job->phase_status = tl_phase_run(phase, plan_lane, &job->plan, NULL);
}

static void *waiter_main(void *arg) {
  waiter_job *job = arg;
  tl_session *session;
  job->open_status = tl_session_open(job->ctx, tl_owner_new(), TL_WAIT, &session);
  if (job->open_status != TL_OK) return NULL;
  atomic_store(&job->admitted, 1);
  double a[VEC] = {1}, b[VEC] = {2}, c[VEC];
  tl_tensor ta = th_vec_f64(a, VEC), tb = th_vec_f64(b, VEC), tc = th_vec_f64(c, VEC);
  job->op_status = tl_add_into(tl_session_exec(session), &ta, &tb, &tc);
  job->phase_status = tl_session_phase(session, waiter_phase, job);
  job->close_status = tl_session_close(session);
  return NULL;
}

static int one_waiter(void *arg) {
  tl_context_stats stats;
  tl_context_stats_get(arg, &stats);
  return stats.waiting_openers == 1;
}

/* ---- one iteration ------------------------------------------------------------------------ */

typedef struct slot {
  tl_context *ctx;
  tl_session *session;
} slot;

typedef struct phase_call {
  slot *slot;
  run_plan *plan;
  tl_status status;
  tl_phase_outcome outcome;
  int recover; /* after a failed run, run again on the same lease with clean lanes */
  run_plan *clean;
  int sampled; /* the fault countdowns were read (and disarmed) after the first run */
  int entry_left, cleanup_left;
} phase_call;

static void check_run_joined(const run_plan *plan, const tl_context *ctx) {
  for (int i = 0; i < plan->lanes; i++) {
    TH_CHECK(atomic_load(&plan->state[i].started) == atomic_load(&plan->state[i].ended));
  }
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.active_lanes == 0);
}

static void phase_body(tl_phase *phase, void *arg) {
  phase_call *call = arg;
  call->status = tl_phase_run(phase, plan_lane, call->plan, &call->outcome);
  /* Reached only when no lane panicked. Disarm what did not fire before any recovery run. */
  call->entry_left = atomic_load(&tl__fault_countdown[TL__FAULT_CHILD_ENTRY]);
  call->cleanup_left = atomic_load(&tl__fault_countdown[TL__FAULT_CHILD_CLEANUP]);
  call->sampled = 1;
  tl__fault_arm(TL__FAULT_CHILD_ENTRY, 0);
  tl__fault_arm(TL__FAULT_CHILD_CLEANUP, 0);
  check_run_joined(call->plan, call->slot->ctx);
  if (call->recover && call->status != TL_OK) {
    tl_phase_outcome again;
    TH_CHECK_OK(tl_phase_run(phase, plan_lane, call->clean, &again));
    TH_CHECK(again.kind == TL_PHASE_OK && again.lanes_entered == call->clean->lanes);
    for (int i = 0; i < call->clean->lanes; i++)
      TH_CHECK(atomic_load(&call->clean->state[i].ended) == 1);
    totals.recoveries++;
  }
}

static void phase_in_catch(void *arg) {
  phase_call *call = arg;
  TH_CHECK_OK(tl_session_phase(call->slot->session, phase_body, call));
}

static int fault_fired(const phase_call *call, tl__fault_site site, int armed) {
  int left = atomic_load(&tl__fault_countdown[site]);
  if (call->sampled) left = site == TL__FAULT_CHILD_ENTRY ? call->entry_left : call->cleanup_left;
  tl__fault_arm(site, 0);
  return armed > 0 && left == 0;
}

static void make_plan(uint64_t *rng, run_plan *plan, int lanes, int faulty) {
  memset(plan, 0, sizeof *plan);
  plan->lanes = lanes;
  plan->lapack_lane = -1;
  int acting = 0;
  for (int i = 0; i < lanes; i++) {
    lane_plan *lp = &plan->lane[i];
    uint32_t roll = faulty ? rel_rand_below(rng, 100) : 0;
    lp->action = roll < 68   ? ACT_WORK
                 : roll < 78 ? ACT_FAIL
                 : roll < 84 ? ACT_PANIC
                 : roll < 90 ? ACT_CANCEL
                 : roll < 96 ? ACT_NONFINITE
                             : ACT_LAPACK;
    if (lp->action == ACT_LAPACK && plan->lapack_lane >= 0) lp->action = ACT_NONFINITE;
    if (lp->action == ACT_LAPACK) plan->lapack_lane = i;
    lp->items = (int)rel_rand_below(rng, 7);
    lp->cancelled_code = (int)rel_rand_below(rng, 2);
    acting += lp->action != ACT_WORK && lp->action != ACT_CANCEL;
    lane_state *state = &plan->state[i];
    for (int k = 0; k < VEC; k++) state->a[k] = k, state->b[k] = i;
    for (int k = 0; k < 9; k++) state->m[k] = k, state->n[k] = i + 1;
  }
  plan->rendezvous = rel_rand_below(rng, 2) ? acting : 0;
}

static void check_outcome(const run_plan *plan, const phase_call *call, int entry_fired,
                          int cleanup_fired) {
  int lanes = plan->lanes;
  int real = -1, cancelled = -1, started = 0;
  for (int i = 0; i < lanes; i++) {
    const lane_state *state = &plan->state[i];
    if (!atomic_load(&state->started)) continue;
    started++;
    if (state->code == (int)TL_E_CANCELLED) {
      totals.cancelled_returns++;
      if (cancelled < 0) cancelled = i;
    } else if (state->code != 0) {
      if (real < 0) real = i;
    }
  }
  const tl_phase_outcome *o = &call->outcome;
  TH_CHECK(o->lanes_entered >= started);
  TH_CHECK(o->lanes_entered + o->lanes_skipped == lanes - entry_fired);
  if (entry_fired || cleanup_fired) {
    TH_CHECK(o->kind == TL_PHASE_SESSION);
    TH_CHECK(call->status == o->status);
    TH_CHECK(o->lane_index >= 0 && o->lane_index < lanes);
    if (entry_fired && !cleanup_fired) {
      TH_CHECK(o->status == TL_E_NOMEM && strstr(o->message, "child entry") != NULL);
      TH_CHECK(atomic_load(&plan->state[o->lane_index].started) == 0);
    } else if (cleanup_fired && !entry_fired) {
      TH_CHECK(o->status == TL_E_PROVIDER && strstr(o->message, "cleanup") != NULL);
    } else {
      TH_CHECK(o->status == TL_E_NOMEM || o->status == TL_E_PROVIDER);
    }
  } else if (real >= 0) {
    TH_CHECK(call->status == TL_E_LANE);
    TH_CHECK(o->kind == TL_PHASE_LANE && o->lane_index == real);
    char expect[64];
    if (plan->lane[real].action == ACT_FAIL) {
      TH_CHECK(o->lane_code == 100 + real);
      snprintf(expect, sizeof expect, "lane %d fails on purpose", real);
    } else {
      /* A hostile SVD's status, named in the lane's message. */
      TH_CHECK(o->lane_code == plan->state[real].code);
      snprintf(expect, sizeof expect, "returned %s", tl_status_name((tl_status)o->lane_code));
    }
    TH_CHECK(strstr(o->message, expect) != NULL);
  } else if (cancelled >= 0) {
    TH_CHECK(call->status == TL_E_LANE);
    TH_CHECK(o->kind == TL_PHASE_LANE && o->lane_index == cancelled);
    TH_CHECK(o->lane_code == (int)TL_E_CANCELLED);
  } else {
    TH_CHECK_OK(call->status);
    TH_CHECK(o->kind == TL_PHASE_OK && o->lane_index == -1);
  }
}

static void root_call_works(tl_session *session) {
  double a[VEC], b[VEC], c[VEC];
  for (int k = 0; k < VEC; k++) a[k] = k, b[k] = 2 * k, c[k] = -1;
  tl_tensor ta = th_vec_f64(a, VEC), tb = th_vec_f64(b, VEC), tc = th_vec_f64(c, VEC);
  TH_CHECK_OK(tl_add_into(tl_session_exec(session), &ta, &tb, &tc));
  TH_CHECK(c[VEC - 1] == 3.0 * (VEC - 1));
  totals.root_calls++;
}

static void iteration(uint64_t *rng, slot *slots, tl_pool *foreign, run_plan *plan,
                      run_plan *clean) {
  slot *s = &slots[rel_rand_below(rng, 3)];
  int lanes = tl_context_budget(s->ctx);
  make_plan(rng, plan, lanes, rel_rand_below(rng, 100) < 80);
  make_plan(rng, clean, lanes, 0);
  int entry_armed =
      rel_rand_below(rng, 100) < 8 ? 1 + (int)rel_rand_below(rng, (uint32_t)lanes) : 0;
  int cleanup_armed =
      rel_rand_below(rng, 100) < 8 ? 1 + (int)rel_rand_below(rng, (uint32_t)lanes) : 0;
  int with_helper = rel_rand_below(rng, 100) < 10;
  int with_waiter = rel_rand_below(rng, 100) < 3;

  /* Unrelated owners and foreign tickets, concurrent with the lanes. */
  helper_job *job = NULL;
  pthread_t helper;
  if (with_helper) {
    job = calloc(1, sizeof *job);
    job->ctx = s->ctx;
    job->foreign = foreign;
    job->entries_per_worker = 1 + (int)rel_rand_below(rng, 4);
    TH_CHECK_OK(tl_session_ticket(s->session, &job->ticket));
    TH_CHECK(pthread_create(&helper, NULL, helper_main, job) == 0);
  }
  waiter_job *waiter = NULL;
  th_thread waiter_thread;
  if (with_waiter) {
    waiter = calloc(1, sizeof *waiter);
    waiter->ctx = s->ctx;
    make_plan(rng, &waiter->plan, lanes, 0);
    th_thread_start(&waiter_thread, waiter_main, waiter);
    TH_CHECK(th_wait_until(one_waiter, s->ctx, WAIT_MS));
  }

  phase_call call;
  memset(&call, 0, sizeof call);
  call.slot = s;
  call.plan = plan;
  call.clean = clean;
  call.recover = rel_rand_below(rng, 100) < 30;
  tl__fault_arm(TL__FAULT_CHILD_ENTRY, entry_armed);
  tl__fault_arm(TL__FAULT_CHILD_CLEANUP, cleanup_armed);
  tl__fault_arm(TL__FAULT_LAPACK_ARGUMENT, plan->lapack_lane >= 0 ? 1 : 0);
  tl_panic_info info;
  tl_status caught = tl_catch(phase_in_catch, &call, &info);
  int entry_fired = fault_fired(&call, TL__FAULT_CHILD_ENTRY, entry_armed);
  int cleanup_fired = fault_fired(&call, TL__FAULT_CHILD_CLEANUP, cleanup_armed);
  tl__fault_arm(TL__FAULT_LAPACK_ARGUMENT, 0); /* its lane may have been skipped */
  totals.phases++;
  totals.entry_faults += entry_fired;
  totals.cleanup_faults += cleanup_fired;

  check_run_joined(plan, s->ctx);
  int lowest_panic = -1;
  for (int i = 0; i < lanes; i++) {
    totals.lanes_run += atomic_load(&plan->state[i].started);
    if (atomic_load(&plan->state[i].panicked)) {
      totals.panics++;
      if (lowest_panic < 0) lowest_panic = i;
    }
    if (plan->lane[i].action == ACT_FAIL && plan->state[i].code >= 100) totals.lane_failures++;
    if (plan->lane[i].action == ACT_CANCEL && atomic_load(&plan->state[i].ended)) totals.cancels++;
    if (plan->lane[i].action == ACT_NONFINITE && plan->state[i].code == (int)TL_E_NONFINITE)
      totals.nonfinite++;
    if (plan->lane[i].action == ACT_LAPACK && plan->state[i].code == (int)TL_E_PROVIDER)
      totals.lapack_errors++;
  }
  if (lowest_panic >= 0) {
    TH_CHECK_STATUS(caught, TL_E_PANICKED);
    char expect[64];
    snprintf(expect, sizeof expect, "lane %d panicked", lowest_panic);
    TH_CHECK(strstr(info.message, expect) != NULL);
  } else {
    TH_CHECK_OK(caught);
    check_outcome(plan, &call, entry_fired, cleanup_fired);
  }

  if (with_helper) {
    TH_CHECK(pthread_join(helper, NULL) == 0);
    int workers = tl_pool_workers(foreign);
    TH_CHECK(atomic_load(&job->tickets_bad) == 0);
    TH_CHECK(atomic_load(&job->tickets_ok) == workers * job->entries_per_worker);
    TH_CHECK(atomic_load(&job->not_busy) == 0);
    TH_CHECK(atomic_load(&job->busy) == workers + 1);
    totals.tickets += atomic_load(&job->tickets_ok);
    totals.busy_refusals += atomic_load(&job->busy);
    free(job);
  }

  /* Idle and usable. */
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(s->ctx, &stats));
  TH_CHECK(stats.session_open == 1 && stats.root_checked_out == 1 && stats.phase_active == 0);
  TH_CHECK(stats.active_lanes == 0 && stats.active_children == 0);
  TH_CHECK(stats.waiting_openers == (with_waiter ? 1 : 0));
  root_call_works(s->session);
  /* The holder's own thread may neither reenter nor take a ticket entry. */
  if (rel_rand_below(rng, 100) < 5) {
    tl_session *again;
    TH_CHECK_STATUS(tl_session_open(s->ctx, tl_owner_new(), TL_NOWAIT, &again), TL_E_REENTERED);
  }

  if (with_waiter) {
    /* The waiter was queued for the whole run; it is served once the holder closes. */
    TH_CHECK(atomic_load(&waiter->admitted) == 0);
    TH_CHECK_OK(tl_session_close(s->session));
    th_thread_join(&waiter_thread, WAIT_MS);
    TH_CHECK_OK(waiter->open_status);
    TH_CHECK_OK(waiter->op_status);
    TH_CHECK_OK(waiter->phase_status);
    TH_CHECK_OK(waiter->close_status);
    free(waiter);
    totals.waiters_served++;
    TH_CHECK_OK(tl_session_open(s->ctx, tl_owner_new(), TL_NOWAIT, &s->session));
    rel_check_idle(s->ctx);
  }
}

/* ---- an owner thread that exits holding its session -------------------------------------- */

typedef struct orphan_job {
  tl_context *ctx;
  tl_status open_status, map_status;
  atomic_int opened;
} orphan_job;

static int orphan_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index, (void)arg;
  double a[VEC], c[VEC];
  for (int k = 0; k < VEC; k++) a[k] = (double)(k + (int)item);
  tl_tensor ta = th_vec_f64(a, VEC), tc = th_vec_f64(c, VEC);
  return (int)tl_add_into(exec, &ta, &ta, &tc);
}

static void *orphan_main(void *arg) {
  orphan_job *job = arg;
  tl_session *session;
  job->open_status = tl_session_open(job->ctx, tl_owner_new(), TL_NOWAIT, &session);
  atomic_store(&job->opened, 1);
  if (job->open_status == TL_OK) job->map_status = tl_map(session, 16, orphan_item, NULL, NULL);
  return NULL; /* ends holding the session */
}

static int orphan_opened(void *arg) { return atomic_load(&((orphan_job *)arg)->opened); }

/* A thread opens *ctx, runs a map and exits holding the session. Then either this thread
 * waits to open it (served with TL_E_OWNER_DEAD once the owner is gone, then it opens,
 * works and closes), or destroy is told once and then destroys (and a new context is
 * made). Either way nothing blocks and nothing leaks. */
static void orphan_round(uint64_t *rng, tl_context **ctx) {
  orphan_job job = {*ctx, TL_E_INVALID, TL_E_INVALID, 0};
  th_thread thread;
  th_thread_start(&thread, orphan_main, &job);
  if (rel_rand_below(rng, 2)) {
    /* Held from here until the owner's thread ends (it never closes). */
    TH_CHECK(th_wait_until(orphan_opened, &job, WAIT_MS));
    tl_session *session;
    /* Waits until the owner's thread has ended (its exit hook hands the context on). */
    TH_CHECK_STATUS(tl_session_open(*ctx, tl_owner_new(), TL_WAIT, &session), TL_E_OWNER_DEAD);
    th_thread_join(&thread, WAIT_MS);
    TH_CHECK_OK(tl_session_open(*ctx, tl_owner_new(), TL_NOWAIT, &session));
    root_call_works(session);
    TH_CHECK_OK(tl_session_close(session));
  } else {
    th_thread_join(&thread, WAIT_MS);
    TH_CHECK_STATUS(tl_context_destroy(*ctx), TL_E_OWNER_DEAD);
    TH_CHECK_OK(tl_context_destroy(*ctx));
    *ctx = th_make_context(2);
  }
  TH_CHECK_OK(job.open_status);
  TH_CHECK_OK(job.map_status);
  totals.orphans++;
}

static long env_long(const char *name, long fallback) {
  const char *value = getenv(name);
  return value != NULL && *value != '\0' ? strtol(value, NULL, 0) : fallback;
}

static void faulty_phases_randomized(void) {
  uint64_t seed;
  const char *seed_text = getenv("TL_SOAK_SEED");
  if (seed_text != NULL && *seed_text != '\0') {
    seed = strtoull(seed_text, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
  }
  long min_phases = env_long("TL_SOAK_PHASES", 10000);
  long min_seconds = env_long("TL_SOAK_SECONDS", 0);
  printf("REL-SOAK seed=0x%016llx phases>=%ld seconds>=%ld (reproduce: TL_SOAK_SEED=0x%016llx)\n",
         (unsigned long long)seed, min_phases, min_seconds, (unsigned long long)seed);
  fflush(stdout);
  /* The harness's alarm catches a hang; give it room for the configured length. */
  alarm((unsigned)(min_seconds + 600));

  rel_alloc_install();
  long base = rel_alloc_live();
  uint64_t rng = seed;
  slot slots[3];
  static const int budgets[3] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    slots[i].ctx = th_make_context(budgets[i]);
    TH_CHECK_OK(tl_session_open(slots[i].ctx, tl_owner_new(), TL_NOWAIT, &slots[i].session));
  }
  tl_pool_config pool_config;
  tl_pool_config_init(&pool_config);
  pool_config.workers = 2;
  tl_pool *foreign;
  TH_CHECK_OK(tl_pool_create(&pool_config, &foreign));
  run_plan *plan = calloc(1, sizeof *plan), *clean = calloc(1, sizeof *clean);
  tl_context *orphan_ctx = th_make_context(2);

  double start = now_seconds();
  long i = 0;
  while (i < min_phases || now_seconds() - start < (double)min_seconds) {
    iteration(&rng, slots, foreign, plan, clean);
    if (rel_rand_below(&rng, 1000) < 5) orphan_round(&rng, &orphan_ctx);
    i++;
  }
  double elapsed = now_seconds() - start;

  free(plan);
  free(clean);
  TH_CHECK_OK(tl_context_destroy(orphan_ctx));
  tl_pool_destroy(foreign);
  for (int k = 0; k < 3; k++) {
    TH_CHECK_OK(tl_session_close(slots[k].session));
    TH_CHECK_OK(tl_context_destroy(slots[k].ctx));
  }
  long leaked = rel_alloc_live() - base;
  printf(
      "REL-FIGURE soak seed=0x%016llx phases=%ld seconds=%.1f lanes_run=%ld lane_failures=%ld "
      "panics=%ld entry_faults=%ld cleanup_faults=%ld lane_cancels=%ld "
      "cancelled_returns=%ld recoveries=%ld foreign_tickets=%ld busy_refusals=%ld "
      "waiters_served=%ld root_calls=%ld nonfinite_refusals=%ld lapack_argument_errors=%ld "
      "dead_owners_recovered=%ld leaked_allocations=%ld\n",
      (unsigned long long)seed, totals.phases, elapsed, totals.lanes_run, totals.lane_failures,
      totals.panics, totals.entry_faults, totals.cleanup_faults, totals.cancels,
      totals.cancelled_returns, totals.recoveries, totals.tickets, totals.busy_refusals,
      totals.waiters_served, totals.root_calls, totals.nonfinite, totals.lapack_errors,
      totals.orphans, leaked);
  TH_CHECK(leaked == 0);
  /* The injected faults and failures really happened (a soak that injects nothing proves
   * nothing). */
  TH_CHECK(totals.entry_faults > 0 && totals.cleanup_faults > 0 && totals.panics > 0);
  TH_CHECK(totals.lane_failures > 0 && totals.tickets > 0 && totals.waiters_served > 0);
  TH_CHECK(totals.nonfinite > 0 && totals.lapack_errors > 0 && totals.orphans > 0);
}

TH_TEST_MAIN(TH_CASE(faulty_phases_randomized))
