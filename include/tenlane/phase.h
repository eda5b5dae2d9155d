/* tenlane/phase.h: the phase lease.
 *
 * A phase lends the context's pool to the session's owner for the length of one
 * callback. Inside it, tl_phase_run runs one lane per pool worker (or one inline lane
 * on the calling thread when the budget is 1). Each lane holds one child surface for its
 * whole life (private scratch and plan cache, reused across every item it pulls), sees a
 * cooperative cancellation flag, and is joined before tl_phase_run returns, on every path.
 * While the phase is open the session's own surface is parked: root calls on it return
 * TL_E_PHASE_ACTIVE.
 *
 * The phase promises success only after the join. Lanes that write results should keep
 * them private (per lane or per item) and publish them only after a TL_OK run: a failed
 * run may have left any of them half done. */
#ifndef TENLANE_PHASE_H
#define TENLANE_PHASE_H

#include "tenlane/export.h"
#include "tenlane/session.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_phase tl_phase;
typedef struct tl_lane tl_lane;

typedef void (*tl_phase_fn)(tl_phase *phase, void *arg);

/* Open a phase on `session` and call fn(phase, arg) on the calling thread; the phase
 * handle is valid only inside that call (afterwards calls on it return TL_E_STALE; it is
 * a 64-bit token, never reused). fn must return normally or through tl_panic: a longjmp
 * out of fn is forbidden; when the next tl_session_phase, tl_map or tl_session_close on
 * the session is made from the frame that opened the phase or an outer one, tenlane sees
 * the jump and ends the abandoned phase first.
 * Returns TL_OK after fn returned. Errors (fn not called):
 *   TL_E_INVALID (NULL), TL_E_WRONG_THREAD (not the session's thread),
 *   TL_E_PHASE_ACTIVE (a phase is already open on it),
 *   TL_E_TARGET_POOL_CALLER (the caller is a worker of the context's pool; refused before
 *   any wait), TL_E_STALE (the session was closed), TL_E_FORKED (in the child of a fork()),
 *   TL_E_LIMIT (16 phases already open on this thread).
 * A panic raised inside fn (including one re-raised by tl_phase_run) ends the phase and
 * leaves the session idle before it unwinds further. */
TL_API tl_status tl_session_phase(tl_session *session, tl_phase_fn fn, void *arg);

/* Lanes a run drives: the context's thread budget, at least 1. 0 for a NULL or stale phase. */
TL_API int tl_phase_lanes(const tl_phase *phase);

/* A lane callback returns 0 on success, or a non-zero code it chooses; it may describe the
 * failure with tl_lane_fail. Returning TL_E_CANCELLED (as an int) says "stopped because
 * cancellation was observed" and never outranks a real failure. */
typedef int (*tl_lane_fn)(tl_lane *lane, int lane_index, void *arg);

typedef enum tl_phase_outcome_kind {
  TL_PHASE_OK = 0,      /* every lane returned 0 (or was skipped after a clean cancel) */
  TL_PHASE_LANE = 1,    /* a lane callback returned non-zero */
  TL_PHASE_SESSION = 2, /* a lane's child entry or cleanup failed, or a lane panicked */
  TL_PHASE_NOT_RUN = 3  /* the run was refused before any lane started */
} tl_phase_outcome_kind;

typedef struct tl_phase_outcome {
  tl_phase_outcome_kind kind;
  int lane_index;                    /* the reported lane, -1 when kind is OK or NOT_RUN */
  int lane_code;                     /* the lane's return value (kind LANE) */
  tl_status status;                  /* TL_E_LANE, or the entry/cleanup failure (kind SESSION) */
  int lanes_entered;                 /* lanes that opened their child surface */
  int lanes_skipped;                 /* lanes that saw cancellation before entry and skipped it */
  char message[TL_MESSAGE_CAPACITY]; /* what failed, in words */
} tl_phase_outcome;

/* Run lane_fn on every lane and return after every lane has returned.
 * Each run starts with a clear cancellation flag. The flag is set when a lane returns
 * non-zero, when a child entry or cleanup fails, and when a lane panics. A lane checks it
 * before entry and after entry before its callback; callbacks should poll
 * tl_lane_cancelled while they pull work, and must never wait without bound for a peer.
 * Outcome precedence: a session failure replaces a lane failure; among equals the lowest
 * lane index wins. *outcome may be NULL.
 * Returns TL_OK, TL_E_LANE (kind LANE), the failing status (kind SESSION), or a refusal:
 * TL_E_INVALID, TL_E_STALE (phase used outside its callback), TL_E_WRONG_THREAD.
 * If a lane panicked, the panic is raised again on the calling thread after the join
 * (this call then does not return). */
TL_API tl_status tl_phase_run(tl_phase *phase, tl_lane_fn lane_fn, void *arg,
                              tl_phase_outcome *outcome);

/* The lane's child surface, valid for the lane callback's duration; kept past it, routes
 * on it return TL_E_STALE. */
TL_API tl_exec *tl_lane_exec(tl_lane *lane);

/* 1 once the run's cancellation flag is set, and for a lane kept past its callback. Cheap
 * (relaxed atomic loads). */
TL_API int tl_lane_cancelled(const tl_lane *lane);

/* Set the run's cancellation flag (peers see it) without failing this lane. Nothing for a
 * lane kept past its callback. */
TL_API void tl_lane_cancel(tl_lane *lane);

/* Record a printf-style message for this lane's failure and return `code`, for
 * `return tl_lane_fail(lane, 3, "item %zu diverged", i);`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
TL_API int
tl_lane_fail(tl_lane *lane, int code, const char *format, ...);

#ifdef __cplusplus
}
#endif
#endif
