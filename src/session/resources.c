/* src/session/resources.c: child resource bundles. Each child surface (a lane, a ticket
 * entry, the inline lane) works with a bundle of its own; returned bundles are kept on the
 * context's free list, so their scratch and plans are reused by later children and a
 * steady-state phase allocates nothing. */
#include "base/base.h"
#include "context/context_int.h"

tl_status tl__bundle_checkout(tl_context *ctx, tl__resources **out) {
  pthread_mutex_lock(&ctx->bundle_lock);
  tl__resources *bundle = ctx->free_bundles;
  if (bundle != NULL) ctx->free_bundles = bundle->next_free;
  pthread_mutex_unlock(&ctx->bundle_lock);
  if (bundle == NULL) {
    bundle = tl__alloc(sizeof *bundle, TL__CACHE_LINE);
    if (bundle == NULL)
      return tl__fail(TL_E_NOMEM, "no memory for a child resource bundle (%zu bytes)",
                      sizeof *bundle);
    tl__arena_init(&bundle->arena, ctx->scratch_limit);
    tl__plan_cache_init(&bundle->plans);
    atomic_fetch_add(&ctx->bundle_count, 1);
  }
  bundle->next_free = NULL;
  *out = bundle;
  return TL_OK;
}

void tl__bundle_return(tl_context *ctx, tl__resources *bundle) {
  tl__arena_reset(&bundle->arena);
  pthread_mutex_lock(&ctx->bundle_lock);
  bundle->next_free = ctx->free_bundles;
  ctx->free_bundles = bundle;
  pthread_mutex_unlock(&ctx->bundle_lock);
}

void tl__bundles_release(tl_context *ctx) {
  tl__resources *bundle = ctx->free_bundles;
  while (bundle != NULL) {
    tl__resources *next = bundle->next_free;
    tl__arena_release(&bundle->arena);
    tl__plan_cache_clear(&bundle->plans);
    tl__free(bundle);
    bundle = next;
  }
  ctx->free_bundles = NULL;
}
