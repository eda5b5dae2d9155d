/* src/session/session_int.h: the held session's insides, for the layers that work on it
 * (context, tickets, phase). Users see only tenlane/session.h.
 *
 * Invariants:
 * - state moves CLOSED -> IDLE at open, IDLE <-> PHASE around a phase, and back to CLOSED
 *   at close; only the opening thread changes it. The root surface reads it as its gate.
 * - thread_token is the opening thread's while the session is open, 0 when closed. */
#ifndef TL_SESSION_SESSION_INT_H
#define TL_SESSION_SESSION_INT_H

#define _GNU_SOURCE 1
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/unwind.h"
#include "exec/exec.h"
#include "tenlane/session.h"

/* The session's state is the gate its root surface reads (exec/exec.h). */
typedef enum tl__session_state {
  TL__SESSION_CLOSED = TL__GATE_CLOSED,
  TL__SESSION_IDLE = TL__GATE_OPEN,
  TL__SESSION_PHASE = TL__GATE_PARKED
} tl__session_state;

struct tl_session {
  struct tl_context *ctx;
  tl_owner owner;
  uint64_t generation;
  uint64_t thread_token;
  atomic_int state; /* tl__session_state; read by stats */
  tl_exec exec;     /* the root surface */
  int affinity_saved;
  cpu_set_t saved_mask;
  tl__unwind_node unwind; /* closes the session if a panic passes over it */
  char message[TL_MESSAGE_CAPACITY];
  uint64_t id;                      /* this open's number: what the user's handle holds */
  atomic_uint_fast64_t phase_token; /* the open phase's token, 0 when none (handle.c reads it
                                       to tell a foreign phase from a stale one) */
  tl__unwind_node phase_unwind;     /* ends the open phase if a panic passes over it */
  struct tl_session *next_open;     /* the process-wide list of open sessions (handle.c) */
};

/* ---- Handles (handle.c) ---------------------------------------------------------------- */

/* Register a session just opened on the calling thread: a fresh 64-bit open number, the
 * process-wide list of open sessions, the thread's list of held sessions (and the
 * thread-exit hook). Returns the handle the user gets. */
tl_session *tl__session_register(tl_session *session);
/* Remove the session from both lists (at close, before anything is released). */
void tl__session_unregister(tl_session *session);
/* The session `handle` names when the calling thread holds it; otherwise NULL and, in
 * *status, TL_E_INVALID (NULL), TL_E_WRONG_THREAD (open, held by another thread) or
 * TL_E_STALE (closed, or not a handle), with a message that begins with `call`. Never
 * dereferences the handle. */
tl_session *tl__session_resolve(const tl_session *handle, const char *call, tl_status *status);
/* The open session `handle` names, from any thread (NULL when closed). The object stays
 * valid until its context is destroyed, which needs it closed first. */
tl_session *tl__session_find_any(const tl_session *handle);
/* The owner of the open session `handle` names, from any thread; 0 when it is closed. */
tl_owner tl__session_owner_any(const tl_session *handle);
/* Join the ticket's session as a child entry (tl__child_enter) if it is still open, under
 * the registry's lock so that the session cannot close before the entry is counted; the
 * session is found by its open number and its context's serial (never by address), and
 * *ctx is its context. TL_E_STALE (message beginning with `call`) when it is closed. */
tl_status tl__session_join(const tl_ticket *ticket, const char *call, struct tl_context **ctx);
/* 1 when some open session, on any thread, has the phase `token` open. */
int tl__session_phase_elsewhere(uint64_t token);
/* Close a session whose owner thread is ending without having closed it (called on that
 * thread by the thread-exit hook): everything close does except restoring the CPU mask,
 * and the context remembers the dead owner for the next opener and destroy
 * (TL_E_OWNER_DEAD). */
void tl__session_abandon(tl_session *session);

#endif
