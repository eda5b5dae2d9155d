/* src/admission/marker.h: the thread-local reentry marker.
 *
 * A thread that executes for a context (it holds the context's session, or runs one of its
 * lanes or ticket entries) carries a mark for that context. Entering the same context
 * again on that thread is refused with TL_E_REENTERED instead of deadlocking. The holder's
 * thread keeps its mark for the session's whole life. A thread may carry marks for a few
 * different contexts at once. */
#ifndef TL_ADMISSION_MARKER_H
#define TL_ADMISSION_MARKER_H

#include "tenlane/context.h"

#define TL__MARKS_MAX TL_CONTEXTS_PER_THREAD_MAX

/* 1 when the calling thread carries a mark for ctx. */
int tl__marker_has(const tl_context *ctx);
/* Add a mark; TL_E_LIMIT, with a message that begins with `call` (the public entry point),
 * when the thread already carries TL__MARKS_MAX. */
tl_status tl__marker_push(const tl_context *ctx, tl_owner owner, const char *call);
/* Remove the thread's mark for ctx (no-op when it has none). */
void tl__marker_pop(const tl_context *ctx);

#endif
