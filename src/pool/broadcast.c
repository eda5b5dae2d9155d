/* src/pool/broadcast.c: one call on every worker, joined. The driver publishes the call by
 * bumping the generation and waits for the remaining-count to reach zero; the worker that
 * brings it to zero wakes the driver. No lock and no system call is on this path while the
 * workers are awake. */
#include <assert.h>
#include <sched.h>

#include "pool_int.h"

typedef struct broadcast_wait {
  tl_pool *pool;
} broadcast_wait;

static int broadcast_done(void *arg) {
  broadcast_wait *wait = arg;
  return atomic_load(&wait->pool->bc_remaining) == 0;
}

static int broadcast_slot_free(void *arg) {
  tl_pool *pool = arg;
  int expected = 0;
  return atomic_compare_exchange_strong(&pool->bc_busy, &expected, 1);
}

tl_status tl_pool_broadcast(tl_pool *pool, tl_pool_fn fn, void *arg) {
  if (pool == NULL || fn == NULL)
    return tl__fail(TL_E_INVALID, "tl_pool_broadcast: pool (%p) and fn must not be NULL",
                    (void *)pool);
  tl_status forked = tl__pool_refuse_forked(pool, "tl_pool_broadcast");
  if (forked != TL_OK) return forked;
  if (tl_pool_current_index(pool) >= 0)
    return tl__fail(TL_E_TARGET_POOL_CALLER,
                    "tl_pool_broadcast: called from worker %d of the same pool, which would wait "
                    "on itself",
                    tl_pool_current_index(pool));
  /* One broadcast at a time; a second driver yields until the slot is free (it runs no
   * work meanwhile, its own pool's included: see docs/design/pool.md, invariant 4). */
  if (!broadcast_slot_free(pool)) {
    while (!broadcast_slot_free(pool)) sched_yield();
  }
  pool->bc_fn = fn;
  pool->bc_arg = arg;
  pool->bc_driver = tl__waiter_self();
  atomic_store_explicit(&pool->bc_remaining, pool->workers, memory_order_relaxed);
  /* Publishes the fields above to every worker that observes the new generation. */
  atomic_fetch_add_explicit(&pool->bc_generation, 1, memory_order_seq_cst);
  tl__pool_wake_all(pool);
  broadcast_wait wait = {pool};
  tl__pool_wait(pool, broadcast_done, &wait);
  assert(atomic_load(&pool->bc_busy) == 1 && "one broadcast at a time");
  atomic_store_explicit(&pool->bc_busy, 0, memory_order_release);
  return TL_OK;
}

/* Worker side: run the broadcast this worker has not seen yet. Returns 1 if it ran one. */
static int run_broadcast(tl_pool *pool, tl__worker *self) {
  uint64_t generation = atomic_load_explicit(&pool->bc_generation, memory_order_acquire);
  if (generation == atomic_load_explicit(&self->bc_seen, memory_order_relaxed)) return 0;
  atomic_store_explicit(&self->bc_seen, generation, memory_order_relaxed);
  tl_pool_fn fn = pool->bc_fn;
  void *arg = pool->bc_arg;
  tl__waiter *driver = pool->bc_driver;
  fn(self->index, arg);
  if (atomic_fetch_sub_explicit(&pool->bc_remaining, 1, memory_order_acq_rel) == 1) {
    tl__waiter_wake(driver);
  }
  return 1;
}

int tl__pool_has_work(tl_pool *pool, tl__worker *self) {
  return atomic_load_explicit(&pool->bc_generation, memory_order_acquire) !=
             atomic_load_explicit(&self->bc_seen, memory_order_relaxed) ||
         atomic_load_explicit(&pool->jobs_queued, memory_order_acquire) > 0 ||
         atomic_load_explicit(&pool->stop, memory_order_acquire);
}

int tl__pool_run_job_chunk(tl_pool *pool, int worker_index);

int tl__pool_run_one(tl_pool *pool, tl__worker *self) {
  if (run_broadcast(pool, self)) return 1;
  return tl__pool_run_job_chunk(pool, self->index);
}
