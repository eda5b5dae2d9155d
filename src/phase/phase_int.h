/* src/phase/phase_int.h: the lease and a run, shared by src/phase and src/map.
 *
 * Invariants:
 * - A phase lives on the stack of tl_session_phase; users hold an opaque token instead of
 *   its address. Tokens point into a thread-local array, so a token kept past its callback
 *   is recognised as stale (or as another thread's) without ever being dereferenced.
 * - While the phase is open the session is in state PHASE: its root surface is parked.
 * - A run's lanes write only their own report; the driver reads reports after the join,
 *   which the broadcast's completion count orders before the driver's reads.
 * - Every lane that entered leaves: its bundle goes back, its mark is removed and the
 *   admission child count drops, on success, failure and panic alike. */
#ifndef TL_PHASE_INT_H
#define TL_PHASE_INT_H

#include "context/context_int.h"
#include "tenlane/phase.h"

/* An open phase: a record in the opening thread's table of open phases (thread-local
 * memory, never a stack frame), found through its token. */
typedef struct tl__phase {
  uint64_t token; /* what users hold as tl_phase *: a process-wide 64-bit number */
  tl_session *session;
  tl_context *ctx;
  int lanes;
  int running;     /* a run is in progress (refuses a nested run from the inline lane) */
  uintptr_t frame; /* the stack frame of the call that opened it (jump-out detection) */
} tl__phase;

/* The most phases one thread may have open at once (nested on different contexts). */
#define TL__PHASES_NESTED_MAX 16

/* Everything a lane reads to start sits in this one cache line, written by the driver just
 * before the broadcast: a lane pays one cross-core line transfer for its start-up state
 * instead of chasing pointers through the phase and the session. */
typedef struct tl__run {
  _Alignas(TL__CACHE_LINE) atomic_int cancel;
  tl_lane_fn fn;
  void *arg;
  tl_context *ctx;
  tl_session *session;
  tl_owner owner;
  tl__phase *phase;
} tl__run;

/* tl_session_phase, with its messages naming `call` (tl_map opens its phase through it);
 * frame is the public entry point's own stack frame (__builtin_frame_address(0)). */
tl_status tl__session_phase_named(tl_session *handle, tl_phase_fn fn, void *arg, const char *call,
                                  const void *frame);

/* End a phase of `session` that a longjmp left open: its record says it was opened from a
 * frame at or below `frame` (the caller's own frame), so that frame is gone. Returns 1
 * when one was ended. Only the session's own thread calls it. */
int tl__phase_prune(tl_session *session, const void *frame);

/* The phase that `handle` names on the calling thread, or NULL with the refusal in *status
 * (TL_E_INVALID, TL_E_STALE or TL_E_WRONG_THREAD) and a message naming `call`. */
tl__phase *tl__phase_resolve(const tl_phase *handle, const char *call, tl_status *status);

#endif
