/* src/map/map.c: an ordered map over items on top of one phase run. Lanes take item
 * numbers from one shared counter, in increasing order, a run of consecutive items (a
 * chunk) at a time. A failing item stops the taking (the map's own record of it) but does not
 * cancel the run: the items other lanes hold finish with their own results, so every item
 * below the lowest failing one has run to its own end when the map reports it, and a
 * failure below another one is never lost to a cancellation it caused.
 *
 * An item that returns TL_E_CANCELLED (its routes saw the run cancelled, or the callback
 * says so) is not a failure, but it did not run to its end either: it stops the taking
 * like a failure, and the items held below it still run. The map's one promise is about
 * the lowest item that did not return 0 (the stop item): every item below it ran. When
 * that item failed the map says TL_E_LANE; when it stopped on cancellation the map says
 * TL_E_CANCELLED at that item, even when a higher item failed (issue 28: before, a lane
 * that saw the cancel left its chunk and recorded nothing, and a failure above was
 * reported as if every item below it had run).
 *
 * Chunk sizes come from src/map/chunk.c. Within its chunk a lane stops at cancellation and
 * at the first item above the stop item so far.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "exec/exec.h"
#include "map/map_int.h"
#include "core/core_int.h"
#include "tenlane/map.h"

typedef struct map_state {
  tl_map_fn fn;
  void *arg;
  size_t count;
  int max_lanes; /* lanes at or above this index take no item; 0: every lane */
  size_t lanes;  /* lanes that take items (for the guided bound) */
  _Alignas(TL__CACHE_LINE) atomic_size_t next;
  _Alignas(TL__CACHE_LINE) atomic_size_t done;
  /* The lowest failing item so far (SIZE_MAX: none), written under failure_lock with the
   * message and code; lanes read it without the lock: once set, no lane takes another
   * chunk, and none runs an item above it. */
  atomic_size_t failed_item;
  /* The lowest item that did not return 0, failed or cancelled (SIZE_MAX: none), written
   * under failure_lock: lanes take no chunk once it is set and run no item above it. */
  atomic_size_t stop_item;
  pthread_mutex_t failure_lock;
  int failed_code;
  char message[TL_MESSAGE_CAPACITY];
  /* The lowest item that returned TL_E_CANCELLED or that its lane left unrun because the
   * run was cancelled; SIZE_MAX: none. Under failure_lock. */
  size_t cancelled_item;
} map_state;

/* Record that `item` stopped without running to its end because of cancellation. */
static void note_cancelled(map_state *state, size_t item) {
  pthread_mutex_lock(&state->failure_lock);
  if (item < state->cancelled_item) state->cancelled_item = item;
  if (item < atomic_load_explicit(&state->stop_item, memory_order_relaxed))
    atomic_store_explicit(&state->stop_item, item, memory_order_relaxed);
  pthread_mutex_unlock(&state->failure_lock);
}

/* Runs one item; returns 0 to go on, 1 when the lane must stop (failure or cancellation). */
static int map_one(map_state *state, tl_exec *exec, size_t item, int lane_index) {
  int code = state->fn(exec, item, lane_index, state->arg);
  tl__exec_item_end(exec); /* the item's TL_SCRATCH_ITEM memory */
  if (code == 0) return 0;
  if (code == (int)TL_E_CANCELLED) {
    /* The item stopped on cancellation: not a failure, but it stops the taking as one. */
    note_cancelled(state, item);
    return 1;
  }
  pthread_mutex_lock(&state->failure_lock);
  if (item < atomic_load_explicit(&state->stop_item, memory_order_relaxed))
    atomic_store_explicit(&state->stop_item, item, memory_order_relaxed);
  if (item < atomic_load_explicit(&state->failed_item, memory_order_relaxed)) {
    atomic_store_explicit(&state->failed_item, item, memory_order_relaxed);
    state->failed_code = code;
    char code_text[48];
    tl__code_text(code, code_text, sizeof code_text);
    snprintf(state->message, sizeof state->message, "item %zu (lane %d) returned %s: %s", item,
             lane_index, code_text, tl_exec_message(exec));
  }
  pthread_mutex_unlock(&state->failure_lock);
  return 1; /* the map reports a failing item itself; the lane is not the failure */
}

static int map_lane(tl_lane *lane, int lane_index, void *arg) {
  map_state *state = arg;
  tl_exec *exec = tl_lane_exec(lane);
  size_t done = 0, chunk = 1;
  if (state->max_lanes > 0 && lane_index >= state->max_lanes) return 0;
  while (!tl_lane_cancelled(lane) &&
         atomic_load_explicit(&state->stop_item, memory_order_relaxed) == SIZE_MAX) {
    size_t want =
        tl__map_chunk_bound(state->count, atomic_load_explicit(&state->next, memory_order_relaxed),
                            state->lanes, chunk);
    /* Bounded (issue 28's audit): want <= TL__MAP_CHUNK_MAX, and a lane adds at most once
     * more after next reached count (then it leaves), so next stays below count + lanes x
     * TL__MAP_CHUNK_MAX (lanes <= TL_THREADS_MAX);
     * it could wrap only for a count within 2^24 of SIZE_MAX and after about 2^64 items
     * ran. first + want is taken only when it does not pass count. */
    size_t first = atomic_fetch_add_explicit(&state->next, want, memory_order_relaxed);
    if (first >= state->count) break;
    size_t end = state->count - first < want ? state->count : first + want;
    const uint64_t started = tl__now_ns();
    for (size_t item = first; item < end; item++) {
      /* After a stop, finish only the held items below the stop item: every item below
       * it must run, none above it need to. An item left on cancellation is recorded. */
      if (item > atomic_load_explicit(&state->stop_item, memory_order_relaxed)) goto out;
      if (tl_lane_cancelled(lane)) {
        note_cancelled(state, item);
        goto out;
      }
      if (map_one(state, exec, item, lane_index) != 0) goto out;
      done++;
    }
    chunk = tl__map_chunk_next(chunk, tl__now_ns() - started);
  }
out:
  atomic_fetch_add_explicit(&state->done, done, memory_order_relaxed);
  return 0;
}

static tl_status phase_map(tl_phase *phase, size_t count, tl_map_fn fn, void *arg, int max_lanes,
                           tl_map_outcome *outcome) {
  tl_map_outcome local;
  if (outcome == NULL) outcome = &local;
  memset(outcome, 0, sizeof *outcome);
  outcome->status = TL_OK;
  if (fn == NULL) {
    outcome->status = tl__fail(TL_E_INVALID, "tl_phase_map: fn is NULL");
    memcpy(outcome->message, tl_last_message(), sizeof outcome->message);
    return outcome->status;
  }
  map_state state;
  state.fn = fn;
  state.arg = arg;
  state.count = count;
  state.max_lanes = max_lanes;
  int lanes = tl_phase_lanes(phase);
  if (max_lanes > 0 && max_lanes < lanes) lanes = max_lanes;
  state.lanes = lanes > 1 ? (size_t)lanes : 1;
  atomic_init(&state.next, 0);
  atomic_init(&state.done, 0);
  pthread_mutex_init(&state.failure_lock, NULL);
  atomic_init(&state.failed_item, SIZE_MAX);
  atomic_init(&state.stop_item, SIZE_MAX);
  state.cancelled_item = SIZE_MAX;
  state.failed_code = 0;
  state.message[0] = '\0';
  tl_phase_outcome run;
  tl_status status = tl_phase_run(phase, map_lane, &state, &run);
  pthread_mutex_destroy(&state.failure_lock);
  outcome->items_done = atomic_load(&state.done);
  if (status != TL_OK) {
    /* A lane's entry or cleanup failed, or the run was refused. */
    outcome->failed = run.kind != TL_PHASE_NOT_RUN;
    outcome->failed_item = SIZE_MAX;
    outcome->status = status;
    memcpy(outcome->message, tl_last_message(), sizeof outcome->message);
    return status;
  }
  const size_t failed_item = atomic_load(&state.failed_item);
  if (failed_item != SIZE_MAX && failed_item < state.cancelled_item) {
    outcome->failed = 1;
    outcome->failed_item = failed_item;
    outcome->code = state.failed_code;
    outcome->status = TL_E_LANE;
    memcpy(outcome->message, state.message, sizeof outcome->message);
    return tl__fail(TL_E_LANE, "tl_map: %s", state.message);
  }
  if (state.cancelled_item != SIZE_MAX) {
    /* The lowest item that did not run to its end stopped on cancellation: every item below
     * it ran; a failure above it (if any) is named, but it is not the reported item. */
    outcome->failed = 1;
    outcome->failed_item = state.cancelled_item;
    outcome->code = (int)TL_E_CANCELLED;
    outcome->status = TL_E_CANCELLED;
    if (failed_item != SIZE_MAX) {
      char code_text[48];
      tl__code_text(state.failed_code, code_text, sizeof code_text);
      snprintf(outcome->message, sizeof outcome->message,
               "the map was cancelled at item %zu (every item below it ran); item %zu above "
               "it returned %s",
               state.cancelled_item, failed_item, code_text);
    } else {
      snprintf(outcome->message, sizeof outcome->message,
               "the map was cancelled at item %zu (every item below it ran)", state.cancelled_item);
    }
    return tl__fail(TL_E_CANCELLED, "tl_map: %s", outcome->message);
  }
  return TL_OK;
}

tl_status tl_phase_map(tl_phase *phase, size_t count, tl_map_fn fn, void *arg,
                       tl_map_outcome *outcome) {
  return phase_map(phase, count, fn, arg, 0, outcome);
}

typedef struct map_call {
  size_t count;
  int max_lanes;
  tl_map_fn fn;
  void *arg;
  tl_map_outcome *outcome;
  tl_status status;
} map_call;

static void map_in_phase(tl_phase *phase, void *arg) {
  map_call *call = arg;
  call->status = phase_map(phase, call->count, call->fn, call->arg, call->max_lanes, call->outcome);
}

/* tl_map and tl_map_ex: messages name `call`, the entry point the user called. */
static tl_status map_session(tl_session *session, size_t count, tl_map_fn fn, void *arg,
                             int max_lanes, tl_map_outcome *outcome, const char *call_name,
                             const void *frame) {
  tl_map_outcome local;
  if (outcome == NULL) outcome = &local;
  memset(outcome, 0, sizeof *outcome);
  if (max_lanes < 0) {
    outcome->status =
        tl__fail(TL_E_INVALID, "%s: options->max_lanes is %d, expected >= 0", call_name, max_lanes);
    memcpy(outcome->message, tl_last_message(), sizeof outcome->message);
    return outcome->status;
  }
  map_call call = {count, max_lanes, fn, arg, outcome, TL_OK};
  tl_status status = tl__session_phase_named(session, map_in_phase, &call, call_name, frame);
  if (status != TL_OK) {
    memcpy(outcome->message, tl_last_message(), sizeof outcome->message);
    return outcome->status = status;
  }
  if (call.status != TL_OK) {
    /* tl_session_phase's own success must not hide the map's message; the session keeps
     * it too, as it keeps a failed route's. */
    const char *message = outcome->message;
    if (strncmp(message, "tl_phase_map: ", 14) == 0) message += 14;
    tl_session *held = tl__session_resolve(session, call_name, &status);
    tl__fail(call.status, "%s: %s", call_name, message);
    if (held != NULL) tl__message_copy(held->message);
  }
  return call.status;
}

void tl_map_options_init(tl_map_options *options) {
  if (options == NULL) return;
  memset(options, 0, sizeof *options);
  options->size = sizeof *options;
}

tl_status tl_map_ex(tl_session *session, const tl_map_options *options, size_t count, tl_map_fn fn,
                    void *arg, tl_map_outcome *outcome) {
  if (options != NULL) {
    tl_status status = tl__check_struct_size("tl_map_ex", "tl_map_options", options->size,
                                             TL__SIZE_THROUGH(tl_map_options, max_lanes));
    if (status != TL_OK) {
      if (outcome != NULL) {
        memset(outcome, 0, sizeof *outcome);
        outcome->status = status;
        memcpy(outcome->message, tl_last_message(), sizeof outcome->message);
      }
      return status;
    }
  }
  return map_session(session, count, fn, arg, options != NULL ? options->max_lanes : 0, outcome,
                     "tl_map_ex", __builtin_frame_address(0));
}

tl_status tl_map(tl_session *session, size_t count, tl_map_fn fn, void *arg,
                 tl_map_outcome *outcome) {
  return map_session(session, count, fn, arg, 0, outcome, "tl_map", __builtin_frame_address(0));
}
