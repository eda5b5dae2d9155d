/* tests/session/test_session.c: admission, the held session, its surface and tickets. */
#define _GNU_SOURCE 1
#include <stdatomic.h>
#include <string.h>

#include "base/fault.h"
#include "interleave.h"
#include "core/core_int.h"
#include "tenlane/ops.h"
#include "tenlane/panic.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "th_fixtures.h"
#include "th_test.h"

#define N 1000

static void fill_inputs(double *a, double *b, int n) {
  for (int i = 0; i < n; i++) {
    a[i] = 0.5 * i - 3.0;
    b[i] = 1.0 / (i + 1);
  }
}

static int add_once(tl_exec *exec, void *arg) {
  double **bufs = arg;
  tl_tensor a = th_vec_f64(bufs[0], N), b = th_vec_f64(bufs[1], N), c = th_vec_f64(bufs[2], N);
  return (int)tl_add_into(exec, &a, &b, &c);
}

static void held_session_matches_the_scoped_entry(void) {
  for (int threads = 1; threads <= 4; threads *= 2) {
    tl_context *ctx = th_make_context(threads);
    static double a[N], b[N], scoped[N], held[N];
    fill_inputs(a, b, N);
    tl_owner owner = tl_owner_new();
    /* Scoped: open, one operation, close, per call. */
    double *scoped_bufs[3] = {a, b, scoped};
    for (int round = 0; round < 3; round++) {
      int result = -1;
      TH_CHECK_OK(tl_session_with(ctx, owner, TL_NOWAIT, add_once, scoped_bufs, &result));
      TH_CHECK(result == TL_OK);
    }
    /* Held: one open, the same operations, one close. */
    tl_session *session;
    TH_CHECK_OK(tl_session_open(ctx, owner, TL_NOWAIT, &session));
    double *held_bufs[3] = {a, b, held};
    for (int round = 0; round < 3; round++)
      TH_CHECK(add_once(tl_session_exec(session), held_bufs) == 0);
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK(memcmp(scoped, held, sizeof held) == 0);
    for (int i = 0; i < N; i++) TH_CHECK(held[i] == a[i] + b[i]);
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
}

static int open_inside_ticket(tl_exec *exec, void *arg) {
  tl_context *ctx = arg;
  tl_session *inner = NULL;
  if (tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &inner) != TL_E_REENTERED) return 1;
  if (inner != NULL) return 2;
  if (tl_exec_kind_of(exec) != TL_EXEC_TICKET || tl_exec_team(exec) != 1) return 3;
  return 0;
}

static void nested_entry_is_rejected_and_the_session_survives(void) {
  tl_context *ctx = th_make_context(2);
  tl_owner owner = tl_owner_new();
  tl_session *session, *again = NULL;
  TH_CHECK_OK(tl_session_open(ctx, owner, TL_NOWAIT, &session));
  TH_CHECK_STATUS(tl_session_open(ctx, owner, TL_NOWAIT, &again), TL_E_REENTERED);
  TH_CHECK_STATUS(tl_session_open(ctx, tl_owner_new(), TL_WAIT, &again), TL_E_REENTERED);
  TH_CHECK(again == NULL);
  TH_CHECK(strstr(tl_last_message(), "already executes for this context") != NULL);
  /* A ticket entry on the holder's own thread is the same reentry. */
  tl_ticket ticket;
  TH_CHECK_OK(tl_session_ticket(session, &ticket));
  int result = -1;
  TH_CHECK_STATUS(tl_ticket_enter(&ticket, open_inside_ticket, ctx, &result), TL_E_REENTERED);
  TH_CHECK(result == -1);
  /* The session still works and closes cleanly. */
  static double a[N], b[N], c[N];
  fill_inputs(a, b, N);
  double *bufs[3] = {a, b, c};
  TH_CHECK(add_once(tl_session_exec(session), bufs) == 0);
  TH_CHECK(c[7] == a[7] + b[7]);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct ticket_args {
  tl_ticket ticket;
  tl_context *ctx;
  int result;
  tl_status status;
  const void *root_scratch;
  const void *child_scratch;
  double *bufs[3];
} ticket_args;

static int child_checks(tl_exec *exec, void *arg) {
  ticket_args *args = arg;
  args->child_scratch = tl_exec_scratch_id(exec);
  int rc = open_inside_ticket(exec, args->ctx);
  if (rc != 0) return rc;
  tl_context_stats stats;
  tl_context_stats_get(args->ctx, &stats);
  if (!stats.root_checked_out || stats.active_children != 1) return 10;
  return add_once(exec, args->bufs);
}

static void *enter_ticket_thread(void *arg) {
  ticket_args *args = arg;
  args->status = tl_ticket_enter(&args->ticket, child_checks, args, &args->result);
  return NULL;
}

static void child_tickets_do_not_open_held_roots(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  static double a[N], b[N], c[N];
  fill_inputs(a, b, N);
  ticket_args args;
  memset(&args, 0, sizeof args);
  args.ctx = ctx;
  args.bufs[0] = a, args.bufs[1] = b, args.bufs[2] = c;
  TH_CHECK_OK(tl_session_ticket(session, &args.ticket));
  th_thread thread;
  th_thread_start(&thread, enter_ticket_thread, &args);
  th_thread_join(&thread, 10000);
  TH_CHECK_OK(args.status);
  TH_CHECK(args.result == 0);
  TH_CHECK(args.child_scratch != NULL);
  TH_CHECK(args.child_scratch != tl_exec_scratch_id(tl_session_exec(session)));
  TH_CHECK(c[5] == a[5] + b[5]);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.root_checked_out == 1 && stats.active_children == 0);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct stats_args {
  tl_context *ctx;
  tl_context_stats stats;
} stats_args;

static void *read_stats(void *arg) {
  stats_args *args = arg;
  TH_CHECK_OK(tl_context_stats_get(args->ctx, &args->stats));
  return NULL;
}

static void management_reports_checked_out_resources_while_held(void) {
  tl_context *ctx = th_make_context(2);
  tl_owner owner = tl_owner_new();
  stats_args args;
  memset(&args, 0, sizeof args);
  args.ctx = ctx;
  th_thread thread;
  th_thread_start(&thread, read_stats, &args);
  th_thread_join(&thread, 5000);
  TH_CHECK(args.stats.session_open == 0 && args.stats.root_checked_out == 0);
  TH_CHECK(args.stats.budget == 2 && args.stats.has_pool == 1 && args.stats.owner == 0);

  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, owner, TL_NOWAIT, &session));
  static double a[N], b[N], c[N];
  fill_inputs(a, b, N);
  double *bufs[3] = {a, b, c};
  TH_CHECK(add_once(tl_session_exec(session), bufs) == 0);
  th_thread_start(&thread, read_stats, &args);
  th_thread_join(&thread, 5000); /* must not block while the session is held */
  TH_CHECK(args.stats.session_open == 1);
  TH_CHECK(args.stats.root_checked_out == 1);
  TH_CHECK(args.stats.owner == owner);
  TH_CHECK(args.stats.phase_active == 0);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_stats_get(ctx, &args.stats));
  TH_CHECK(args.stats.session_open == 0 && args.stats.root_checked_out == 0 &&
           args.stats.owner == 0);
  TH_CHECK_STATUS(tl_context_stats_get(NULL, &args.stats), TL_E_INVALID);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static void close_releases_everything_and_a_queued_opener_then_succeeds(void) {
  tl_context *ctx = th_make_context(2);
  const step script[] = {
      {'A', OPEN_NOWAIT, TL_OK, 0},     /* A opens */
      {'A', RUN_OP, TL_OK, 0},          /* A works */
      {'B', OPEN_WAIT_ASYNC, TL_OK, 0}, /* B queues behind A */
      {'-', EXPECT_QUEUED, TL_OK, 1},   /* B is in the queue */
      {'-', EXPECT_HOLDER, TL_OK, 0},   /* A still holds */
      {'A', CLOSE, TL_OK, 0},           /* A closes */
      {'B', AWAIT_OPEN, TL_OK, 0},      /* B got in */
      {'-', EXPECT_HOLDER, TL_OK, 1},   /* and holds */
      {'B', RUN_OP, TL_OK, 0},          /* B works with the released resources */
      {'B', CLOSE, TL_OK, 0},
  };
  run_interleaving(ctx, script, (int)(sizeof script / sizeof script[0]));
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.session_open == 0 && stats.root_checked_out == 0 && stats.owner == 0 &&
           stats.waiting_openers == 0 && stats.active_children == 0);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static void waiting_openers_are_admitted_in_arrival_order(void) {
  tl_context *ctx = th_make_context(2);
  const step script[] = {
      {'A', OPEN_NOWAIT, TL_OK, 0},   {'B', OPEN_WAIT_ASYNC, TL_OK, 0},
      {'-', EXPECT_QUEUED, TL_OK, 1}, {'C', OPEN_WAIT_ASYNC, TL_OK, 0},
      {'-', EXPECT_QUEUED, TL_OK, 2}, {'D', OPEN_NOWAIT, TL_E_BUSY, 0},
      {'A', CLOSE, TL_OK, 0},         {'B', AWAIT_OPEN, TL_OK, 0},
      {'-', EXPECT_HOLDER, TL_OK, 1}, {'-', EXPECT_QUEUED, TL_OK, 1},
      {'B', CLOSE, TL_OK, 0},         {'C', AWAIT_OPEN, TL_OK, 0},
      {'-', EXPECT_HOLDER, TL_OK, 2}, {'C', CLOSE, TL_OK, 0},
  };
  run_interleaving(ctx, script, (int)(sizeof script / sizeof script[0]));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static void a_non_waiting_unrelated_owner_is_rejected_while_the_session_is_held(void) {
  tl_context *ctx = th_make_context(2);
  const step script[] = {
      {'A', OPEN_NOWAIT, TL_OK, 0},     /* A opens */
      {'B', OPEN_NOWAIT, TL_E_BUSY, 0}, /* B opens non-waiting: refused at once */
      {'-', EXPECT_QUEUED, TL_OK, 0},   /* and not queued */
      {'A', RUN_OP, TL_OK, 0},          /* A is unaffected */
      {'A', CLOSE, TL_OK, 0},           /* A closes */
      {'B', OPEN_NOWAIT, TL_OK, 0},     /* now B gets in */
      {'B', CLOSE, TL_OK, 0},
  };
  run_interleaving(ctx, script, (int)(sizeof script / sizeof script[0]));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct worker_open_args {
  tl_context *ctx;
  atomic_int busy;
  atomic_int other;
} worker_open_args;

static void worker_tries_to_open(int worker_index, void *arg) {
  (void)worker_index;
  worker_open_args *args = arg;
  tl_session *session = NULL;
  tl_status status = tl_session_open(args->ctx, tl_owner_new(), TL_WAIT, &session);
  if (status == TL_E_BUSY && session == NULL) {
    atomic_fetch_add(&args->busy, 1);
  } else {
    atomic_fetch_add(&args->other, 1);
  }
}

static void a_pool_worker_never_waits_for_admission(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  /* Workers of an unrelated pool ask to wait; they must be refused, not queued. If one
   * queued, this broadcast would never finish and the test would fail by its alarm. */
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = 2;
  tl_pool *pool;
  TH_CHECK_OK(tl_pool_create(&config, &pool));
  worker_open_args args;
  memset(&args, 0, sizeof args);
  args.ctx = ctx;
  TH_CHECK_OK(tl_pool_broadcast(pool, worker_tries_to_open, &args));
  TH_CHECK(atomic_load(&args.busy) == 2 && atomic_load(&args.other) == 0);
  /* The context's own workers are refused too. */
  memset(&args, 0, sizeof args);
  args.ctx = ctx;
  TH_CHECK_OK(tl_pool_broadcast(tl_context_pool(ctx), worker_tries_to_open, &args));
  TH_CHECK(atomic_load(&args.busy) == 2);
  tl_pool_destroy(pool);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct foreign_args {
  tl_session *session;
  tl_status add_status, close_status, phase_status, ticket_status;
  double *bufs[3];
} foreign_args;

static void unused_phase(tl_phase *phase, void *arg) { (void)phase, (void)arg; }

static void *use_from_other_thread(void *arg) {
  foreign_args *args = arg;
  tl_tensor a = th_vec_f64(args->bufs[0], N), b = th_vec_f64(args->bufs[1], N),
            c = th_vec_f64(args->bufs[2], N);
  args->add_status = tl_add_into(tl_session_exec(args->session), &a, &b, &c);
  args->close_status = tl_session_close(args->session);
  args->phase_status = tl_session_phase(args->session, unused_phase, NULL);
  tl_ticket ticket;
  args->ticket_status = tl_session_ticket(args->session, &ticket);
  return NULL;
}

static void the_session_refuses_calls_from_another_thread(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  static double a[N], b[N], c[N];
  fill_inputs(a, b, N);
  for (int i = 0; i < N; i++) c[i] = -7.0;
  foreign_args args = {session, TL_OK, TL_OK, TL_OK, TL_OK, {a, b, c}};
  th_thread thread;
  th_thread_start(&thread, use_from_other_thread, &args);
  th_thread_join(&thread, 5000);
  TH_CHECK(args.add_status == TL_E_WRONG_THREAD);
  TH_CHECK(args.close_status == TL_E_WRONG_THREAD);
  TH_CHECK(args.phase_status == TL_E_WRONG_THREAD);
  TH_CHECK(args.ticket_status == TL_E_WRONG_THREAD);
  for (int i = 0; i < N; i++) TH_CHECK(c[i] == -7.0); /* nothing written */
  /* Still held, still usable on its own thread. */
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.session_open == 1);
  double *bufs[3] = {a, b, c};
  TH_CHECK(add_once(tl_session_exec(session), bufs) == 0);
  TH_CHECK(c[0] == a[0] + b[0]);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct foreign_child_args {
  tl_ticket ticket;
  atomic_int ok;
  double *a, *b;
  double out[4][N];
} foreign_child_args;

typedef struct child_job {
  foreign_child_args *args;
  int worker;
} child_job;

static int child_add(tl_exec *exec, void *arg) {
  child_job *job = arg;
  if (tl_exec_kind_of(exec) != TL_EXEC_TICKET) return 1;
  tl_tensor a = th_vec_f64(job->args->a, N), b = th_vec_f64(job->args->b, N),
            c = th_vec_f64(job->args->out[job->worker], N);
  return (int)tl_add_into(exec, &a, &b, &c);
}

static void foreign_worker_enters(int worker_index, void *arg) {
  foreign_child_args *args = arg;
  child_job job = {args, worker_index};
  int result = -1;
  if (tl_ticket_enter(&args->ticket, child_add, &job, &result) == TL_OK && result == 0)
    atomic_fetch_add(&args->ok, 1);
}

static void child_work_succeeds_on_a_foreign_worker_while_the_root_is_held(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = 4;
  tl_pool *foreign;
  TH_CHECK_OK(tl_pool_create(&config, &foreign));
  static foreign_child_args args;
  static double a[N], b[N];
  fill_inputs(a, b, N);
  args.a = a, args.b = b;
  atomic_store(&args.ok, 0);
  TH_CHECK_OK(tl_session_ticket(session, &args.ticket));
  TH_CHECK_OK(tl_pool_broadcast(foreign, foreign_worker_enters, &args));
  TH_CHECK(atomic_load(&args.ok) == 4);
  for (int w = 0; w < 4; w++) {
    for (int i = 0; i < N; i++) TH_CHECK(args.out[w][i] == a[i] + b[i]);
  }
  tl_pool_destroy(foreign);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct rendezvous_args {
  tl_ticket ticket;
  atomic_int inside;
  const void *scratch[2];
  void *chunk[2];
  int slot_ok[2];
} rendezvous_args;

typedef struct rendezvous_slot {
  rendezvous_args *args;
  int slot;
} rendezvous_slot;

static int both_inside(void *arg) { return atomic_load(&((rendezvous_args *)arg)->inside) == 2; }

static int hold_scratch_together(tl_exec *exec, void *arg) {
  rendezvous_slot *slot = arg;
  rendezvous_args *args = slot->args;
  args->scratch[slot->slot] = tl_exec_scratch_id(exec);
  atomic_fetch_add(&args->inside, 1);
  /* Both entries are inside at the same moment: each must have its own surface. */
  if (!th_wait_until(both_inside, args, 10000)) return 1;
  args->slot_ok[slot->slot] = 1;
  return 0;
}

static void *enter_and_hold(void *arg) {
  rendezvous_slot *slot = arg;
  int result = -1;
  TH_CHECK_OK(tl_ticket_enter(&slot->args->ticket, hold_scratch_together, slot, &result));
  TH_CHECK(result == 0);
  return NULL;
}

static void two_concurrent_children_hold_private_scratch(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  rendezvous_args args;
  memset(&args, 0, sizeof args);
  TH_CHECK_OK(tl_session_ticket(session, &args.ticket));
  rendezvous_slot slots[2] = {{&args, 0}, {&args, 1}};
  th_thread threads[2];
  th_thread_start(&threads[0], enter_and_hold, &slots[0]);
  th_thread_start(&threads[1], enter_and_hold, &slots[1]);
  th_thread_join(&threads[0], 15000);
  th_thread_join(&threads[1], 15000);
  TH_CHECK(args.slot_ok[0] && args.slot_ok[1]);
  TH_CHECK(args.scratch[0] != NULL && args.scratch[1] != NULL);
  TH_CHECK(args.scratch[0] != args.scratch[1]);
  const void *root = tl_exec_scratch_id(tl_session_exec(session));
  TH_CHECK(args.scratch[0] != root && args.scratch[1] != root);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static int never_called(tl_exec *exec, void *arg) {
  (void)exec;
  *(int *)arg = 1;
  return 0;
}

static void *enter_stale(void *arg) {
  ticket_args *args = arg;
  int called = 0;
  args->status = tl_ticket_enter(&args->ticket, never_called, &called, NULL);
  args->result = called;
  return NULL;
}

static void a_ticket_is_refused_after_the_session_closed(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  ticket_args args;
  memset(&args, 0, sizeof args);
  TH_CHECK_OK(tl_session_ticket(session, &args.ticket));
  TH_CHECK_OK(tl_session_close(session));
  /* Even a later session of the same owner does not revive the old ticket. */
  TH_CHECK_OK(tl_session_open(ctx, args.ticket.owner, TL_NOWAIT, &session));
  th_thread thread;
  th_thread_start(&thread, enter_stale, &args);
  th_thread_join(&thread, 5000);
  TH_CHECK(args.status == TL_E_STALE && args.result == 0);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_STATUS(tl_session_close(session), TL_E_STALE);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* The interleaving the protocol model found (model/tenlane.pml, docs/design/model.md): a
 * ticket entry counts itself in just after the close drained the children, reads the
 * arbiter's first field, and reads the second only after the close released the grant.
 * Pause hooks hold each thread at that point until the other has got where it must be.
 * Since handles are resolved through the registry of open sessions (issue 11), close
 * unregisters the session before it drains, so an entry that starts after the drain is
 * refused at the registry and never reaches the arbiter: the closer's pause waits for the
 * entry to reach the arbiter or to be refused, and either way it must be TL_E_STALE with
 * the callback not called. */
typedef struct stale_race {
  ticket_args args;
  atomic_int drained;       /* the closer is paused after its drain */
  atomic_int between_loads; /* the ticket entry is paused between its two reads */
  atomic_int closed;        /* tl_session_close returned */
  atomic_int entry_done;    /* tl_ticket_enter returned */
} stale_race;

static stale_race *race;

static int flag_set(void *arg) { return atomic_load((atomic_int *)arg) != 0; }

static int between_loads_or_done(void *arg) {
  stale_race *r = arg;
  return atomic_load(&r->between_loads) || atomic_load(&r->entry_done);
}

static void pause_at(tl__pause_site site) {
  if (site == TL__PAUSE_CLOSE_DRAINED) {
    atomic_store(&race->drained, 1);
    TH_CHECK(th_wait_until(between_loads_or_done, race, 5000));
  } else if (site == TL__PAUSE_CHILD_BETWEEN_LOADS && atomic_load(&race->drained)) {
    atomic_store(&race->between_loads, 1);
    TH_CHECK(th_wait_until(flag_set, &race->closed, 5000));
  }
}

static void *enter_after_drain(void *arg) {
  stale_race *r = arg;
  TH_CHECK(th_wait_until(flag_set, &r->drained, 5000));
  int called = 0;
  r->args.status = tl_ticket_enter(&r->args.ticket, never_called, &called, NULL);
  r->args.result = called;
  atomic_store(&r->entry_done, 1);
  return NULL;
}

static void a_ticket_entering_while_the_session_closes_is_refused(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  static stale_race state;
  memset(&state, 0, sizeof state);
  race = &state;
  TH_CHECK_OK(tl_session_ticket(session, &state.args.ticket));
  atomic_store(&tl__pause_hook, pause_at);
  th_thread thread;
  th_thread_start(&thread, enter_after_drain, &state);
  TH_CHECK_OK(tl_session_close(session));
  atomic_store(&state.closed, 1);
  th_thread_join(&thread, 10000);
  atomic_store(&tl__pause_hook, (tl__pause_fn)NULL);
  TH_CHECK(state.args.status == TL_E_STALE && state.args.result == 0);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.active_children == 0);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static int returns_five(tl_exec *exec, void *arg) {
  (void)exec, (void)arg;
  return 5;
}

static void a_failed_affinity_restore_is_reported_and_everything_is_released(void) {
  int cpus[CPU_SETSIZE];
  int count = th_process_cpus(cpus, CPU_SETSIZE);
  tl_context *ctx = th_make_context_on(2, cpus, count);
  tl_owner owner = tl_owner_new();
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, owner, TL_NOWAIT, &session));
  atomic_store(&tl__fault_affinity_restore, 1);
  TH_CHECK_STATUS(tl_session_close(session), TL_E_AFFINITY);
  TH_CHECK(strstr(tl_last_message(), "CPU mask") != NULL);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.session_open == 0 && stats.root_checked_out == 0 && stats.owner == 0);
  /* The scoped entry: the restoration failure replaces the callback's own result. */
  atomic_store(&tl__fault_affinity_restore, 1);
  int result = 0;
  TH_CHECK_STATUS(tl_session_with(ctx, owner, TL_NOWAIT, returns_five, NULL, &result),
                  TL_E_AFFINITY);
  TH_CHECK(result == 5);
  TH_CHECK_OK(tl_session_open(ctx, owner, TL_NOWAIT, &session));
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct panic_args {
  tl_context *ctx;
  tl_session *session;
} panic_args;

static void open_then_panic(void *arg) {
  panic_args *args = arg;
  TH_CHECK_OK(tl_session_open(args->ctx, tl_owner_new(), TL_NOWAIT, &args->session));
  tl_panic("deliberate panic with session %p open", (void *)args->session);
}

static void a_panic_closes_a_session_opened_inside_the_caught_scope(void) {
  tl_context *ctx = th_make_context(2);
  panic_args args = {ctx, NULL};
  tl_panic_info info;
  TH_CHECK_STATUS(tl_catch(open_then_panic, &args, &info), TL_E_PANICKED);
  TH_CHECK(strstr(info.message, "deliberate panic") != NULL);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.session_open == 0 && stats.owner == 0 && stats.root_checked_out == 0);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static void status_names_and_texts_come_from_one_list(void) {
  TH_CHECK(strcmp(tl_status_name(TL_OK), "TL_OK") == 0);
  TH_CHECK(strcmp(tl_status_name(TL_E_BUSY), "TL_E_BUSY") == 0);
  TH_CHECK(strcmp(tl_status_name(TL_E_PANICKED), "TL_E_PANICKED") == 0);
  for (int s = 0; s < (int)TL__STATUS_COUNT; s++) {
    TH_CHECK(strncmp(tl_status_name((tl_status)s), "TL_", 3) == 0);
    TH_CHECK(strlen(tl_status_str((tl_status)s)) > 3);
  }
  TH_CHECK(strcmp(tl_status_name((tl_status)9999), "TL_E_?") == 0);
  /* Misuse messages name the argument and the value. */
  tl_session *session;
  TH_CHECK_STATUS(tl_session_open(NULL, 1, TL_NOWAIT, &session), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "ctx") != NULL);
  tl_context *ctx = th_make_context(1);
  TH_CHECK_STATUS(tl_session_open(ctx, 0, TL_NOWAIT, &session), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "owner 0") != NULL);
  TH_CHECK_STATUS(tl_session_open(ctx, 1, (tl_wait_mode)7, &session), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "mode is 7") != NULL);
  TH_CHECK_OK(tl_session_open(ctx, 1, TL_NOWAIT, &session));
  TH_CHECK_STATUS(tl_context_destroy(ctx), TL_E_BUSY);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

TH_TEST_MAIN(TH_CASE(held_session_matches_the_scoped_entry),
             TH_CASE(nested_entry_is_rejected_and_the_session_survives),
             TH_CASE(child_tickets_do_not_open_held_roots),
             TH_CASE(management_reports_checked_out_resources_while_held),
             TH_CASE(close_releases_everything_and_a_queued_opener_then_succeeds),
             TH_CASE(waiting_openers_are_admitted_in_arrival_order),
             TH_CASE(a_non_waiting_unrelated_owner_is_rejected_while_the_session_is_held),
             TH_CASE(a_pool_worker_never_waits_for_admission),
             TH_CASE(the_session_refuses_calls_from_another_thread),
             TH_CASE(child_work_succeeds_on_a_foreign_worker_while_the_root_is_held),
             TH_CASE(two_concurrent_children_hold_private_scratch),
             TH_CASE(a_ticket_is_refused_after_the_session_closed),
             TH_CASE(a_ticket_entering_while_the_session_closes_is_refused),
             TH_CASE(a_failed_affinity_restore_is_reported_and_everything_is_released),
             TH_CASE(a_panic_closes_a_session_opened_inside_the_caught_scope),
             TH_CASE(status_names_and_texts_come_from_one_list))
