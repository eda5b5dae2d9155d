/* src/session/affinity.h: the caller-affinity guard. While a session is held, its thread
 * runs inside the context's CPU set; closing puts the thread's old mask back. */
#ifndef TL_SESSION_AFFINITY_H
#define TL_SESSION_AFFINITY_H

#include "context/context_int.h"

/* Narrow the calling thread to ctx's CPU set, saving its mask in the session. No-op
 * without a CPU set. TL_E_AFFINITY with a message on failure (the mask is left as it was). */
tl_status tl__affinity_narrow(tl_session *session);
/* Put back the saved mask. TL_E_AFFINITY with a message on failure. */
tl_status tl__affinity_restore(tl_session *session);

/* Test hook: when non-zero, the next restore fails (and the hook clears). */
extern atomic_int tl__fault_affinity_restore;

#endif
