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
  unsigned long thread_token;
  atomic_int state; /* tl__session_state; read by stats */
  tl_exec exec;     /* the root surface */
  int affinity_saved;
  cpu_set_t saved_mask;
  tl__unwind_node unwind; /* closes the session if a panic passes over it */
  char message[TL_MESSAGE_CAPACITY];
};

#endif
