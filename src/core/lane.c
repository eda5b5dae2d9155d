/* src/core/lane.c: one lane from entry to cleanup, and a run: every lane started, every
 * lane joined, then one outcome. A lane checks the run's cancellation flag before it enters
 * and again after entering, before the callback; its callback runs inside a catch scope on
 * its own thread, so a panic stops at the lane's boundary and is raised again on the driver
 * only after every lane has joined. */
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"
#include "base/base.h"
#include "base/fault.h"
#include "tenlane/panic.h"

typedef struct lane_call {
  tl_lane *lane;
  int code;
} lane_call;

static void lane_trampoline(void *arg) {
  lane_call *call = arg;
  tl_lane *lane = call->lane;
  call->code = lane->run->fn(lane, lane->index, lane->run->arg);
}

static void set_cancel(tl__run *run) {
  atomic_store_explicit(&run->cancel, 1, memory_order_release);
}

static int is_cancelled(tl__run *run) {
  return atomic_load_explicit(&run->cancel, memory_order_acquire);
}

static void session_failure(tl__run *run, tl__lane_report *report, tl_status status,
                            const char *what) {
  if (report->session_status == TL_OK) {
    report->session_status = status;
    snprintf(report->message, sizeof report->message, "%s: %s", what, tl_last_message());
  }
  set_cancel(run);
}

/* Run lane `index` of `run` on the calling thread. inline_lane: the budget-1 lane on the
 * driver, which already holds the grant and the mark. */
static void lane_body(tl__run *run, int index, int inline_lane) {
  tl_context *ctx = run->ctx;
  tl__lane_report *report = &ctx->lane_reports[index];
  report->entered = report->skipped = report->code = report->panicked = 0;
  report->session_status = TL_OK;
  report->message[0] = '\0';
  if (is_cancelled(run)) {
    report->skipped = 1;
    return;
  }
  /* Entry: the run already joined the holder's grant for its lanes (tl_phase_run); a lane
   * marks its thread and takes its own bundle. The inline lane's thread already carries the
   * holder's mark. */
  int marked = 0;
  tl__resources *bundle = NULL;
  tl_status status = TL_OK;
  if (tl__fault_hit(TL__FAULT_CHILD_ENTRY)) {
    status = tl__fail(TL_E_NOMEM, "lane %d: child entry failed (injected fault)", index);
  }
  if (status == TL_OK && !inline_lane) {
    status = tl__marker_push(ctx, run->owner, "tl_phase_run");
    marked = status == TL_OK;
  }
  if (status == TL_OK) status = tl__lane_bundle(ctx, index, &bundle);
  if (status != TL_OK) {
    session_failure(run, report, status, "child entry");
    if (marked) tl__marker_pop(ctx);
    return;
  }
  report->entered = 1;
  atomic_store_explicit(&report->active, 1, memory_order_relaxed);

  if (!is_cancelled(run)) {
    tl_lane *lane = &report->lane;
    lane->exec = bundle->surface;
    tl__exec_init(lane->exec, inline_lane ? TL_EXEC_INLINE : TL_EXEC_LANE, bundle, NULL, 1,
                  &run->cancel);
    lane->run = run;
    lane->index = index;
    lane->report = report;
    atomic_store_explicit(&lane->live, 1, memory_order_relaxed);
    lane_call call = {lane, 0};
    tl_panic_info info;
    tl_status caught = tl_catch(lane_trampoline, &call, &info);
    /* Retired on every path: a tl_lane or surface kept past the callback is refused. */
    atomic_store_explicit(&lane->live, 0, memory_order_relaxed);
    lane->exec->thread_token = TL__EXEC_RETIRED;
    if (caught == TL_E_PANICKED) {
      report->panicked = 1;
      snprintf(report->message, sizeof report->message, "%s", info.message);
      set_cancel(run);
    } else if (call.code != 0) {
      report->code = call.code;
      if (report->message[0] == '\0') {
        char code_text[48];
        tl__code_text(call.code, code_text, sizeof code_text);
        snprintf(report->message, sizeof report->message, "lane %d returned %s", index, code_text);
      }
      set_cancel(run);
    }
  }

  /* Cleanup: runs on every path, after the callback returned or unwound. */
  if (tl__fault_hit(TL__FAULT_CHILD_CLEANUP)) {
    tl__fail(TL_E_PROVIDER, "lane %d: child cleanup failed (injected fault)", index);
    session_failure(run, report, TL_E_PROVIDER, "child cleanup");
  }
  tl__arena_reset(&bundle->arena); /* scratch reclaimed; the bundle stays the lane's */
  atomic_store_explicit(&report->active, 0, memory_order_relaxed);
  if (marked) tl__marker_pop(ctx);
}

static void worker_lane(int worker_index, void *arg) { lane_body(arg, worker_index, 0); }

/* Fold the lanes' reports into one outcome: a session failure beats a lane failure, a real
 * lane failure beats a lane that only reports cancellation, and among equals the lowest
 * lane index wins. Returns the index of the lowest panicked lane, or -1. */
static int reduce(tl_context *ctx, int lanes, tl_phase_outcome *outcome) {
  memset(outcome, 0, sizeof *outcome);
  outcome->kind = TL_PHASE_OK;
  outcome->lane_index = -1;
  outcome->status = TL_OK;
  int session_lane = -1, failed_lane = -1, cancelled_lane = -1, panicked_lane = -1;
  for (int i = 0; i < lanes; i++) {
    tl__lane_report *report = &ctx->lane_reports[i];
    outcome->lanes_entered += report->entered;
    outcome->lanes_skipped += report->skipped;
    if (report->panicked && panicked_lane < 0) panicked_lane = i;
    if (report->session_status != TL_OK && session_lane < 0) session_lane = i;
    if (report->code != 0) {
      if (report->code == (int)TL_E_CANCELLED) {
        if (cancelled_lane < 0) cancelled_lane = i;
      } else if (failed_lane < 0) {
        failed_lane = i;
      }
    }
  }
  int chosen = session_lane >= 0 ? session_lane : failed_lane >= 0 ? failed_lane : cancelled_lane;
  if (chosen >= 0) {
    tl__lane_report *report = &ctx->lane_reports[chosen];
    outcome->lane_index = chosen;
    if (session_lane >= 0) {
      outcome->kind = TL_PHASE_SESSION;
      outcome->status = report->session_status;
    } else {
      outcome->kind = TL_PHASE_LANE;
      outcome->lane_code = report->code;
      outcome->status = TL_E_LANE;
    }
    memcpy(outcome->message, report->message, sizeof outcome->message);
  }
  return panicked_lane;
}

tl_status tl_phase_run(tl_phase *handle, tl_lane_fn lane_fn, void *arg, tl_phase_outcome *outcome) {
  tl_phase_outcome local;
  if (outcome == NULL) outcome = &local;
  memset(outcome, 0, sizeof *outcome);
  outcome->kind = TL_PHASE_NOT_RUN;
  outcome->lane_index = -1;
  tl_status status;
  tl__phase *phase = tl__phase_resolve(handle, "tl_phase_run", &status);
  if (phase == NULL) return outcome->status = status;
  if (lane_fn == NULL)
    return outcome->status = tl__fail(TL_E_INVALID, "tl_phase_run: lane_fn is NULL");
  if (phase->running)
    return outcome->status = tl__fail(TL_E_PHASE_ACTIVE,
                                      "tl_phase_run: called from inside a lane of the same phase");
  tl__run run;
  atomic_init(&run.cancel, 0);
  run.fn = lane_fn;
  run.arg = arg;
  run.ctx = phase->ctx;
  run.session = phase->session;
  run.owner = phase->session->owner;
  run.phase = phase;
  phase->running = 1;
  if (phase->ctx->pool != NULL) {
    /* The lanes join the holder's grant as children, once for the run: the session cannot
     * close while its phase is open, so one count held across the join covers them all
     * without each lane touching the shared counter. */
    tl_context *ctx = phase->ctx;
    status = tl__child_enter(&ctx->arbiter, phase->session->owner, phase->session->generation);
    if (status == TL_OK) {
      status = tl_pool_broadcast(ctx->pool, worker_lane, &run);
      tl__child_leave(&ctx->arbiter);
    }
    if (status != TL_OK) {
      phase->running = 0;
      return outcome->status = status;
    }
  } else {
    lane_body(&run, 0, 1);
  }
  phase->running = 0;
  if (!atomic_load_explicit(&run.cancel, memory_order_acquire)) {
    /* Nothing set the flag, so no lane failed, panicked or skipped: every lane entered and
     * returned 0. The driver need not pull each lane's report into its cache. */
    outcome->kind = TL_PHASE_OK;
    outcome->status = TL_OK;
    outcome->lanes_entered = phase->lanes;
    return TL_OK;
  }
  int panicked = reduce(phase->ctx, phase->lanes, outcome);
  if (panicked >= 0) {
    /* Every lane has joined: now the panic may continue on the driver. */
    tl_panic("lane %d panicked: %s", panicked, phase->ctx->lane_reports[panicked].message);
  }
  if (outcome->kind == TL_PHASE_OK) return TL_OK;
  return tl__fail(outcome->status, "tl_phase_run: lane %d: %s", outcome->lane_index,
                  outcome->message);
}

static int lane_live(const tl_lane *lane) {
  return lane != NULL && atomic_load_explicit(&lane->live, memory_order_relaxed);
}

tl_exec *tl_lane_exec(tl_lane *lane) { return lane ? lane->exec : NULL; }

int tl_lane_cancelled(const tl_lane *lane) {
  if (lane == NULL) return 0;
  if (!lane_live(lane)) return 1; /* kept past its callback: nothing more to do there */
  return atomic_load_explicit(&lane->run->cancel, memory_order_relaxed);
}

void tl_lane_cancel(tl_lane *lane) {
  if (lane_live(lane)) set_cancel(lane->run);
}

int tl_lane_fail(tl_lane *lane, int code, const char *format, ...) {
  if (!lane_live(lane) || format == NULL) return code;
  va_list args;
  va_start(args, format);
  vsnprintf(lane->report->message, sizeof lane->report->message, format, args);
  va_end(args);
  return code;
}
