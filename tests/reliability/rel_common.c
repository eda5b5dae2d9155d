/* tests/reliability/rel_common.c: see rel_common.h. */
#include "rel_common.h"

#include <string.h>

#include "th_numeric.h"
#include "th_test.h"

#define SENTINEL_BYTE 0x5a

void rel_message_reset(void) {
  /* Any cheap failing call names its argument; this one names ours. */
  (void)tl_tensor_validate(NULL, "REL_SENTINEL");
}

int rel_message_fresh(const char *message) {
  return message != NULL && message[0] != '\0' && strstr(message, "REL_SENTINEL") == NULL;
}

void rel_check_idle(const tl_context *ctx) {
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(ctx, &stats));
  TH_CHECK(stats.session_open == 1);
  TH_CHECK(stats.root_checked_out == 1);
  TH_CHECK(stats.phase_active == 0);
  TH_CHECK(stats.active_lanes == 0);
  TH_CHECK(stats.active_children == 0);
  TH_CHECK(stats.waiting_openers == 0);
}

void rel_watch_init(rel_watch *watch) { memset(watch, 0, sizeof *watch); }

void rel_watch_add(rel_watch *watch, void *ptr, size_t bytes) {
  TH_CHECK(watch->count < 16);
  if (ptr == NULL || bytes == 0) return;
  memset(ptr, SENTINEL_BYTE, bytes);
  watch->ptr[watch->count] = ptr;
  watch->bytes[watch->count] = bytes;
  watch->count++;
}

void rel_watch_tensor(rel_watch *watch, tl_tensor *t) {
  int64_t lo, hi;
  TH_CHECK(tl_tensor_extent_range(t, &lo, &hi));
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
  TH_NUM_FOR_EACH(idx, t->rank, t->shape) {
    double re = th_num_from_bits(rel_rand_next(&seed));
    double im = th_num_from_bits(rel_rand_next(&seed));
    if (t->rank == 2 && idx[0] == idx[1]) re += diag;
    th_num_set_parts(t, idx, re, im);
  }
}
