/* src/core/affinity.c: narrowing and restoring the holder thread's CPU mask. */
#include "core/core_int.h"

#include <errno.h>
#include <string.h>

#include "base/base.h"

atomic_int tl__fault_affinity_restore;

tl_status tl__affinity_narrow(tl_session *session) {
  tl_context *ctx = session->ctx;
  session->affinity_saved = 0;
  if (!ctx->has_cpu_set) return TL_OK;
  CPU_ZERO(&session->saved_mask);
  int rc = pthread_getaffinity_np(pthread_self(), sizeof session->saved_mask, &session->saved_mask);
  if (rc != 0)
    return tl__fail(TL_E_AFFINITY, "tl_session_open: reading the thread's CPU mask failed: %s",
                    strerror(rc));
  rc = pthread_setaffinity_np(pthread_self(), sizeof ctx->cpu_set, &ctx->cpu_set);
  if (rc != 0)
    return tl__fail(TL_E_AFFINITY,
                    "tl_session_open: narrowing the thread to the context's %d CPUs failed: %s",
                    CPU_COUNT(&ctx->cpu_set), strerror(rc));
  session->affinity_saved = 1;
  return TL_OK;
}

tl_status tl__affinity_restore(tl_session *session) {
  if (!session->affinity_saved) return TL_OK;
  session->affinity_saved = 0;
  if (atomic_exchange(&tl__fault_affinity_restore, 0))
    return tl__fail(TL_E_AFFINITY,
                    "tl_session_close: restoring the thread's CPU mask failed (injected fault)");
  int rc = pthread_setaffinity_np(pthread_self(), sizeof session->saved_mask, &session->saved_mask);
  if (rc != 0)
    return tl__fail(TL_E_AFFINITY, "tl_session_close: restoring the thread's CPU mask failed: %s",
                    strerror(rc));
  return TL_OK;
}
