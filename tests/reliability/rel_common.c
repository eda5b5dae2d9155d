/* tests/reliability/rel_common.c: see rel_common.h. */
#include "rel_common.h"

#include <string.h>

#include "tl_test.h"

#define SENTINEL_BYTE 0x5a

void rel_held_open(rel_held *held, int budget, size_t scratch_limit) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = budget;
  config.scratch_limit = scratch_limit;
  TL_CHECK_OK(tl_context_create(&config, &held->ctx));
  TL_CHECK_OK(tl_session_open(held->ctx, tl_owner_new(), TL_NOWAIT, &held->session));
  held->exec = tl_session_exec(held->session);
}

void rel_held_close(rel_held *held) {
  TL_CHECK_OK(tl_session_close(held->session));
  TL_CHECK_OK(tl_context_destroy(held->ctx));
  memset(held, 0, sizeof *held);
}

void rel_message_reset(void) {
  /* Any cheap failing call names its argument; this one names ours. */
  (void)tl_tensor_validate(NULL, "REL_SENTINEL");
}

int rel_message_fresh(const char *message) {
  return message != NULL && message[0] != '\0' && strstr(message, "REL_SENTINEL") == NULL;
}

void rel_check_idle(const tl_context *ctx) {
  tl_context_stats stats;
  TL_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TL_CHECK(stats.session_open == 1);
  TL_CHECK(stats.root_checked_out == 1);
  TL_CHECK(stats.phase_active == 0);
  TL_CHECK(stats.active_lanes == 0);
  TL_CHECK(stats.active_children == 0);
  TL_CHECK(stats.waiting_openers == 0);
}

void rel_watch_init(rel_watch *watch) { memset(watch, 0, sizeof *watch); }

void rel_watch_add(rel_watch *watch, void *ptr, size_t bytes) {
  TL_CHECK(watch->count < 16);
  if (ptr == NULL || bytes == 0) return;
  memset(ptr, SENTINEL_BYTE, bytes);
  watch->ptr[watch->count] = ptr;
  watch->bytes[watch->count] = bytes;
  watch->count++;
}

void rel_watch_tensor(rel_watch *watch, tl_tensor *t) {
  int64_t lo, hi;
  TL_CHECK(tl_tensor_extent_range(t, &lo, &hi));
  if (hi < lo) return;
  size_t size = tl_dtype_size(t->dtype);
  rel_watch_add(watch, (char *)t->data + (size_t)lo * size, (size_t)(hi - lo + 1) * size);
}

int rel_watch_unchanged(const rel_watch *watch) {
  for (int i = 0; i < watch->count; i++) {
    const unsigned char *bytes = watch->ptr[i];
    for (size_t k = 0; k < watch->bytes[i]; k++) {
      if (bytes[k] != SENTINEL_BYTE) return 0;
    }
  }
  return 1;
}

uint64_t rel_rand_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t rel_rand_below(uint64_t *state, uint32_t n) {
  return n == 0 ? 0 : (uint32_t)(rel_rand_next(state) % n);
}

void rel_fill(tl_tensor *t, uint64_t seed, double diag) {
  int64_t numel = tl_tensor_numel(t);
  int64_t idx[TL_MAX_RANK] = {0};
  for (int64_t e = 0; e < numel; e++) {
    double re = (double)(rel_rand_next(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    double im = (double)(rel_rand_next(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (t->rank == 2 && idx[0] == idx[1]) re += diag;
    void *p = tl_tensor_element(t, idx);
    switch (t->dtype) {
      case TL_F32:
        *(float *)p = (float)re;
        break;
      case TL_F64:
        *(double *)p = re;
        break;
      case TL_C64:
        ((float *)p)[0] = (float)re, ((float *)p)[1] = (float)im;
        break;
      case TL_C128:
        ((double *)p)[0] = re, ((double *)p)[1] = im;
        break;
    }
    for (int k = 0; k < t->rank; k++) { /* column-major odometer */
      if (++idx[k] < t->shape[k]) break;
      idx[k] = 0;
    }
  }
}
