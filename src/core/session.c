/* src/core/session.c: the held session. Open = admission, resource checkout, the
 * thread's mark, the affinity guard; close undoes them in the documented order
 * (resources, mark, affinity, admission), releasing everything even when restoring the
 * affinity fails, which is then what close reports. */
#include <string.h>

#include "core/core_int.h"
#include "base/base.h"
#include "base/fault.h"

static void init_root_exec(tl_session *session) {
  tl_context *ctx = session->ctx;
  tl_exec *exec = &session->exec;
  tl__exec_init(exec, TL_EXEC_ROOT, &ctx->root, ctx->pool,
                ctx->pool ? tl_pool_workers(ctx->pool) : 1, NULL);
  exec->gate = &session->state;
  exec->holder_message = session->message;
  exec->reserved_out = &ctx->root_reserved;
}

static tl_status close_session(tl_session *session);

static void close_on_unwind(void *arg) {
  tl_session *session = arg;
  /* A panic is passing over the session: it may be inside a phase that the phase's own
   * cleanup already ended; close whatever remains. */
  atomic_store(&session->state, TL__SESSION_IDLE);
  (void)close_session(session);
}

/* A context made before fork(): in the child only destroy is possible. */
static tl_status refuse_forked(const tl_context *ctx, const char *call) {
  if (!tl__forked(ctx->fork_epoch)) return TL_OK;
  return tl__fail(TL_E_FORKED,
                  "%s: the context was created before fork(); its workers do not exist in this "
                  "process, so only tl_context_destroy may be called on it here",
                  call);
}

/* The owner before this one ended its thread holding the session: report it once. */
static tl_status report_dead_owner(tl_context *ctx, tl_owner owner) {
  tl_owner dead = atomic_exchange(&ctx->owner_died, 0);
  if (dead == 0) return TL_OK;
  tl__admission_close(&ctx->arbiter);
  return tl__fail(TL_E_OWNER_DEAD,
                  "tl_session_open: owner %llu: the previous owner %llu's thread ended while it "
                  "held the session; tenlane closed that session for it (its children joined, "
                  "its scratch reset). Nothing was opened: open again to use the context",
                  (unsigned long long)owner, (unsigned long long)dead);
}

tl_status tl_session_open(tl_context *ctx, tl_owner owner, tl_wait_mode mode, tl_session **out) {
  if (ctx == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_session_open: ctx (%p) and out (%p) must not be NULL",
                    (void *)ctx, (void *)out);
  if (owner == 0) return tl__fail(TL_E_INVALID, "tl_session_open: owner 0 is not a valid owner");
  if (mode != TL_WAIT && mode != TL_NOWAIT)
    return tl__fail(TL_E_INVALID, "tl_session_open: mode is %d, expected TL_WAIT or TL_NOWAIT",
                    (int)mode);
  tl_status status = refuse_forked(ctx, "tl_session_open");
  if (status != TL_OK) return status;
  if (tl__marker_has(ctx))
    return tl__fail(TL_E_REENTERED,
                    "tl_session_open: owner %llu: this thread already executes for this context "
                    "(it holds its session or runs one of its lanes or tickets)",
                    (unsigned long long)owner);
  uint64_t generation;
  status = tl__admission_open(&ctx->arbiter, owner, mode, &generation);
  if (status != TL_OK) return status;
  if ((status = report_dead_owner(ctx, owner)) != TL_OK) return status;

  tl_session *session = &ctx->session;
  session->owner = owner;
  session->generation = generation;
  session->thread_token = tl__thread_token();
  session->message[0] = '\0';
  init_root_exec(session);
  status = tl__marker_push(ctx, owner, "tl_session_open");
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
  *out = tl__session_register(session);
  return TL_OK;
}

/* Give back what the session holds: children drained, resources, the thread's mark. */
static void release_holdings(tl_session *session) {
  tl_context *ctx = session->ctx;
  tl__session_unregister(session); /* no new ticket entry from here on */
  tl__admission_drain_children(&ctx->arbiter);
  tl__pause(TL__PAUSE_CLOSE_DRAINED);
  /* 1. resources */
  tl__arena_reset(&ctx->root.arena);
  atomic_store(&ctx->root_reserved, ctx->root.arena.reserved);
  atomic_store(&ctx->root_checked_out, 0);
  /* 2. the thread's mark */
  tl__marker_pop(ctx);
}

static tl_status close_session(tl_session *session) {
  tl_context *ctx = session->ctx;
  tl__unwind_pop(&session->unwind);
  release_holdings(session);
  /* 3. affinity: the one step that can fail; the rest is released regardless */
  tl_status restore = tl__affinity_restore(session);
  atomic_store(&session->state, TL__SESSION_CLOSED);
  session->thread_token = 0;
  /* 4. admission, handing over to the next opener in line */
  tl__admission_close(&ctx->arbiter);
  return restore;
}

void tl__session_abandon(tl_session *session) {
  tl_context *ctx = session->ctx;
  if (atomic_load(&session->state) == TL__SESSION_PHASE) atomic_store(&ctx->phase_active, 0);
  release_holdings(session);
  /* The thread is ending: its CPU mask ends with it, so nothing is restored. */
  atomic_store(&ctx->owner_died, session->owner);
  atomic_store(&session->state, TL__SESSION_CLOSED);
  session->thread_token = 0;
  tl__admission_close(&ctx->arbiter);
}

tl_status tl_session_close(tl_session *handle) {
  tl_status status;
  tl_session *session = tl__session_resolve(handle, "tl_session_close", &status);
  if (session == NULL) return status;
  if ((status = refuse_forked(session->ctx, "tl_session_close")) != TL_OK) return status;
  /* A phase whose opener's frame is gone (a longjmp left its callback) is ended here. */
  tl__phase_prune(session, __builtin_frame_address(0));
  if (atomic_load(&session->state) == TL__SESSION_PHASE)
    return tl__fail(TL_E_PHASE_ACTIVE, "tl_session_close: called inside the session's own phase");
  return close_session(session);
}

tl_exec *tl_session_exec(tl_session *handle) {
  /* Any thread may fetch it; a route on it from another thread is TL_E_WRONG_THREAD. */
  tl_session *session = tl__session_find_any(handle);
  return session ? &session->exec : NULL;
}

tl_owner tl_session_owner(const tl_session *handle) { return tl__session_owner_any(handle); }

const char *tl_session_message(const tl_session *handle) {
  tl_status status;
  char saved[TL_MESSAGE_CAPACITY];
  tl__message_copy(saved); /* reading the session's message must not change the thread's */
  tl_session *session = tl__session_resolve(handle, "tl_session_message", &status);
  tl__fail(TL_OK, "%s", saved);
  return session ? session->message : "";
}

tl_status tl_session_with(tl_context *ctx, tl_owner owner, tl_wait_mode mode, tl_session_fn fn,
                          void *arg, int *fn_result) {
  if (fn == NULL) return tl__fail(TL_E_INVALID, "tl_session_with: fn is NULL");
  tl_session *handle;
  tl_status status = tl_session_open(ctx, owner, mode, &handle);
  if (status != TL_OK) return status;
  int result = fn(&ctx->session.exec, arg);
  if (fn_result != NULL) *fn_result = result;
  /* A failure to restore the thread replaces whatever the callback produced. */
  return tl_session_close(handle);
}

tl_status tl_session_ticket(tl_session *handle, tl_ticket *out) {
  tl_status status;
  tl_session *session = tl__session_resolve(handle, "tl_session_ticket", &status);
  if (session == NULL) return status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "tl_session_ticket: out is NULL");
  out->ctx = session->ctx;
  out->context_serial = session->ctx->serial;
  out->session_serial = session->id;
  out->owner = session->owner;
  return TL_OK;
}
