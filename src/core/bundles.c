/* src/core/bundles.c: child resource bundles. Each child surface works with a bundle of
 * its own. A ticket entry takes one from the context's free list and returns it; a lane
 * index keeps its own bundle across runs (lane i always runs on worker i), so its scratch
 * and plans stay warm and a steady-state phase allocates nothing and takes no lock. */
#include <string.h>

#include "base/base.h"
#include "core/core_int.h"

/* A bundle and the surface a child entry gets over it, made and freed together, so that a
 * surface pointer kept past its callback points at memory the context still owns. */
typedef struct bundle_block {
  tl__resources resources;
  tl_exec surface;
} bundle_block;

tl_status tl__bundle_checkout(tl_context *ctx, tl__resources **out) {
  pthread_mutex_lock(&ctx->bundle_lock);
  tl__resources *bundle = ctx->free_bundles;
  if (bundle != NULL) ctx->free_bundles = bundle->next_free;
  pthread_mutex_unlock(&ctx->bundle_lock);
  if (bundle == NULL) {
    bundle_block *block = tl__alloc(sizeof *block, TL__CACHE_LINE);
    if (block == NULL)
      return tl__fail(TL_E_NOMEM, "no memory for a child resource bundle (%zu bytes)",
                      sizeof *block);
    bundle = &block->resources;
    bundle->surface = &block->surface;
    memset(bundle->surface, 0, sizeof *bundle->surface);
    bundle->surface->thread_token = TL__EXEC_RETIRED;
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

tl_status tl__lane_bundle(tl_context *ctx, int index, tl__resources **out) {
  tl__resources *bundle = ctx->lane_bundles[index];
  if (bundle == NULL) {
    tl_status status = tl__bundle_checkout(ctx, &bundle);
    if (status != TL_OK) return status;
    ctx->lane_bundles[index] = bundle;
  }
  *out = bundle;
  return TL_OK;
}

static void bundle_free(tl__resources *bundle) {
  tl__arena_release(&bundle->arena);
  tl__plan_cache_clear(&bundle->plans);
  tl__free(bundle);
}

void tl__bundles_release(tl_context *ctx) {
  for (int i = 0; i < ctx->budget; i++) {
    if (ctx->lane_bundles[i] != NULL) bundle_free(ctx->lane_bundles[i]);
    ctx->lane_bundles[i] = NULL;
  }
  tl__resources *bundle = ctx->free_bundles;
  while (bundle != NULL) {
    tl__resources *next = bundle->next_free;
    bundle_free(bundle);
    bundle = next;
  }
  ctx->free_bundles = NULL;
}
