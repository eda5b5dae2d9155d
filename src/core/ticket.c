/* src/core/ticket.c: owner-inheriting child entry for other threads. An entry joins
 * the session's grant without waiting, works on a child surface with a bundle of its own,
 * and is counted so that closing the session waits for it. The holder's own thread is
 * refused: it already executes for the context. */
#include "core/core_int.h"
#include "base/base.h"

typedef struct ticket_entry {
  tl_context *ctx;
  tl__resources *bundle;
  int marked;
} ticket_entry;

static void leave(ticket_entry *entry) {
  if (entry->bundle != NULL) {
    entry->bundle->surface->thread_token = TL__EXEC_RETIRED;
    tl__bundle_return(entry->ctx, entry->bundle);
  }
  if (entry->marked) tl__marker_pop(entry->ctx);
  atomic_fetch_sub(&entry->ctx->active_children, 1);
  tl__child_leave(&entry->ctx->arbiter);
}

static void leave_on_unwind(void *arg) { leave(arg); }

tl_status tl_ticket_enter(const tl_ticket *ticket, tl_ticket_fn fn, void *arg, int *fn_result) {
  if (ticket == NULL || fn == NULL)
    return tl__fail(TL_E_INVALID, "tl_ticket_enter: ticket (%p) and fn must not be NULL",
                    (const void *)ticket);
  /* Joined through the registry of open sessions, by serial: a ticket of a closed session is
   * refused without reading its context, which may have been destroyed since (and another
   * context made at its address). */
  tl_context *ctx = NULL;
  tl_status status = tl__session_join(ticket, "tl_ticket_enter", &ctx);
  if (status != TL_OK) return status;
  atomic_fetch_add(&ctx->active_children, 1);
  ticket_entry entry = {ctx, NULL, 0};
  if (tl__marker_has(ctx)) {
    leave(&entry);
    return tl__fail(TL_E_REENTERED,
                    "tl_ticket_enter: owner %llu: this thread already executes for the context "
                    "(the session's own thread, or a lane or ticket entry)",
                    (unsigned long long)ticket->owner);
  }
  status = tl__marker_push(ctx, ticket->owner, "tl_ticket_enter");
  if (status != TL_OK) {
    leave(&entry);
    return status;
  }
  entry.marked = 1;
  status = tl__bundle_checkout(ctx, &entry.bundle);
  if (status != TL_OK) {
    char reason[TL_MESSAGE_CAPACITY];
    tl__message_copy(reason);
    leave(&entry);
    return tl__fail(status, "tl_ticket_enter: %s", reason);
  }
  /* The surface lives in the bundle, not on this stack: kept past fn, it is retired
   * (TL_E_STALE for routes) rather than a dead frame. */
  tl_exec *exec = entry.bundle->surface;
  tl__exec_init(exec, TL_EXEC_TICKET, entry.bundle, NULL, 1, NULL);
  tl__unwind_node unwind;
  tl__unwind_push(&unwind, leave_on_unwind, &entry);
  int result = fn(exec, arg);
  tl__unwind_pop(&unwind);
  leave(&entry);
  if (fn_result != NULL) *fn_result = result;
  return TL_OK;
}
