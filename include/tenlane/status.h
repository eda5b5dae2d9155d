/* tenlane/status.h: status codes, their names and texts, and the failure message.
 *
 * Every fallible public call returns a tl_status. A failing call also leaves a
 * message that says what went wrong, naming the argument and the values involved.
 * The message is kept per thread (tl_last_message) and, for calls made through a
 * session, also on the session (tl_session_message). An out-of-memory failure
 * never needs an allocation to report itself. */
#ifndef TENLANE_STATUS_H
#define TENLANE_STATUS_H

#include "tenlane/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of every public message buffer (tl_phase_outcome, tl_map_outcome, tl_panic_info),
 * the terminating NUL included; longer messages are truncated. */
#define TL_MESSAGE_CAPACITY 256

/* The one list of statuses: X(SUFFIX, text). The enum, tl_status_name() and
 * tl_status_str() are all generated from it, so none can fall behind. */
#define TL_STATUS_MAP(X)                                                           \
  X(OK, "success")                                                                 \
  X(E_INVALID, "invalid argument")                                                 \
  X(E_NOMEM, "out of memory")                                                      \
  X(E_BUSY, "the context is held by another owner")                                \
  X(E_REENTERED, "this thread already executes for this context")                  \
  X(E_WRONG_THREAD, "handle used from a thread other than the one that opened it") \
  X(E_STALE, "handle used after the scope that made it ended")                     \
  X(E_PHASE_ACTIVE, "a phase is running on this session")                          \
  X(E_TARGET_POOL_CALLER, "called from a worker of the pool it would wait on")     \
  X(E_UNAVAILABLE, "the requested execution is not available here")                \
  X(E_SCRATCH_LIMIT, "the scratch limit is too small for this operation")          \
  X(E_SHAPE, "shapes or strides do not fit")                                       \
  X(E_DTYPE, "element types do not fit")                                           \
  X(E_ALIAS, "an output overlaps an input")                                        \
  X(E_PROVIDER, "the numerical provider reported a failure")                       \
  X(E_AFFINITY, "CPU affinity could not be set or restored")                       \
  X(E_PANICKED, "a panic was caught")                                              \
  X(E_LANE, "a phase lane reported an error")                                      \
  X(E_CANCELLED, "the work was cancelled")                                         \
  X(E_THREAD, "a thread could not be created")                                     \
  X(E_NONFINITE, "a numerical input holds NaN or infinity")                        \
  X(E_LIMIT, "a documented limit was reached")                                     \
  X(E_OWNER_DEAD, "the thread that held the session ended without closing it")     \
  X(E_FORKED, "the object was made before fork() and cannot run in this process")

typedef enum tl_status {
#define TL__STATUS_ENUM(suffix, text) TL_##suffix,
  TL_STATUS_MAP(TL__STATUS_ENUM)
#undef TL__STATUS_ENUM
      TL__STATUS_COUNT
} tl_status;

/* "TL_E_BUSY" for TL_E_BUSY; "TL_E_?" for a value outside the list. Static, never NULL. */
TL_API const char *tl_status_name(tl_status status);

/* A short English text for the status. Static, never NULL. */
TL_API const char *tl_status_str(tl_status status);

/* The message of the last failing tenlane call on the calling thread, or "" if none
 * failed yet. The text stays valid until the next tenlane call on this thread. */
TL_API const char *tl_last_message(void);

#ifdef __cplusplus
}
#endif
#endif
