/* src/pool/pool.c: creating, pinning and stopping workers, and the worker's loop.
 * A worker runs its pool's work while there is any, spins for the pool's window when
 * there is none, then sleeps on its waiter until a broadcast, a job or the stop wakes it. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "pool_int.h"

static _Thread_local tl__worker *current_worker;

tl__worker *tl__worker_self(void) { return current_worker; }

tl_pool *tl_pool_current(void) { return current_worker ? current_worker->pool : NULL; }

int tl_pool_current_index(const tl_pool *pool) {
  tl__worker *self = current_worker;
  return (self != NULL && self->pool == pool) ? self->index : -1;
}

int tl_pool_workers(const tl_pool *pool) { return pool ? pool->workers : 0; }

void tl_pool_config_init(tl_pool_config *config) {
  if (config == NULL) return;
  memset(config, 0, sizeof *config);
  config->size = sizeof *config;
  config->workers = 1;
  config->spin_us = -1;
}

/* Visit every worker, those pinned to CPU `here` last (here < 0: in index order). */
void tl__pool_wake_each(tl_pool *pool, int here, void (*wake)(tl__worker *worker, void *arg),
                        void *arg) {
  for (int local = 0; local < 2; local++) {
    for (int i = 0; i < pool->workers; i++) {
      tl__worker *worker = &pool->worker[i];
      if ((here >= 0 && worker->cpu == here) == local) wake(worker, arg);
    }
  }
}

static void wake_worker(tl__worker *worker, void *arg) {
  (void)arg;
  tl__waiter *waiter = atomic_load(&worker->waiter);
  if (waiter != NULL) tl__waiter_wake(waiter);
}

/* The workers pinned to the caller's own CPU are woken last. Such a worker may preempt the
 * caller as the wake call returns (the scheduler favours a thread that slept), and the
 * caller gets its CPU back only after a scheduler slice: on a 2-CPU machine the other
 * CPU's worker then started 1-6 ms late (measured), against 20-150 us when it is woken
 * first. */
void tl__pool_wake_all(tl_pool *pool) {
  tl__pool_wake_each(pool, sched_getcpu(), wake_worker, NULL);
}

/* Pin the calling thread to `cpu` and check the mask reads back as exactly {cpu}. */
static tl_status pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) return TL_E_AFFINITY;
  cpu_set_t check;
  CPU_ZERO(&check);
  rc = pthread_getaffinity_np(pthread_self(), sizeof check, &check);
  if (rc != 0 || !CPU_EQUAL(&set, &check)) return TL_E_AFFINITY;
  return TL_OK;
}

/* An idle worker waits for work in its own pool (or the stop flag, which wakes it). */
static int poll_idle(void *arg, int may_run) {
  (void)may_run;
  tl__worker *self = arg;
  return tl__pool_has_work(self->pool, self) ? TL__POLL_READY : TL__POLL_NOTHING;
}

static void *worker_main(void *arg) {
  tl__worker *self = arg;
  tl_pool *pool = self->pool;
  current_worker = self;
  tl__waiter *waiter = tl__waiter_self();
  atomic_store(&self->waiter, waiter);
  if (self->cpu >= 0) {
    tl_status status = pin_self(self->cpu);
    if (status != TL_OK) {
      int expected = TL_OK;
      atomic_compare_exchange_strong(&pool->start_failed, &expected, (int)status);
    }
  }
  atomic_fetch_add(&pool->started, 1);

  for (;;) {
    if (tl__pool_run_one(pool, self)) continue;
    if (atomic_load_explicit(&pool->stop, memory_order_acquire)) break;
    /* Idle: spin for the window, then sleep until woken. */
    tl__spin_then_sleep(pool->spin_ns, 63u, poll_idle, self);
  }
  current_worker = NULL;
  return NULL;
}

static void pool_free(tl_pool *pool) {
  pthread_mutex_destroy(&pool->job_lock);
  tl__free(pool->worker);
  tl__free(pool);
}

/* Stop and join the first `count` workers. */
static void pool_stop(tl_pool *pool, int count) {
  atomic_store_explicit(&pool->stop, 1, memory_order_release);
  tl__pool_wake_all(pool);
  /* A worker may not have published its waiter yet: keep waking until it has stopped. */
  for (int i = 0; i < count; i++) {
    for (;;) {
      tl__waiter *waiter = atomic_load(&pool->worker[i].waiter);
      if (waiter != NULL) {
        tl__waiter_wake(waiter);
        break;
      }
      sched_yield();
    }
    pthread_join(pool->worker[i].thread, NULL);
  }
}

tl_status tl_pool_create(const tl_pool_config *config, tl_pool **out) {
  if (config == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_pool_create: config (%p) and out (%p) must not be NULL",
                    (const void *)config, (void *)out);
  tl_status size_status = tl__check_struct_size("tl_pool_create", "tl_pool_config", config->size,
                                                TL__SIZE_THROUGH(tl_pool_config, spin_us));
  if (size_status != TL_OK) return size_status;
  if (config->workers < 1 || config->workers > 4096)
    return tl__fail(TL_E_INVALID, "tl_pool_create: workers is %d, expected 1..4096",
                    config->workers);
  if (config->cpus != NULL && config->cpu_count < 1)
    return tl__fail(TL_E_INVALID, "tl_pool_create: cpus given with cpu_count %d (expected >= 1)",
                    config->cpu_count);
  if (config->cpus != NULL) {
    for (int i = 0; i < config->cpu_count; i++) {
      if (config->cpus[i] < 0 || config->cpus[i] >= CPU_SETSIZE)
        return tl__fail(TL_E_INVALID, "tl_pool_create: cpus[%d] is %d, outside 0..%d", i,
                        config->cpus[i], CPU_SETSIZE - 1);
    }
  }
  if (config->spin_us > TL_SPIN_US_MAX)
    return tl__fail(TL_E_INVALID, "tl_pool_create: spin_us is %d, above TL_SPIN_US_MAX (%d)",
                    config->spin_us, TL_SPIN_US_MAX);
  tl_pool *pool = tl__calloc(1, sizeof *pool, TL__CACHE_LINE);
  if (pool == NULL) return tl__fail(TL_E_NOMEM, "tl_pool_create: no memory for the pool");
  pool->worker = tl__calloc((size_t)config->workers, sizeof *pool->worker, TL__CACHE_LINE);
  if (pool->worker == NULL) {
    tl__free(pool);
    return tl__fail(TL_E_NOMEM, "tl_pool_create: no memory for %d workers", config->workers);
  }
  pool->workers = config->workers;
  pool->fork_epoch = tl__fork_watch();
  int spin_us = config->spin_us < 0 ? TL__POOL_DEFAULT_SPIN_US : config->spin_us;
  pool->spin_ns = (uint64_t)spin_us * 1000u;
  /* An outside driver that shares a core with a worker (as many workers as CPUs) should
   * sleep at once: the worker it waits for needs that core (measured: parking at once is
   * about 0.3 us faster per broadcast on 2 CPUs with 2 workers). With a core to spare it
   * spins a little first, since waking a sleeping thread costs far more than that. */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  pool->driver_spin_ns = (online > 0 && pool->workers >= online) ? 0 : 20000u;
  pthread_mutex_init(&pool->job_lock, NULL);
  atomic_init(&pool->start_failed, TL_OK);

  int created = 0;
  for (int i = 0; i < pool->workers; i++) {
    tl__worker *worker = &pool->worker[i];
    worker->pool = pool;
    worker->index = i;
    worker->cpu = -1;
    if (config->cpus != NULL) {
      /* Spread evenly: worker i of n over the set's c CPUs, wrapping when n > c. */
      int slot = config->workers <= config->cpu_count
                     ? (int)(((long)i * config->cpu_count) / config->workers)
                     : i % config->cpu_count;
      worker->cpu = config->cpus[slot];
    }
    int rc = pthread_create(&worker->thread, NULL, worker_main, worker);
    if (rc != 0) {
      pool_stop(pool, created);
      pool_free(pool);
      return tl__fail(TL_E_THREAD, "tl_pool_create: starting worker %d of %d failed: %s", i,
                      config->workers, strerror(rc));
    }
    created++;
  }
  while (atomic_load(&pool->started) < pool->workers) sched_yield();
  int failed = atomic_load(&pool->start_failed);
  if (failed != TL_OK) {
    pool_stop(pool, created);
    pool_free(pool);
    return tl__fail((tl_status)failed,
                    "tl_pool_create: a worker could not be pinned to its CPU (or its mask read "
                    "back differently)");
  }
  *out = pool;
  return TL_OK;
}

tl_status tl__pool_refuse_forked(const tl_pool *pool, const char *call) {
  if (!tl__forked(pool->fork_epoch)) return TL_OK;
  return tl__fail(TL_E_FORKED,
                  "%s: the pool was created before fork(); this process has none of its "
                  "workers, so only tl_pool_destroy may be called on it here",
                  call);
}

void tl_pool_destroy(tl_pool *pool) {
  if (pool == NULL) return;
  if (tl__forked(pool->fork_epoch)) {
    /* The child of a fork(): no worker to stop or join, and a lock may have been copied
     * held; the memory is freed, nothing else is touched. */
    tl__free(pool->worker);
    tl__free(pool);
    return;
  }
  pool_stop(pool, pool->workers);
  pool_free(pool);
}
