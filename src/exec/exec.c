/* src/exec/exec.c: the operation surface (exec.h). Every route call passes through
 * tl__exec_begin/tl__exec_end, which enforce the surface's rules (its own thread; a root
 * surface is parked while a phase runs) and hand scratch back at the end of the call. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "base/fault.h"
#include "exec.h"

void tl__exec_init(tl_exec *exec, tl_exec_kind kind, tl__resources *resources, tl_pool *pool,
                   int team, const atomic_int *cancel) {
  memset(exec, 0, sizeof *exec);
  exec->kind = kind;
  exec->resources = resources;
  exec->pool = pool;
  exec->team = team;
  exec->cancel = cancel;
  exec->thread_token = tl__thread_token();
  exec->item_floor = tl__arena_mark_get(&resources->arena);
  atomic_init(&exec->cancel_request, 0);
}

/* The surface of the outermost route call running on this thread (set at depth 0 of
 * tl__exec_begin, restored at the matching tl__exec_end). */
static _Thread_local tl_exec *current_surface;

tl_exec *tl__exec_current(void) { return current_surface; }

tl_status tl__exec_begin(tl_exec *exec, const char *route) {
  if (TL__UNLIKELY(exec == NULL)) return tl__fail(TL_E_INVALID, "%s: exec is NULL", route);
  if (TL__UNLIKELY(exec->thread_token != tl__thread_token())) {
    if (exec->thread_token == TL__EXEC_RETIRED)
      return tl__fail(TL_E_STALE,
                      "%s: this lane or ticket surface was kept past the callback it was handed "
                      "to",
                      route);
    return tl__fail(TL_E_WRONG_THREAD,
                    "%s: this surface belongs to another thread (a session, lane or ticket "
                    "surface is used only on the thread it was handed to)",
                    route);
  }
  if (exec->gate != NULL) {
    int gate = atomic_load_explicit(exec->gate, memory_order_relaxed);
    if (TL__UNLIKELY(gate != TL__GATE_OPEN))
      return tl__fail(gate == TL__GATE_PARKED ? TL_E_PHASE_ACTIVE : TL_E_STALE,
                      "%s: the session's root surface is %s", route,
                      gate == TL__GATE_PARKED ? "parked while its phase runs" : "closed");
  }
  if (TL__UNLIKELY(exec->depth >= 16))
    return tl__fail(TL_E_INVALID, "%s: route calls nested deeper than 16 on one surface", route);
  if (exec->depth == 0) {
    if (TL__UNLIKELY(atomic_load_explicit(&exec->cancel_request, memory_order_relaxed)))
      return tl__fail(TL_E_CANCELLED,
                      "%s: the surface was cancelled (tl_exec_cancel) before the call began, "
                      "and the request was not cleared (tl_exec_cancel_clear)",
                      route);
    exec->route = route;
    exec->outer = current_surface;
    current_surface = exec;
  }
  exec->marks[exec->depth++] = tl__arena_mark_get(&exec->resources->arena);
  return TL_OK;
}

tl_status tl__exec_end(tl_exec *exec, tl_status status) {
  assert(exec->depth > 0 && "tl__exec_end without its tl__exec_begin");
  assert(exec->thread_token == tl__thread_token() && "a surface used off its thread");
  tl__arena_reset_to(&exec->resources->arena, exec->marks[--exec->depth]);
  if (exec->depth == 0) current_surface = exec->outer;
  if (exec->reserved_out != NULL && exec->depth == 0) {
    atomic_store_explicit(exec->reserved_out, exec->resources->arena.reserved,
                          memory_order_relaxed);
  }
  if (status != TL_OK) {
    if (exec->depth == 0 && exec->route != NULL) {
      size_t length = strlen(exec->route);
      const char *message = tl_last_message();
      if (strncmp(message, exec->route, length) != 0 || message[length] != ':') {
        char reason[TL_MESSAGE_CAPACITY];
        tl__message_copy(reason);
        tl__fail(status, "%s: %s", exec->route, reason);
      }
    }
    tl__message_copy(exec->message);
    if (exec->holder_message != NULL) tl__message_copy(exec->holder_message);
  }
  return status;
}

tl_status tl__exec_team(tl_exec *exec, int *team) {
  int request = exec->team_request;
  if (request <= 0) {
    *team = exec->team;
    return TL_OK;
  }
  if (request > 1 && (exec->team == 1 || tl_pool_current() != NULL))
    return tl__fail(TL_E_UNAVAILABLE,
                    "a team of %d threads was asked for on a %s surface, which runs on one thread"
                    "%s",
                    request, exec->kind == TL_EXEC_ROOT ? "root" : "child",
                    tl_pool_current() != NULL ? " (the caller is a pool worker)" : "");
  *team = request < exec->team ? request : exec->team;
  return TL_OK;
}

tl_status tl__exec_parallel_for(tl_exec *exec, size_t count, size_t grain, tl_pool_range_fn fn,
                                void *arg) {
  /* Set before the call: gcc 12 at -O3 cannot see that a failing tl__exec_team returns a
   * status other than TL_OK, and warned (maybe-uninitialized) in Release builds. */
  int team = 1;
  tl_status status = tl__exec_team(exec, &team);
  if (status != TL_OK) return status;
  if (exec->pool != NULL && team > 1)
    return tl_pool_parallel_for(exec->pool, count, grain, fn, arg);
  if (count == 0) return TL_OK;
  if (grain == 0) grain = count;
  /* Step by the end, never by begin + grain past count (which wraps near SIZE_MAX). */
  for (size_t begin = 0; begin < count;) {
    size_t end = count - begin > grain ? begin + grain : count;
    fn(begin, end, -1, arg);
    begin = end;
  }
  return TL_OK;
}

typedef struct chunk_job {
  tl_pool_range_fn fn;
  void *arg;
  const tl_exec *exec;
  atomic_int cancelled;
  atomic_size_t skipped; /* elements of the chunks not run */
} chunk_job;

static void cancel_aware_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  chunk_job *job = arg;
  if (tl__exec_cancelled(job->exec)) {
    atomic_store_explicit(&job->cancelled, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&job->skipped, end - begin, memory_order_relaxed);
    return;
  }
  job->fn(begin, end, worker_index, job->arg);
}

tl_status tl__exec_run_chunks(tl_exec *exec, int parallel, size_t count, size_t grain,
                              tl_pool_range_fn fn, void *arg, const char *what) {
  chunk_job job = {fn, arg, exec, 0, 0};
  if (grain == 0) grain = 1;
  if (parallel) {
    tl_status status = tl__exec_parallel_for(exec, count, grain, cancel_aware_chunk, &job);
    if (status != TL_OK) return status;
  } else {
    size_t begin = 0;
    while (begin < count && !atomic_load(&job.cancelled)) {
      size_t end = count - begin > grain ? begin + grain : count;
      tl__pause(TL__PAUSE_SERIAL_CHUNK);
      cancel_aware_chunk(begin, end, -1, &job);
      begin = end;
    }
    /* Stepped by the end, so begin <= count: what is left was never started. */
    atomic_fetch_add_explicit(&job.skipped, count - begin, memory_order_relaxed);
  }
  if (atomic_load_explicit(&job.cancelled, memory_order_relaxed))
    return tl__fail(TL_E_CANCELLED,
                    "cancelled while %s: %zu of %zu work units were not started (output "
                    "unspecified)",
                    what, atomic_load_explicit(&job.skipped, memory_order_relaxed), count);
  return TL_OK;
}

tl_status tl__exec_scratch(tl_exec *exec, size_t bytes, size_t align, void **out) {
  return tl__arena_alloc(&exec->resources->arena, bytes, align, out);
}

/* tl_exec_cancel promises a signal handler may call it: that holds only for a lock-free
 * atomic store. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "tl_exec_cancel needs a lock-free atomic_int");

void tl_exec_cancel(tl_exec *exec) {
  /* A lock-free atomic store and nothing else: callable from a signal handler. */
  if (exec != NULL) atomic_store_explicit(&exec->cancel_request, 1, memory_order_relaxed);
}

tl_status tl_exec_cancel_clear(tl_exec *exec) {
  if (exec == NULL) return tl__fail(TL_E_INVALID, "tl_exec_cancel_clear: exec is NULL");
  atomic_store_explicit(&exec->cancel_request, 0, memory_order_relaxed);
  return TL_OK;
}

int tl_exec_cancel_requested(const tl_exec *exec) {
  return exec != NULL && atomic_load_explicit(&exec->cancel_request, memory_order_relaxed);
}

tl_exec_kind tl_exec_kind_of(const tl_exec *exec) { return exec ? exec->kind : TL_EXEC_ROOT; }

int tl_exec_team(const tl_exec *exec) { return exec ? exec->team : 0; }

const char *tl_exec_message(const tl_exec *exec) { return exec ? exec->message : ""; }

const void *tl_exec_scratch_id(const tl_exec *exec) { return exec ? exec->resources : NULL; }

tl_status tl_exec_set_team(tl_exec *exec, int team) {
  if (exec == NULL) return tl__fail(TL_E_INVALID, "tl_exec_set_team: exec is NULL");
  if (team < 0) return tl__fail(TL_E_INVALID, "tl_exec_set_team: team is %d, expected >= 0", team);
  exec->team_request = team;
  return TL_OK;
}

tl_status tl_exec_set_order(tl_exec *exec, tl_order order) {
  if (exec == NULL) return tl__fail(TL_E_INVALID, "tl_exec_set_order: exec is NULL");
  if (order != TL_ORDER_COL_MAJOR && order != TL_ORDER_ROW_MAJOR)
    return tl__fail(TL_E_INVALID,
                    "tl_exec_set_order: order is %d, expected TL_ORDER_COL_MAJOR or "
                    "TL_ORDER_ROW_MAJOR",
                    (int)order);
  exec->order = order;
  return TL_OK;
}

tl_status tl__exec_fresh(const tl_exec *exec, tl_dtype dtype, int rank, const int64_t *shape,
                         tl_tensor *out) {
  if (exec->order == TL_ORDER_ROW_MAJOR) return tl_tensor_create_row_major(dtype, rank, shape, out);
  return tl_tensor_create(dtype, rank, shape, out);
}

static tl_status scratch_refused(tl_exec *exec, tl_status status) {
  tl__message_copy(exec->message);
  return status;
}

tl_status tl_exec_scratch(tl_exec *exec, size_t bytes, tl_scratch_scope scope, void **out) {
  if (exec == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_exec_scratch: exec (%p) and out (%p) must not be NULL",
                    (void *)exec, (void *)out);
  if (exec->thread_token != tl__thread_token())
    return tl__fail(TL_E_WRONG_THREAD,
                    "tl_exec_scratch: this surface belongs to another thread (a lane or ticket "
                    "surface is used only on the thread it was handed to)");
  if (scope != TL_SCRATCH_ITEM && scope != TL_SCRATCH_LANE)
    return scratch_refused(
        exec, tl__fail(TL_E_INVALID,
                       "tl_exec_scratch: scope is %d, expected TL_SCRATCH_ITEM or TL_SCRATCH_LANE",
                       (int)scope));
  if (exec->kind == TL_EXEC_ROOT)
    return scratch_refused(exec, tl__fail(TL_E_UNAVAILABLE,
                                          "tl_exec_scratch: a root surface has no item or lane "
                                          "scope (take scratch on a lane or ticket surface)"));
  if (exec->depth != 0)
    return scratch_refused(exec, tl__fail(TL_E_INVALID,
                                          "tl_exec_scratch: called inside a route call on the "
                                          "same surface"));
  void *ptr;
  tl_status status = tl__exec_scratch(exec, bytes, 64, &ptr);
  if (status != TL_OK)
    return scratch_refused(
        exec, tl__fail(status, "tl_exec_scratch: %zu bytes: %s", bytes, tl_last_message()));
  /* Lane scratch lifts the floor an item's scratch is reclaimed to. */
  if (scope == TL_SCRATCH_LANE) exec->item_floor = tl__arena_mark_get(&exec->resources->arena);
  *out = ptr;
  return TL_OK;
}

void tl__exec_item_end(tl_exec *exec) {
  assert(exec->depth == 0 && exec->kind != TL_EXEC_ROOT);
  tl__arena_reset_to(&exec->resources->arena, exec->item_floor);
}
