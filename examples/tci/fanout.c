/* examples/tci/fanout.c: the patched TCI as one tenlane phase. Every lane lays out its
 * workspace once in its surface's lane-scoped scratch, then loops: take a patch from the
 * shared queue, run its TCI (the linear algebra on the lane's surface), queue its children
 * or keep its piece. The queue grows while lanes work; the run ends when it is empty and no
 * lane works. A failure or a cancellation stops every lane at its next poll (the phase's
 * rules: the failing lane returns non-zero, the phase sets the run's cancellation flag,
 * every lane is joined before tl_phase_run returns). Pieces are sorted by prefix afterwards,
 * and every patch's computation depends on its prefix alone, so the train is the same bits
 * for any number of lanes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/phase.h"
#include "tci_internal.h"

typedef struct run_state {
  tci_problem problem;
  tci_options options; /* the caller's, with the value cache decided */
  tci_queue queue;
  size_t workspace_bytes;
  tl_status status;
  tl_phase_outcome outcome;
  char why[TCI_WHY]; /* the first failure's message, under the queue's lock */
} run_state;

static int lane_stopped(void *lane) { return tl_lane_cancelled(lane); }

static void prefix_text(const tci_patch *patch, char *out, size_t size) {
  int len = snprintf(out, size, "[");
  for (int i = 0; i < patch->prefix_len && (size_t)len + 4 < size; i++)
    len += snprintf(out + len, size - (size_t)len, "%s%d", i ? " " : "", patch->prefix[i]);
  snprintf(out + len, size - (size_t)len, "]");
}

static int fail_lane(tl_lane *lane, run_state *run, const tci_patch *patch, int rc,
                     const char *why) {
  char prefix[3 * TCI_MAX_SITES + 8];
  prefix_text(patch, prefix, sizeof prefix);
  pthread_mutex_lock(&run->queue.lock);
  if (!run->why[0]) snprintf(run->why, sizeof run->why, "patch %s: %s", prefix, why);
  pthread_mutex_unlock(&run->queue.lock);
  return tl_lane_fail(lane, rc, "patch %s: %s", prefix, why);
}

static int lane_loop(tl_lane *lane, run_state *run, tl_exec *exec, tci_workspace *ws);

static int tci_lane(tl_lane *lane, int lane_index, void *arg) {
  run_state *run = arg;
  int most = run->options.max_lanes;
  if (most > 0 && lane_index >= most) return 0; /* not one of the lanes asked for */
  tl_exec *exec = tl_lane_exec(lane);
  void *memory;
  if (tl_exec_scratch(exec, run->workspace_bytes, TL_SCRATCH_LANE, &memory) != TL_OK) {
    tci_queue_stop(&run->queue, 0, 0, 0);
    return tl_lane_fail(lane, TCI_E_NOMEM, "lane scratch of %zu bytes: %s", run->workspace_bytes,
                        tl_exec_message(exec));
  }
  tci_workspace *ws = tci_workspace_place(memory, run->problem.grid, run->problem.options);
  int rc = lane_loop(lane, run, exec, ws);
  tci_workspace_release(ws);
  return rc;
}

/* Take patches until the run is over (or stops); 0 or the lane's failure code. */
static int lane_loop(tl_lane *lane, run_state *run, tl_exec *exec, tci_workspace *ws) {
  tci_patch patch;
  char why[TCI_WHY];
  while (tci_queue_take(&run->queue, &patch, lane_stopped, lane)) {
    tci_patch_outcome outcome;
    double started = tci_seconds();
    int rc = tci_patch_run(exec, ws, &run->problem, &patch, lane_stopped, lane, &outcome, why);
    if (rc == TCI_E_CANCELLED || (rc == TCI_OK && tl_lane_cancelled(lane))) {
      if (rc == TCI_OK) tci_piece_free(outcome.piece);
      tci_queue_stop(&run->queue, 1, 1, outcome.evaluations);
      return (int)TL_E_CANCELLED;
    }
    if (rc) {
      tci_queue_stop(&run->queue, 0, 1, outcome.evaluations);
      return fail_lane(lane, run, &patch, rc, why);
    }
    rc = tci_queue_finish(&run->queue, &patch, &outcome, tci_seconds() - started,
                          run->problem.grid->local_dim, why);
    if (rc) return fail_lane(lane, run, &patch, rc, why);
    int after = run->problem.options->cancel_after;
    if (after > 0) {
      pthread_mutex_lock(&run->queue.lock);
      size_t finished = run->queue.finished;
      pthread_mutex_unlock(&run->queue.lock);
      if (finished >= (size_t)after) {
        pthread_mutex_lock(&run->queue.lock);
        run->queue.cancelled = 1;
        run->queue.stopped = 1;
        pthread_cond_broadcast(&run->queue.wake);
        pthread_mutex_unlock(&run->queue.lock);
        tl_lane_cancel(lane);
        return (int)TL_E_CANCELLED;
      }
    }
  }
  return tl_lane_cancelled(lane) ? (int)TL_E_CANCELLED : 0;
}

static void tci_phase(tl_phase *phase, void *arg) {
  run_state *run = arg;
  run->status = tl_phase_run(phase, tci_lane, run, &run->outcome);
}

/* Move the kept pieces into a sorted train (the queue keeps nothing afterwards). */
static void take_train(tci_queue *q, const tci_grid *grid, tci_train *out) {
  out->grid = *grid;
  out->count = q->kept_count;
  out->pieces = q->kept;
  q->kept = NULL;
  q->kept_count = 0;
  tci_train_sort(out);
}

int tci_run_lanes(tl_session *session, const tci_grid *grid, const tci_function *function,
                  const tci_options *options, tci_train *out, tci_stats *stats, char *why) {
  memset(out, 0, sizeof *out);
  int rc = tci_check_run(grid, function, options, why);
  if (rc) return rc;
  static run_state zero;
  run_state *run = malloc(sizeof *run);
  if (!run) {
    snprintf(why, TCI_WHY, "no memory for a run");
    return TCI_E_NOMEM;
  }
  *run = zero;
  run->problem.grid = grid;
  run->problem.function = function;
  tci_options_resolve(&run->options, options, function);
  run->problem.options = &run->options;
  options = &run->options;
  run->workspace_bytes = tci_workspace_bytes(grid, options);
  double t0 = tci_seconds();
  rc = tci_problem_scale(grid, function, options, &run->problem.scale, why);
  if (rc == TCI_OK) rc = tci_queue_init(&run->queue, 64, why);
  if (rc) {
    free(run);
    return rc;
  }
  tl_status st = tl_session_phase(session, tci_phase, run);
  if (st != TL_OK) {
    snprintf(why, TCI_WHY, "tl_session_phase: %s", tl_session_message(session));
    rc = TCI_E_TENLANE;
  } else if (run->queue.failed) {
    snprintf(why, TCI_WHY, "%s", run->why[0] ? run->why : run->outcome.message);
    rc = TCI_E_FUNCTION;
    /* The lane's own code says which kind of failure it was. */
    if (run->outcome.kind == TL_PHASE_LANE && run->outcome.lane_code > 0 &&
        run->outcome.lane_code <= TCI_E_IO)
      rc = run->outcome.lane_code;
  } else if (run->queue.cancelled) {
    snprintf(why, TCI_WHY, "the run was cancelled after %zu patches; every lane joined",
             run->queue.finished);
    rc = TCI_E_CANCELLED;
  } else if (run->status != TL_OK) {
    snprintf(why, TCI_WHY, "tl_phase_run: %s", run->outcome.message);
    rc = TCI_E_TENLANE;
  }
  if (stats) {
    *stats = run->queue.stats;
    stats->seconds = tci_seconds() - t0;
    stats->lanes = run->outcome.lanes_entered;
    if (options->max_lanes > 0 && stats->lanes > options->max_lanes)
      stats->lanes = options->max_lanes;
  }
  if (rc == TCI_OK) take_train(&run->queue, grid, out);
  tci_queue_destroy(&run->queue);
  free(run);
  return rc;
}
