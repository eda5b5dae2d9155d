/* tests/reliability/rel_common.h: small helpers the reliability binaries share (the held
 * session is th_held, tests/support/th_fixtures.h): a message sentinel (so a test can tell a fresh
 * failure message from one left by an earlier call), watched output regions (filled with a
 * sentinel before a call, compared after it) and the idle-session check. */
#ifndef REL_COMMON_H
#define REL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/context.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"

/* Leave a known message in the calling thread's slot (it names REL_SENTINEL). */
void rel_message_reset(void);
/* 1 when `message` is non-empty and is not the sentinel's. */
int rel_message_fresh(const char *message);

/* The session is held, idle (no phase, no lane, no ticket entry active, no waiter) and
 * its root resources are checked out. Fails the test otherwise. */
void rel_check_idle(const tl_context *ctx);

/* Up to 16 watched regions: each is filled with a sentinel byte pattern when watched and
 * must still hold it at rel_watch_check. */
typedef struct rel_watch {
  int count;
  void *ptr[16];
  size_t bytes[16];
} rel_watch;

void rel_watch_init(rel_watch *watch);
void rel_watch_add(rel_watch *watch, void *ptr, size_t bytes);
/* A tensor's data (the bytes its extent range covers). */
void rel_watch_tensor(rel_watch *watch, tl_tensor *t);
/* 1 when every watched region still holds its sentinel. */
int rel_watch_unchanged(const rel_watch *watch);

/* A small deterministic generator (splitmix64). */
uint64_t rel_rand_next(uint64_t *state);
/* Uniform in [0, n). */
uint32_t rel_rand_below(uint64_t *state, uint32_t n);

/* Fill an f32/f64/c64/c128 tensor with values in [-1, 1] from `seed`, plus `diag` on the
 * main diagonal of a rank-2 tensor (diagonal dominance for solves). */
void rel_fill(tl_tensor *t, uint64_t seed, double diag);

#endif
