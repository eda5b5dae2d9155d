/* src/core/context.c: creating and destroying the engine, and its stats. Creation makes
 * every thread the context will ever use (the pool); nothing later creates one. */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/isa.h"
#include "core/core_int.h"

/* No default cap: a scratch limit is the user's choice; by default only the allocator limits
 * an arena (a refusal is TL_E_NOMEM). */
#define TL__DEFAULT_SCRATCH_LIMIT SIZE_MAX

void tl_context_config_init(tl_context_config *config) {
  if (config == NULL) return;
  memset(config, 0, sizeof *config);
  config->size = sizeof *config;
  config->spin_us = -1;
}

int tl_context_budget(const tl_context *ctx) { return ctx ? ctx->budget : 0; }

tl_pool *tl_context_pool(tl_context *ctx) { return ctx ? ctx->pool : NULL; }

/* Contexts are numbered from one process-wide counter, never reused (an address is). */
static atomic_uint_fast64_t last_serial;

uint64_t tl_context_serial(const tl_context *ctx) { return ctx != NULL ? ctx->serial : 0; }

/* The checks on the config's own fields (its size, the budget, the spin window). */
static tl_status check_config(const tl_context_config *config) {
  tl_status status = tl__check_struct_size("tl_context_create", "tl_context_config", config->size,
                                           TL__SIZE_THROUGH(tl_context_config, spin_us));
  if (status != TL_OK) return status;
  if (config->threads < 0 || config->threads > TL_THREADS_MAX)
    return tl__fail(TL_E_INVALID,
                    "tl_context_create: threads is %d, expected 0..%d (TL_THREADS_MAX)",
                    config->threads, TL_THREADS_MAX);
  /* The instruction-set level (TL_ISA) is read here, once per process. */
  tl_status isa = tl__isa_check();
  if (isa != TL_OK) return isa;
  if (config->spin_us > TL_SPIN_US_MAX)
    return tl__fail(TL_E_INVALID, "tl_context_create: spin_us is %d, above TL_SPIN_US_MAX (%d)",
                    config->spin_us, TL_SPIN_US_MAX);
  return TL_OK;
}

tl_status tl_context_create(const tl_context_config *config, tl_context **out) {
  if (config == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_context_create: config (%p) and out (%p) must not be NULL",
                    (const void *)config, (void *)out);
  tl_status config_status = check_config(config);
  if (config_status != TL_OK) return config_status;
  cpu_set_t process_set;
  CPU_ZERO(&process_set);
  if (sched_getaffinity(0, sizeof process_set, &process_set) != 0)
    return tl__fail(TL_E_AFFINITY, "tl_context_create: the process's CPU set could not be read");
  long configured_cpus = sysconf(_SC_NPROCESSORS_CONF);
  int configured =
      configured_cpus > 0 && configured_cpus < CPU_SETSIZE ? (int)configured_cpus : CPU_SETSIZE;
  cpu_set_t set;
  CPU_ZERO(&set);
  int set_size = 0;
  if (config->cpus != NULL) {
    if (config->cpu_count < 1)
      return tl__fail(TL_E_INVALID,
                      "tl_context_create: cpus given with cpu_count %d (expected >= 1)",
                      config->cpu_count);
    for (int i = 0; i < config->cpu_count; i++) {
      int cpu = config->cpus[i];
      /* Checked against the machine's CPUs, not the calling thread's mask: a caller pinned
       * to one CPU may still make a context over others. A CPU the process may not use
       * fails when the workers pin (TL_E_AFFINITY). */
      if (cpu < 0 || cpu >= CPU_SETSIZE || cpu >= configured)
        return tl__fail(TL_E_INVALID,
                        "tl_context_create: cpus[%d] is %d, outside the machine's CPUs 0..%d", i,
                        cpu, configured - 1);
      if (!CPU_ISSET(cpu, &set)) set_size++;
      CPU_SET(cpu, &set);
    }
  } else if (config->cpu_count != 0) {
    return tl__fail(TL_E_INVALID, "tl_context_create: cpu_count is %d but cpus is NULL",
                    config->cpu_count);
  }
  int budget = config->threads;
  if (budget == 0) budget = config->cpus != NULL ? set_size : CPU_COUNT(&process_set);
  if (budget < 1) budget = 1;

  tl_context *ctx = tl__calloc(1, sizeof *ctx, TL__CACHE_LINE);
  if (ctx == NULL) return tl__fail(TL_E_NOMEM, "tl_context_create: no memory for the context");
  ctx->lane_reports = tl__calloc((size_t)budget, sizeof *ctx->lane_reports, TL__CACHE_LINE);
  ctx->lane_bundles = tl__calloc((size_t)budget, sizeof *ctx->lane_bundles, TL__CACHE_LINE);
  if (ctx->lane_reports == NULL || ctx->lane_bundles == NULL) {
    tl__free(ctx->lane_reports);
    tl__free(ctx->lane_bundles);
    tl__free(ctx);
    return tl__fail(TL_E_NOMEM, "tl_context_create: no memory for %d lane reports", budget);
  }
  ctx->budget = budget;
  ctx->serial = atomic_fetch_add(&last_serial, 1) + 1;
  ctx->fork_epoch = tl__fork_watch();
  ctx->scratch_limit = config->scratch_limit ? config->scratch_limit : TL__DEFAULT_SCRATCH_LIMIT;
  ctx->has_cpu_set = config->cpus != NULL;
  ctx->cpu_set = set;
  tl__arbiter_init(&ctx->arbiter);
  tl__arena_init(&ctx->root.arena, ctx->scratch_limit);
  tl__plan_cache_init(&ctx->root.plans);
  pthread_mutex_init(&ctx->bundle_lock, NULL);
  ctx->session.ctx = ctx;

  if (budget > 1) {
    /* The pool's CPUs: the set in ascending order, workers spread over it. */
    int cpus[CPU_SETSIZE];
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && ctx->has_cpu_set; cpu++) {
      if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    tl_pool_config pool_config;
    tl_pool_config_init(&pool_config);
    pool_config.workers = budget;
    pool_config.cpus = ctx->has_cpu_set ? cpus : NULL;
    pool_config.cpu_count = ctx->has_cpu_set ? count : 0;
    pool_config.spin_us = config->spin_us;
    tl_status status = tl_pool_create(&pool_config, &ctx->pool);
    if (status != TL_OK) {
      char reason[TL_MESSAGE_CAPACITY];
      tl__message_copy(reason);
      pthread_mutex_destroy(&ctx->bundle_lock);
      tl__arbiter_destroy(&ctx->arbiter);
      tl__free(ctx->lane_reports);
      tl__free(ctx->lane_bundles);
      tl__free(ctx);
      return tl__fail(status, "tl_context_create: the pool of %d workers: %s", budget, reason);
    }
  }
  /* core.md / core_int.h: the pool exists exactly when budget > 1, with budget workers */
  assert((ctx->pool != NULL) == (budget > 1));
  assert(ctx->pool == NULL || tl_pool_workers(ctx->pool) == budget);
  *out = ctx;
  return TL_OK;
}

/* In the child of a fork(): the workers and any lock holder are gone, so nothing is joined
 * or locked; the memory the context owns is freed (the pool's threads cannot be). */
static tl_status destroy_forked(tl_context *ctx) {
  tl_pool_destroy(ctx->pool); /* in the child it frees memory only */
  tl__bundles_release(ctx);
  tl__arena_release(&ctx->root.arena);
  tl__plan_cache_clear(&ctx->root.plans);
  tl__free(ctx->lane_reports);
  tl__free(ctx->lane_bundles);
  tl__free(ctx);
  return TL_OK;
}

tl_status tl_context_destroy(tl_context *ctx) {
  if (ctx == NULL) return TL_OK;
  if (tl__forked(ctx->fork_epoch)) return destroy_forked(ctx);
  if (ctx->pool != NULL && tl_pool_current_index(ctx->pool) >= 0)
    return tl__fail(TL_E_TARGET_POOL_CALLER,
                    "tl_context_destroy: called from worker %d of the context's own pool",
                    tl_pool_current_index(ctx->pool));
  tl_owner holder;
  int waiting;
  tl_owner dead = atomic_exchange(&ctx->owner_died, 0);
  if (dead != 0)
    return tl__fail(TL_E_OWNER_DEAD,
                    "tl_context_destroy: owner %llu's thread ended while it held the session; "
                    "tenlane closed that session for it. Nothing was destroyed: call "
                    "tl_context_destroy again",
                    (unsigned long long)dead);
  if (tl__arbiter_in_use(&ctx->arbiter, &holder, &waiting))
    return tl__fail(TL_E_BUSY,
                    "tl_context_destroy: a session is open (owner %llu) or %d opener(s) wait; "
                    "close them first",
                    (unsigned long long)holder, waiting);
  tl_pool_destroy(ctx->pool);
  tl__bundles_release(ctx);
  tl__arena_release(&ctx->root.arena);
  tl__plan_cache_clear(&ctx->root.plans);
  pthread_mutex_destroy(&ctx->bundle_lock);
  tl__arbiter_destroy(&ctx->arbiter);
  tl__free(ctx->lane_reports);
  tl__free(ctx->lane_bundles);
  tl__free(ctx);
  return TL_OK;
}

tl_status tl_context_stats_get(const tl_context *ctx, tl_context_stats *out) {
  if (ctx == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_context_stats_get: ctx (%p) and out (%p) must not be NULL",
                    (const void *)ctx, (void *)out);
  memset(out, 0, sizeof *out);
  out->budget = ctx->budget;
  out->has_pool = ctx->pool != NULL;
  out->owner = tl__arbiter_holder(&ctx->arbiter);
  out->session_open = atomic_load(&ctx->session.state) != TL__SESSION_CLOSED;
  out->root_checked_out = atomic_load(&ctx->root_checked_out);
  out->phase_active = atomic_load(&ctx->phase_active);
  for (int i = 0; i < ctx->budget; i++)
    out->active_lanes += atomic_load(&ctx->lane_reports[i].active);
  out->active_children = atomic_load(&ctx->active_children);
  out->waiting_openers = tl__arbiter_waiting(&ctx->arbiter);
  out->root_scratch_bytes = atomic_load(&ctx->root_reserved);
  out->child_bundles = atomic_load(&ctx->bundle_count);
  return TL_OK;
}
