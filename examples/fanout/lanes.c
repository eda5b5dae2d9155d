/* examples/fanout/lanes.c: variants (a) and (b), the patches through tl_map.
 *
 * One context per variant (budget = --threads for (a), 1 for (b)) kept for the whole run;
 * each pass opens a held session and runs tl_map over its items: each item runs on its
 * lane's child surface, and every kernel of the patch is a tenlane route on that surface
 * (routes.c), so the routes' temporaries come from the lane's private scratch arena, kept
 * across every item the lane pulls. The patch's own buffers live in a block per lane
 * index, made when the variant opens and kept across passes. Results go to the caller's
 * private array, which main publishes only after every pass succeeded: a failed map may
 * have left any of them half written.
 *
 * Invariant: nothing here allocates per item; the warm-up pass grows the arenas, so the
 * measured pass's allocation count is the steady state. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"

#include "fanout.h"

const char *fan_tenlane_kernels(void) { return tl_kernels_provider(); }

/* ---- The map ------------------------------------------------------------------------- */

typedef struct lane_slot {
  void *block; /* this lane index's patch buffers, made on its first item */
  fan_work work;
  int failed;
  size_t failed_item;
  char why[400];
  char pad[64]; /* lanes write their slots concurrently: keep them off each other's lines */
} lane_slot;

typedef struct tenlane_state {
  const fan_env *env;
  tl_context *ctx;
  int lanes;
  lane_slot *slots;
} tenlane_state;

typedef struct map_arg {
  const fan_problem *pb;
  fan_pass *pass;
  lane_slot *slots;
  int slot_count;
  atomic_int threads_seen;
} map_arg;

static int fan_item(tl_exec *exec, size_t index, int lane_index, void *arg) {
  map_arg *ma = arg;
  size_t item = ma->pass->first + index;
  if (lane_index < 0 || lane_index >= ma->slot_count) return 1;
  lane_slot *slot = &ma->slots[lane_index];
  fan_tenlane_backend backend;
  fan_call call;
  fan_tenlane_call_init(&call, ma->pb->dtype, &backend, exec);
  int rc = fan_patch_run(ma->pb, item, &call, &slot->work, &ma->pass->priv[item]);
  if (rc && backend.last_status == (int)TL_E_CANCELLED) {
    /* A route saw the run's cancellation (a peer's item failed): this item did not fail,
     * it was stopped. Say so, so that it never outranks the real failure. */
    return (int)TL_E_CANCELLED;
  }
  if (rc) {
    if (!slot->failed || item < slot->failed_item) {
      slot->failed = 1;
      slot->failed_item = item;
      snprintf(slot->why, sizeof slot->why, "%s", call.why);
    }
    return rc;
  }
  if (ma->pass->sample_threads && (item & 255) == 0) fan_thread_sample(&ma->threads_seen);
  fan_progress_item(ma->pass->progress);
  return 0;
}

static void tenlane_close(void *state);

static int tenlane_open(const fan_env *env, const fan_config *which, void **out, char *why,
                        size_t why_size) {
  tenlane_state *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(why, why_size, "out of memory");
    return 3;
  }
  st->env = env;
  int budget = which->one_thread ? 1 : env->opt->threads;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = budget;
  config.cpus = env->cpus;
  config.cpu_count = budget == 1 ? 1 : env->cpu_count;
  tl_status status = tl_context_create(&config, &st->ctx);
  if (status != TL_OK) {
    snprintf(why, why_size, "tl_context_create(threads=%d): %s: %s", budget, tl_status_name(status),
             tl_last_message());
    free(st);
    return 3;
  }
  st->lanes = tl_context_budget(st->ctx);
  st->slots = calloc((size_t)st->lanes, sizeof *st->slots);
  if (!st->slots) {
    snprintf(why, why_size, "out of memory for %d lane slots", st->lanes);
    tl_context_destroy(st->ctx);
    free(st);
    return 3;
  }
  /* Every lane's patch buffers now, so that a lane whose first item comes after the
   * warm-up (oversubscribed CPUs) does not allocate during a measured pass. */
  size_t bytes = (fan_work_bytes(env->pb) + 63) & ~(size_t)63;
  for (int i = 0; i < st->lanes; i++) {
    st->slots[i].block = aligned_alloc(64, bytes);
    if (!st->slots[i].block) {
      snprintf(why, why_size, "out of memory for lane %d's buffers", i);
      tenlane_close(st);
      return 3;
    }
    fan_work_carve(env->pb, st->slots[i].block, &st->slots[i].work);
  }
  *out = st;
  return 0;
}

/* One pass: open a held session, tl_map over the pass's items, close it. The context,
 * its pool, the lanes' child resources (scratch arenas, plan caches) and the per-lane
 * buffers are kept across passes. */
static int tenlane_pass(void *state, fan_pass *pass) {
  tenlane_state *st = state;
  tl_session *session = NULL;
  tl_status status = tl_session_open(st->ctx, tl_owner_new(), TL_WAIT, &session);
  if (status != TL_OK) {
    snprintf(pass->why, sizeof pass->why, "tl_session_open: %s: %s", tl_status_name(status),
             tl_last_message());
    return 3;
  }
  map_arg ma;
  ma.pb = st->env->pb;
  ma.pass = pass;
  ma.slots = st->slots;
  ma.slot_count = st->lanes;
  atomic_init(&ma.threads_seen, 0);
  tl_map_outcome outcome;

  uint64_t tl0 = tl_allocation_count(), m0 = fan_malloc_count();
  double t0 = fan_now();
  status = tl_map(session, pass->count, fan_item, &ma, &outcome);
  double t1 = fan_now();
  uint64_t tl1 = tl_allocation_count(), m1 = fan_malloc_count();

  int result = 0;
  if (status == TL_OK) {
    pass->seconds = t1 - t0;
    pass->tl_allocs = tl1 - tl0;
    pass->mallocs = m1 - m0;
    pass->threads_seen = atomic_load(&ma.threads_seen);
  } else {
    /* Every lane has joined: tl_map returns only after that. The lowest item that failed
     * by itself comes from the lanes' own records: an item that a route stopped because of
     * the cancellation is not a failure. */
    int lowest = -1;
    for (int i = 0; i < st->lanes; i++)
      if (st->slots[i].failed &&
          (lowest < 0 || st->slots[i].failed_item < st->slots[lowest].failed_item))
        lowest = i;
    if (lowest >= 0) {
      pass->failed_item = st->slots[lowest].failed_item;
      snprintf(pass->why, sizeof pass->why, "%s", st->slots[lowest].why);
      result = 1;
    } else if (outcome.failed && outcome.status == TL_E_LANE) {
      pass->failed_item = pass->first + outcome.failed_item;
      snprintf(pass->why, sizeof pass->why, "%s", outcome.message);
      result = 1;
    } else {
      snprintf(pass->why, sizeof pass->why, "tl_map: %s: %s", tl_status_name(status),
               outcome.message[0] ? outcome.message : tl_last_message());
      result = 3;
    }
  }
  status = tl_session_close(session);
  if (status != TL_OK && result == 0) {
    snprintf(pass->why, sizeof pass->why, "tl_session_close: %s: %s", tl_status_name(status),
             tl_last_message());
    result = 3;
  }
  return result;
}

static int tenlane_lanes(void *state) { return ((tenlane_state *)state)->lanes; }

static void tenlane_close(void *state) {
  tenlane_state *st = state;
  if (!st) return;
  tl_context_destroy(st->ctx);
  for (int i = 0; i < st->lanes; i++) free(st->slots[i].block);
  free(st->slots);
  free(st);
}

const fan_runner fan_tenlane_runner = {tenlane_open, tenlane_pass, tenlane_lanes, tenlane_close};
