/* src/core/phase.c: opening and ending the lease. The session is parked for the length of
 * the callback; the driver must not be a worker of the pool the lanes would run on (it would
 * wait on itself), which is refused before anything waits. */
#include <stdint.h>
#include <string.h>

#include "core/core_int.h"
#include "base/base.h"

static atomic_uint_fast64_t last_token;
static _Thread_local tl__phase open_phases[TL__PHASES_NESTED_MAX];
static _Thread_local int open_count;

tl__phase *tl__phase_resolve(const tl_phase *handle, const char *call, tl_status *status) {
  if (handle == NULL) {
    *status = tl__fail(TL_E_INVALID, "%s: phase is NULL", call);
    return NULL;
  }
  uint64_t token = (uint64_t)(uintptr_t)handle;
  for (int i = open_count - 1; i >= 0; i--) {
    if (open_phases[i].token == token) return &open_phases[i];
  }
  if (tl__session_phase_elsewhere(token)) {
    *status = tl__fail(TL_E_WRONG_THREAD,
                       "%s: the phase belongs to another thread (phases are used only on the "
                       "thread that opened them, inside their callback)",
                       call);
  } else {
    *status = tl__fail(TL_E_STALE,
                       "%s: the phase (token %llu) was used after the callback of "
                       "tl_session_phase returned, or is not a phase",
                       call, (unsigned long long)token);
  }
  return NULL;
}

/* End the phase in slot `index` of this thread's table (the top one, or one above which
 * every record is gone too). */
static void phase_end(int index) {
  tl__phase *phase = &open_phases[index];
  tl_session *session = phase->session;
  atomic_store(&session->phase_token, 0);
  atomic_store(&phase->ctx->phase_active, 0);
  atomic_store(&session->state, TL__SESSION_IDLE);
  memmove(&open_phases[index], &open_phases[index + 1],
          (size_t)(open_count - 1 - index) * sizeof open_phases[0]);
  open_count--;
}

static void phase_end_token(uint64_t token) {
  for (int i = open_count - 1; i >= 0; i--) {
    if (open_phases[i].token == token) {
      phase_end(i);
      return;
    }
  }
}

static void phase_end_on_unwind(void *arg) { phase_end_token((uint64_t)(uintptr_t)arg); }

int tl__phase_prune(tl_session *session, const void *frame) {
  int ended = 0;
  for (int i = open_count - 1; i >= 0; i--) {
    if (open_phases[i].session == session && open_phases[i].frame <= (uintptr_t)frame) {
      /* Its opener's frame is gone: a longjmp left the callback. Its panic cleanup sits on a
       * catch scope that is still alive (jumping past a tl_catch is not allowed). */
      tl__unwind_pop(&session->phase_unwind);
      phase_end(i);
      ended = 1;
    }
  }
  return ended;
}

/* The checks before a phase opens; TL_OK or the refusal, with a message naming `call`. */
static tl_status check_open(tl_session *session, tl_phase_fn fn, const char *call,
                            const void *frame) {
  if (fn == NULL) return tl__fail(TL_E_INVALID, "%s: fn must not be NULL", call);
  tl_context *ctx = session->ctx;
  if (tl__forked(ctx->fork_epoch))
    return tl__fail(TL_E_FORKED,
                    "%s: the context was created before fork(); its workers do not exist in "
                    "this process, so only tl_context_destroy may be called on it here",
                    call);
  tl__phase_prune(session, frame);
  if (atomic_load(&session->state) == TL__SESSION_PHASE)
    return tl__fail(TL_E_PHASE_ACTIVE, "%s: a phase is already open on the session", call);
  if (ctx->pool != NULL && tl_pool_current_index(ctx->pool) >= 0)
    return tl__fail(TL_E_TARGET_POOL_CALLER,
                    "%s: the caller is worker %d of the context's own pool, whose lanes it "
                    "would wait for",
                    call, tl_pool_current_index(ctx->pool));
  if (open_count == TL__PHASES_NESTED_MAX)
    return tl__fail(TL_E_LIMIT, "%s: this thread already has %d phases open, the most it may", call,
                    TL__PHASES_NESTED_MAX);
  return TL_OK;
}

tl_status tl__session_phase_named(tl_session *handle, tl_phase_fn fn, void *arg, const char *call,
                                  const void *frame) {
  tl_status status;
  tl_session *session = tl__session_resolve(handle, call, &status);
  if (session == NULL) return status;
  if ((status = check_open(session, fn, call, frame)) != TL_OK) return status;
  tl_context *ctx = session->ctx;
  tl__phase *phase = &open_phases[open_count++];
  memset(phase, 0, sizeof *phase);
  phase->token = atomic_fetch_add(&last_token, 1) + 1;
  phase->session = session;
  phase->ctx = ctx;
  phase->lanes = ctx->budget;
  phase->frame = (uintptr_t)frame;
  uint64_t token = phase->token;
  atomic_store(&session->phase_token, token);
  atomic_store(&session->state, TL__SESSION_PHASE);
  atomic_store(&ctx->phase_active, 1);
  tl__unwind_push(&session->phase_unwind, phase_end_on_unwind, (void *)(uintptr_t)token);
  fn((tl_phase *)(uintptr_t)token, arg);
  tl__unwind_pop(&session->phase_unwind);
  phase_end_token(token);
  return TL_OK;
}

tl_status tl_session_phase(tl_session *session, tl_phase_fn fn, void *arg) {
  return tl__session_phase_named(session, fn, arg, "tl_session_phase", __builtin_frame_address(0));
}

int tl_phase_lanes(const tl_phase *handle) {
  uint64_t token = (uint64_t)(uintptr_t)handle;
  for (int i = open_count - 1; i >= 0; i--) {
    if (open_phases[i].token == token) return open_phases[i].lanes;
  }
  return 0;
}
