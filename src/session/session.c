/* src/session/session.c: the held session. Open = admission, resource checkout, the
 * thread's mark, the affinity guard; close undoes them in the documented order
 * (resources, mark, affinity, admission), releasing everything even when restoring the
 * affinity fails, which is then what close reports. */
#include <string.h>

#include "admission/marker.h"
#include "affinity.h"
#include "base/base.h"
#include "base/fault.h"
#include "context/context_int.h"

static void init_root_exec(tl_session *session) {
  tl_context *ctx = session->ctx;
  tl_exec *exec = &session->exec;
  tl__exec_init(exec, TL_EXEC_ROOT, &ctx->root, ctx->pool,
                ctx->pool ? tl_pool_workers(ctx->pool) : 1, NULL);
  exec->gate = &session->state;
  exec->holder_message = session->message;
  exec->reserved_out = &ctx->root_reserved;
}

static void close_on_unwind(void *arg) {
  tl_session *session = arg;
  /* A panic is passing over the session: it may be inside a phase that the phase's own
   * cleanup already ended; close whatever remains. */
  atomic_store(&session->state, TL__SESSION_IDLE);
  (void)tl_session_close(session);
}

tl_status tl_session_open(tl_context *ctx, tl_owner owner, tl_wait_mode mode, tl_session **out) {
  if (ctx == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_session_open: ctx (%p) and out (%p) must not be NULL",
                    (void *)ctx, (void *)out);
  if (owner == 0) return tl__fail(TL_E_INVALID, "tl_session_open: owner 0 is not a valid owner");
  if (mode != TL_WAIT && mode != TL_NOWAIT)
    return tl__fail(TL_E_INVALID, "tl_session_open: mode is %d, expected TL_WAIT or TL_NOWAIT",
                    (int)mode);
  if (tl__marker_has(ctx))
    return tl__fail(TL_E_REENTERED,
                    "tl_session_open: owner %llu: this thread already executes for this context "
                    "(it holds its session or runs one of its lanes or tickets)",
                    (unsigned long long)owner);
  uint64_t generation;
  tl_status status = tl__admission_open(&ctx->arbiter, owner, mode, &generation);
  if (status != TL_OK) return status;

  tl_session *session = &ctx->session;
  session->owner = owner;
  session->generation = generation;
  session->thread_token = tl__thread_token();
  session->message[0] = '\0';
  init_root_exec(session);
  status = tl__marker_push(ctx, owner);
  if (status != TL_OK) {
    tl__admission_close(&ctx->arbiter);
    return status;
  }
  status = tl__affinity_narrow(session);
  if (status != TL_OK) {
    tl__marker_pop(ctx);
    tl__admission_close(&ctx->arbiter);
    return status;
  }
  atomic_store(&ctx->root_checked_out, 1);
  atomic_store(&session->state, TL__SESSION_IDLE);
  tl__unwind_push(&session->unwind, close_on_unwind, session);
  *out = session;
  return TL_OK;
}

/* Common checks for calls that only the session's own thread may make. */
static tl_status check_session(const tl_session *session, const char *call) {
  if (session == NULL) return tl__fail(TL_E_INVALID, "%s: session is NULL", call);
  if (atomic_load(&session->state) == TL__SESSION_CLOSED)
    return tl__fail(TL_E_STALE, "%s: the session was closed", call);
  if (session->thread_token != tl__thread_token())
    return tl__fail(TL_E_WRONG_THREAD,
                    "%s: session of owner %llu used from a thread other than the one that "
                    "opened it",
                    call, (unsigned long long)session->owner);
  return TL_OK;
}

tl_status tl_session_close(tl_session *session) {
  tl_status status = check_session(session, "tl_session_close");
  if (status != TL_OK) return status;
  if (atomic_load(&session->state) == TL__SESSION_PHASE)
    return tl__fail(TL_E_PHASE_ACTIVE, "tl_session_close: called inside the session's own phase");
  tl_context *ctx = session->ctx;
  tl__unwind_pop(&session->unwind);
  tl__admission_drain_children(&ctx->arbiter);
  tl__pause(TL__PAUSE_CLOSE_DRAINED);
  /* 1. resources */
  tl__arena_reset(&ctx->root.arena);
  atomic_store(&ctx->root_reserved, ctx->root.arena.reserved);
  atomic_store(&ctx->root_checked_out, 0);
  /* 2. the thread's mark */
  tl__marker_pop(ctx);
  /* 3. affinity: the one step that can fail; the rest is released regardless */
  tl_status restore = tl__affinity_restore(session);
  atomic_store(&session->state, TL__SESSION_CLOSED);
  session->thread_token = 0;
  /* 4. admission, handing over to the next opener in line */
  tl__admission_close(&ctx->arbiter);
  return restore;
}

tl_exec *tl_session_exec(tl_session *session) { return session ? &session->exec : NULL; }

tl_owner tl_session_owner(const tl_session *session) { return session ? session->owner : 0; }

const char *tl_session_message(const tl_session *session) {
  return session ? session->message : "";
}

tl_status tl_session_with(tl_context *ctx, tl_owner owner, tl_wait_mode mode, tl_session_fn fn,
                          void *arg, int *fn_result) {
  if (fn == NULL) return tl__fail(TL_E_INVALID, "tl_session_with: fn is NULL");
  tl_session *session;
  tl_status status = tl_session_open(ctx, owner, mode, &session);
  if (status != TL_OK) return status;
  int result = fn(&session->exec, arg);
  if (fn_result != NULL) *fn_result = result;
  /* A failure to restore the thread replaces whatever the callback produced. */
  return tl_session_close(session);
}

tl_status tl_session_ticket(tl_session *session, tl_ticket *out) {
  tl_status status = check_session(session, "tl_session_ticket");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "tl_session_ticket: out is NULL");
  out->ctx = session->ctx;
  out->session_generation = session->generation;
  out->owner = session->owner;
  return TL_OK;
}
