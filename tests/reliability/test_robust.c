/* tests/reliability/test_robust.c: handles, threads, limits and messages (issue 11, items
 * 4-10, and issue 14's message items). Each case is one required behaviour: a stale or
 * foreign handle is refused without being trusted, a thread's exit, a fork or a jump out of
 * a phase never leaves anything blocked, limits have their own status, and a message
 * begins with the entry point the user called. Every case is bounded by the harness
 * alarm and ctest's TIMEOUT. */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "rel_common.h"
#include "tenlane/ops.h"
#include "tenlane/map.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "th_fixtures.h"
#include "th_test.h"

static void check_prefix(const char *message, const char *call) {
  size_t length = strlen(call);
  if (strncmp(message, call, length) != 0 || message[length] != ':') {
    fprintf(stderr, "message \"%s\" should begin with \"%s:\"\n", message, call);
    TH_CHECK(0);
  }
}

/* Item 10: spin_us has a stated upper bound, refused above it. */
static void robust_spin_is_bounded(void) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  config.spin_us = INT_MAX;
  tl_context *ctx = NULL;
  TH_CHECK_STATUS(tl_context_create(&config, &ctx), TL_E_INVALID);
  check_prefix(tl_last_message(), "tl_context_create");
  TH_CHECK(strstr(tl_last_message(), "spin_us") != NULL);
  TH_CHECK(ctx == NULL);
  tl_pool_config pool_config;
  tl_pool_config_init(&pool_config);
  pool_config.workers = 1;
  pool_config.spin_us = 10001;
  tl_pool *pool = NULL;
  TH_CHECK_STATUS(tl_pool_create(&pool_config, &pool), TL_E_INVALID);
  check_prefix(tl_last_message(), "tl_pool_create");
  config.spin_us = 10000; /* the bound itself is accepted */
  TH_CHECK_OK(tl_context_create(&config, &ctx));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

static int shape_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec;
  (void)lane_index;
  (void)arg;
  return item == 5 ? (int)TL_E_SHAPE : 0;
}

/* Issue 14: a failed map's message stays on the session, and names statuses, not numbers. */
static void robust_map_message_names_status(void) {
  th_held held;
  th_held_open(&held, 2);
  tl_map_outcome outcome;
  TH_CHECK_STATUS(tl_map(held.session, 16, shape_item, NULL, &outcome), TL_E_LANE);
  TH_CHECK(outcome.failed_item == 5 && outcome.code == (int)TL_E_SHAPE);
  if (strstr(outcome.message, "TL_E_SHAPE") == NULL) {
    fprintf(stderr, "outcome message: %s\n", outcome.message);
    TH_CHECK(0);
  }
  check_prefix(tl_last_message(), "tl_map");
  check_prefix(tl_session_message(held.session), "tl_map");
  TH_CHECK(strstr(tl_session_message(held.session), "TL_E_SHAPE") != NULL);
  th_held_close(&held);
}

typedef struct foreign_call {
  tl_session *session;
  tl_status status;
  char message[512];
} foreign_call;

static void *map_from_other_thread(void *arg) {
  foreign_call *call = arg;
  call->status = tl_map(call->session, 4, shape_item, NULL, NULL);
  snprintf(call->message, sizeof call->message, "%s", tl_last_message());
  return NULL;
}

/* Issue 14: the wrong-thread message names tl_map (what was called) and points at tickets. */
static void robust_wrong_thread_message_names_call(void) {
  th_held held;
  th_held_open(&held, 2);
  foreign_call call = {held.session, TL_OK, {0}};
  th_thread thread;
  th_thread_start(&thread, map_from_other_thread, &call);
  th_thread_join(&thread, 10000);
  TH_CHECK_STATUS(call.status, TL_E_WRONG_THREAD);
  check_prefix(call.message, "tl_map");
  TH_CHECK(strstr(call.message, "ticket") != NULL);
  th_held_close(&held);
}

/* ---- Item 4: fork() with a live context ------------------------------------------------ */

static int noop_lane(tl_lane *lane, int lane_index, void *arg) {
  (void)lane, (void)lane_index, (void)arg;
  return 0;
}

static void run_noop(tl_phase *phase, void *arg) {
  tl_status *status = arg;
  *status = tl_phase_run(phase, noop_lane, NULL, NULL);
}

static void noop_pool_fn(int worker_index, void *arg) { (void)worker_index, (void)arg; }

/* What the child checks; its exit status is the number of the first failed check. */
static int child_after_fork(tl_context *ctx, tl_session *session, tl_pool *pool) {
  tl_status inner = TL_OK;
  if (tl_session_phase(session, run_noop, &inner) != TL_E_FORKED) return 10;
  if (tl_map(session, 4, NULL, NULL, NULL) == TL_OK) return 11;
  int64_t n = 1 << 20;
  tl_tensor a, out;
  if (tl_tensor_create(TL_F64, 1, &n, &a) != TL_OK) return 12;
  if (tl_tensor_create(TL_F64, 1, &n, &out) != TL_OK) return 13;
  for (int64_t i = 0; i < n; i++) ((double *)a.data)[i] = (double)i;
  tl_status add = tl_add_into(tl_session_exec(session), &a, &a, &out);
  if (add != TL_OK && add != TL_E_FORKED) return 14;
  if (add == TL_OK && ((double *)out.data)[n - 1] != 2.0 * (double)(n - 1)) return 15;
  tl_tensor_release(&a);
  tl_tensor_release(&out);
  if (tl_pool_broadcast(pool, noop_pool_fn, NULL) != TL_E_FORKED) return 16;
  if (tl_session_close(session) != TL_E_FORKED) return 17;
  if (tl_context_destroy(ctx) != TL_OK) return 18;
  tl_pool_destroy(pool);
  return 0;
}

static void robust_fork_child_never_hangs(void) {
  th_held held;
  th_held_open(&held, 2);
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = 2;
  tl_pool *pool;
  TH_CHECK_OK(tl_pool_create(&config, &pool));
  tl_status inner = TL_E_INVALID;
  TH_CHECK_OK(tl_session_phase(held.session, run_noop, &inner)); /* workers warm */
  TH_CHECK_OK(inner);
  fflush(NULL);
  pid_t child = fork();
  TH_CHECK(child >= 0);
  if (child == 0) _exit(child_after_fork(held.ctx, held.session, pool));
  int status = 0;
  int waited_ms = 0;
  while (waitpid(child, &status, WNOHANG) == 0 && waited_ms < 20000) {
    usleep(10000);
    waited_ms += 10;
  }
  if (waited_ms >= 20000) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    fprintf(stderr, "the child hung after fork()\n");
    TH_CHECK(0);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    TH_CHECK(0);
  }
  /* The parent is untouched. */
  TH_CHECK_OK(tl_session_phase(held.session, run_noop, &inner));
  TH_CHECK_OK(inner);
  TH_CHECK_OK(tl_pool_broadcast(pool, noop_pool_fn, NULL));
  tl_pool_destroy(pool);
  th_held_close(&held);
}

/* ---- Items 5 and 8: a thread that exits holding a session ------------------------------- */

typedef struct exiting_owner {
  tl_context *ctx;
  tl_session *session;
  tl_status status;
  uint64_t token;
} exiting_owner;

static void *open_and_exit(void *arg) {
  exiting_owner *owner = arg;
  owner->token = tl__thread_token();
  owner->status = tl_session_open(owner->ctx, tl_owner_new(), TL_NOWAIT, &owner->session);
  return NULL; /* exits holding the session */
}

typedef struct stale_use {
  tl_session *session;
  tl_status phase_status, close_status;
  uint64_t token;
} stale_use;

static void *use_old_session(void *arg) {
  stale_use *use = arg;
  use->token = tl__thread_token();
  tl_status inner = TL_OK;
  use->phase_status = tl_session_phase(use->session, run_noop, &inner);
  use->close_status = tl_session_close(use->session);
  return NULL;
}

/* Item 5: the next thread (glibc gives it the same thread-local addresses) is not taken for
 * the dead opener: it has another identity, and the session is not its. */
static void robust_thread_identity_is_not_reused(void) {
  tl_context *ctx = th_make_context(2);
  exiting_owner owner = {ctx, NULL, TL_E_INVALID, 0};
  th_thread thread;
  th_thread_start(&thread, open_and_exit, &owner);
  th_thread_join(&thread, 10000);
  TH_CHECK_OK(owner.status);
  stale_use use = {owner.session, TL_OK, TL_OK, 0};
  th_thread_start(&thread, use_old_session, &use);
  th_thread_join(&thread, 10000);
  TH_CHECK(use.token != owner.token);
  TH_CHECK(use.phase_status != TL_OK);
  TH_CHECK(use.close_status != TL_OK);
  tl_status destroyed = tl_context_destroy(ctx);
  if (destroyed == TL_E_OWNER_DEAD) destroyed = tl_context_destroy(ctx);
  TH_CHECK_OK(destroyed);
}

typedef struct waiting_opener {
  tl_context *ctx;
  tl_status status;
} waiting_opener;

static void *open_waiting(void *arg) {
  waiting_opener *opener = arg;
  tl_session *session;
  opener->status = tl_session_open(opener->ctx, tl_owner_new(), TL_WAIT, &session);
  if (opener->status == TL_OK) tl_session_close(session);
  return NULL;
}

static int one_waiter(void *arg) {
  tl_context_stats stats;
  tl_context_stats_get(arg, &stats);
  return stats.waiting_openers == 1;
}

static int held_by_someone(void *arg) {
  tl_context_stats stats;
  tl_context_stats_get(arg, &stats);
  return stats.owner != 0;
}

typedef struct gate {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int open;
} gate;

typedef struct held_then_exit {
  tl_context *ctx;
  gate *release;
  tl_status status;
} held_then_exit;

static void *hold_until_released_then_exit(void *arg) {
  held_then_exit *owner = arg;
  tl_session *session;
  owner->status = tl_session_open(owner->ctx, tl_owner_new(), TL_NOWAIT, &session);
  pthread_mutex_lock(&owner->release->lock);
  while (!owner->release->open) pthread_cond_wait(&owner->release->cond, &owner->release->lock);
  pthread_mutex_unlock(&owner->release->lock);
  return NULL; /* exits holding the session */
}

/* Item 8: the owner's thread ends holding the session. A TL_WAIT opener queued behind it is
 * served with TL_E_OWNER_DEAD (once), destroy likewise, and then everything works. */
static void robust_abandoned_owner_is_recovered(void) {
  tl_context *ctx = th_make_context(2);
  gate release = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  held_then_exit owner = {ctx, &release, TL_E_INVALID};
  th_thread holder, waiter;
  th_thread_start(&holder, hold_until_released_then_exit, &owner);
  waiting_opener opener = {ctx, TL_E_INVALID};
  TH_CHECK(th_wait_until(held_by_someone, ctx, 10000));
  th_thread_start(&waiter, open_waiting, &opener);
  TH_CHECK(th_wait_until(one_waiter, ctx, 10000));
  pthread_mutex_lock(&release.lock);
  release.open = 1;
  pthread_cond_signal(&release.cond);
  pthread_mutex_unlock(&release.lock);
  th_thread_join(&holder, 10000);
  th_thread_join(&waiter, 10000); /* before the fix: blocked for ever */
  TH_CHECK_OK(owner.status);
  TH_CHECK_STATUS(opener.status, TL_E_OWNER_DEAD);
  /* Reported once: the next opener gets the context, works, closes. */
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  tl_status inner = TL_E_INVALID;
  TH_CHECK_OK(tl_session_phase(session, run_noop, &inner));
  TH_CHECK_OK(inner);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
  /* Destroy right after the death: told once, then done. */
  ctx = th_make_context(1);
  exiting_owner gone = {ctx, NULL, TL_E_INVALID, 0};
  th_thread_start(&holder, open_and_exit, &gone);
  th_thread_join(&holder, 10000);
  TH_CHECK_OK(gone.status);
  TH_CHECK_STATUS(tl_context_destroy(ctx), TL_E_OWNER_DEAD);
  check_prefix(tl_last_message(), "tl_context_destroy");
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* ---- Item 6: a closed handle stays closed after a reopen on the same thread -------------- */

static void robust_closed_session_stays_stale(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *first, *second;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &first));
  TH_CHECK_OK(tl_session_close(first));
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &second));
  tl_status inner = TL_OK;
  TH_CHECK_STATUS(tl_session_phase(first, run_noop, &inner), TL_E_STALE);
  check_prefix(tl_last_message(), "tl_session_phase");
  tl_ticket ticket;
  TH_CHECK_STATUS(tl_session_ticket(first, &ticket), TL_E_STALE);
  TH_CHECK_STATUS(tl_map(first, 2, NULL, NULL, NULL), TL_E_STALE);
  TH_CHECK_STATUS(tl_session_close(first), TL_E_STALE);
  TH_CHECK(tl_session_owner(first) == 0);
  TH_CHECK_OK(tl_session_phase(second, run_noop, &inner)); /* the live one is untouched */
  TH_CHECK_OK(inner);
  TH_CHECK_OK(tl_session_close(second));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* ---- Item 7: lanes, tickets and phases kept past their callback ------------------------- */

typedef struct kept {
  tl_exec *exec[8];
  tl_lane *lane[8];
  tl_phase *phase;
} kept;

static int keep_lane(tl_lane *lane, int lane_index, void *arg) {
  kept *k = arg;
  k->exec[lane_index] = tl_lane_exec(lane);
  k->lane[lane_index] = lane;
  return 0;
}

static void keep_phase(tl_phase *phase, void *arg) {
  kept *k = arg;
  k->phase = phase;
  TH_CHECK_OK(tl_phase_run(phase, keep_lane, k, NULL));
}

static int keep_ticket_exec(tl_exec *exec, void *arg) {
  *(tl_exec **)arg = exec;
  return 0;
}

typedef struct ticket_use {
  tl_ticket ticket;
  tl_status enter_status, kept_status;
} ticket_use;

static void *enter_then_use_kept(void *arg) {
  ticket_use *use = arg;
  tl_exec *exec = NULL;
  use->enter_status = tl_ticket_enter(&use->ticket, keep_ticket_exec, &exec, NULL);
  double data[4] = {1, 2, 3, 4}, out[4];
  tl_tensor x = th_vec_f64(data, 4), y = th_vec_f64(out, 4);
  use->kept_status = tl_add_into(exec, &x, &x, &y);
  return NULL;
}

typedef struct old_token {
  tl_phase *old;
  tl_status run_status;
  int lanes;
} old_token;

static void use_old_token(tl_phase *phase, void *arg) {
  (void)phase;
  old_token *use = arg;
  use->lanes = tl_phase_lanes(use->old);
  use->run_status = tl_phase_run(use->old, noop_lane, NULL, NULL);
}

static void robust_kept_handles_are_refused(void) {
  for (int budget = 1; budget <= 2; budget++) {
    th_held held;
    th_held_open(&held, budget);
    kept k;
    memset(&k, 0, sizeof k);
    TH_CHECK_OK(tl_session_phase(held.session, keep_phase, &k));
    double data[4] = {1, 2, 3, 4}, out[4];
    tl_tensor x = th_vec_f64(data, 4), y = th_vec_f64(out, 4);
    for (int i = 0; i < budget; i++) {
      TH_CHECK_STATUS(tl_add_into(k.exec[i], &x, &x, &y), TL_E_STALE);
      TH_CHECK(tl_lane_cancelled(k.lane[i]) == 1);
      tl_lane_cancel(k.lane[i]);
    }
    TH_CHECK_STATUS(tl_phase_run(k.phase, noop_lane, NULL, NULL), TL_E_STALE);
    /* A token kept across 4096 later phases does not name a live one. */
    tl_status inner;
    for (int i = 0; i < 4096; i++) TH_CHECK_OK(tl_session_phase(held.session, run_noop, &inner));
    old_token use = {k.phase, TL_OK, -1};
    TH_CHECK_OK(tl_session_phase(held.session, use_old_token, &use));
    TH_CHECK(use.lanes == 0);
    TH_CHECK_STATUS(use.run_status, TL_E_STALE);
    /* A ticket surface used after its entry returned, on the same thread. */
    ticket_use ticket = {{0}, TL_E_INVALID, TL_OK};
    TH_CHECK_OK(tl_session_ticket(held.session, &ticket.ticket));
    th_thread thread;
    th_thread_start(&thread, enter_then_use_kept, &ticket);
    th_thread_join(&thread, 10000);
    TH_CHECK_OK(ticket.enter_status);
    TH_CHECK_STATUS(ticket.kept_status, TL_E_STALE);
    th_held_close(&held);
  }
}

/* ---- Item 8: a longjmp out of a phase callback ------------------------------------------ */

static jmp_buf escape;

static void jump_out(tl_phase *phase, void *arg) {
  (void)phase, (void)arg;
  longjmp(escape, 1);
}

static void robust_longjmp_out_of_phase_is_detected(void) {
  tl_context *ctx = th_make_context(2);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
  if (setjmp(escape) == 0) {
    tl_session_phase(session, jump_out, NULL);
    TH_CHECK(0); /* not reached */
  }
  /* Before the fix: TL_E_PHASE_ACTIVE for ever. */
  tl_status inner = TL_E_INVALID;
  TH_CHECK_OK(tl_session_phase(session, run_noop, &inner));
  TH_CHECK_OK(inner);
  if (setjmp(escape) == 0) {
    tl_session_phase(session, jump_out, NULL);
    TH_CHECK(0);
  }
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* ---- Item 9: contexts per thread --------------------------------------------------------- */

static void robust_contexts_per_thread_limit(void) {
  tl_context *ctx[9];
  tl_session *session[9];
  for (int i = 0; i < 9; i++) ctx[i] = th_make_context(1);
  for (int i = 0; i < 8; i++)
    TH_CHECK_OK(tl_session_open(ctx[i], tl_owner_new(), TL_NOWAIT, &session[i]));
  TH_CHECK_STATUS(tl_session_open(ctx[8], tl_owner_new(), TL_NOWAIT, &session[8]), TL_E_LIMIT);
  check_prefix(tl_last_message(), "tl_session_open");
  TH_CHECK(strstr(tl_last_message(), "TL_CONTEXTS_PER_THREAD_MAX") != NULL);
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx[8], &stats));
  TH_CHECK(stats.owner == 0); /* nothing held */
  TH_CHECK_OK(tl_session_close(session[0]));
  TH_CHECK_OK(tl_session_open(ctx[8], tl_owner_new(), TL_NOWAIT, &session[8]));
  for (int i = 1; i < 9; i++) TH_CHECK_OK(tl_session_close(session[i]));
  for (int i = 0; i < 9; i++) TH_CHECK_OK(tl_context_destroy(ctx[i]));
}

TH_TEST_MAIN(TH_CASE(robust_spin_is_bounded), TH_CASE(robust_map_message_names_status),
             TH_CASE(robust_wrong_thread_message_names_call),
             TH_CASE(robust_fork_child_never_hangs), TH_CASE(robust_thread_identity_is_not_reused),
             TH_CASE(robust_abandoned_owner_is_recovered),
             TH_CASE(robust_closed_session_stays_stale), TH_CASE(robust_kept_handles_are_refused),
             TH_CASE(robust_longjmp_out_of_phase_is_detected),
             TH_CASE(robust_contexts_per_thread_limit))
