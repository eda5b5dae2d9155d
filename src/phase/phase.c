/* src/phase/phase.c: opening and ending the lease. The session is parked for the length of
 * the callback; the driver must not be a worker of the pool the lanes would run on (it would
 * wait on itself), which is refused before anything waits. */
#include <stdint.h>
#include <string.h>

#include "admission/marker.h"
#include "base/base.h"
#include "phase_int.h"

#define TL__PHASE_TOKENS 4096

static _Thread_local unsigned char phase_tokens[TL__PHASE_TOKENS];
static _Thread_local unsigned phase_counter;
static _Thread_local tl__phase *active_phases;

tl__phase *tl__phase_resolve(const tl_phase *handle, const char *call, tl_status *status) {
  if (handle == NULL) {
    *status = tl__fail(TL_E_INVALID, "%s: phase is NULL", call);
    return NULL;
  }
  for (tl__phase *phase = active_phases; phase != NULL; phase = phase->next_active) {
    if (phase->token == (const void *)handle) return phase;
  }
  uintptr_t address = (uintptr_t)handle;
  uintptr_t base = (uintptr_t)phase_tokens;
  if (address >= base && address < base + TL__PHASE_TOKENS) {
    *status = tl__fail(
        TL_E_STALE, "%s: the phase was used after the callback of tl_session_phase returned", call);
  } else {
    *status = tl__fail(TL_E_WRONG_THREAD,
                       "%s: the phase does not belong to this thread (phases are used only on the "
                       "thread that opened them, inside their callback)",
                       call);
  }
  return NULL;
}

static void phase_end(tl__phase *phase) {
  for (tl__phase **link = &active_phases; *link != NULL; link = &(*link)->next_active) {
    if (*link == phase) {
      *link = phase->next_active;
      break;
    }
  }
  atomic_store(&phase->ctx->phase_active, 0);
  atomic_store(&phase->session->state, TL__SESSION_IDLE);
}

static void phase_end_on_unwind(void *arg) { phase_end(arg); }

tl_status tl__session_phase_named(tl_session *session, tl_phase_fn fn, void *arg,
                                  const char *call) {
  if (session == NULL || fn == NULL)
    return tl__fail(TL_E_INVALID, "%s: session (%p) and fn must not be NULL", call,
                    (void *)session);
  int state = atomic_load(&session->state);
  if (state == TL__SESSION_CLOSED) return tl__fail(TL_E_STALE, "%s: the session was closed", call);
  if (session->thread_token != tl__thread_token())
    return tl__fail(TL_E_WRONG_THREAD,
                    "%s: session of owner %llu used from a thread other than the one that "
                    "opened it; another thread reaches the session through a ticket "
                    "(tl_session_ticket, then tl_ticket_enter on that thread)",
                    call, (unsigned long long)session->owner);
  if (state == TL__SESSION_PHASE)
    return tl__fail(TL_E_PHASE_ACTIVE, "%s: a phase is already open on the session", call);
  tl_context *ctx = session->ctx;
  if (ctx->pool != NULL && tl_pool_current_index(ctx->pool) >= 0)
    return tl__fail(TL_E_TARGET_POOL_CALLER,
                    "%s: the caller is worker %d of the context's own pool, whose lanes it "
                    "would wait for",
                    call, tl_pool_current_index(ctx->pool));
  tl__phase phase;
  memset(&phase, 0, sizeof phase);
  phase.session = session;
  phase.ctx = ctx;
  phase.lanes = ctx->budget;
  phase.token = &phase_tokens[phase_counter++ % TL__PHASE_TOKENS];
  phase.next_active = active_phases;
  active_phases = &phase;
  atomic_store(&session->state, TL__SESSION_PHASE);
  atomic_store(&ctx->phase_active, 1);
  tl__unwind_push(&phase.unwind, phase_end_on_unwind, &phase);
  fn((tl_phase *)phase.token, arg);
  tl__unwind_pop(&phase.unwind);
  phase_end(&phase);
  return TL_OK;
}

tl_status tl_session_phase(tl_session *session, tl_phase_fn fn, void *arg) {
  return tl__session_phase_named(session, fn, arg, "tl_session_phase");
}

int tl_phase_lanes(const tl_phase *handle) {
  for (tl__phase *phase = active_phases; phase != NULL; phase = phase->next_active) {
    if (phase->token == (const void *)handle) return phase->lanes;
  }
  return 0;
}
