/* benches/support/floor.c: the spin-then-futex broadcast floor (floor.h). */
#include "floor.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() atomic_signal_fence(memory_order_seq_cst)
#endif

/* Workers spin this long after their last task before they park: far longer than the gap
 * between two broadcasts of a benchmark, so awake workers cost no syscall. */
#define FLOOR_WORKER_SPIN_NS 200000u

static void futex_wait(_Atomic uint32_t *word, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int count) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* The task every broadcast runs: empty, called through a pointer so it is not inlined away. */
static void empty_task(void *arg, int index) {
  (void)arg;
  (void)index;
}

/* --- the spin-then-futex floor ---------------------------------------------------------- */

typedef struct floor_worker_arg {
  floor_pool *pool;
  int index;
} floor_worker_arg;

static floor_worker_arg floor_args[FLOOR_WORKERS];

static void *floor_worker(void *opaque) {
  floor_worker_arg *self = opaque;
  floor_pool *pool = self->pool;
  if (tl_bench_pin_self(pool->cpus[self->index]) != 0) atomic_fetch_add(&pool->pin_failures, 1);
  uint32_t seen = 0;
  for (;;) {
    uint32_t generation;
    uint64_t spin_end = tl_bench_now_ns() + FLOOR_WORKER_SPIN_NS;
    unsigned spins = 0;
    while ((generation = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen) {
      if (++spins % 64 != 0) {
        cpu_relax();
        continue;
      }
      /* Every 64 polls: read the clock (it costs more than a poll) and yield. The yield lets
       * a caller that shares this CPU run as soon as it is woken; without it the caller can
       * wait out this whole spin window, and the p99 of a broadcast becomes the window
       * (measured here: about 210 us p99 without the yield, 40-70 us with it, same median). */
      if (tl_bench_now_ns() > spin_end) {
        /* Announce the sleep before the last check (seq_cst on both sides): either the
         * caller sees parked_workers > 0 and wakes us, or we see its new generation. */
        atomic_fetch_add(&pool->parked_workers, 1);
        while ((generation = atomic_load(&pool->generation)) == seen) {
          futex_wait(&pool->generation, seen);
        }
        atomic_fetch_sub(&pool->parked_workers, 1);
        break;
      }
      sched_yield();
    }
    seen = generation;
    if (atomic_load_explicit(&pool->stop, memory_order_acquire)) break;
    pool->task(pool->task_arg, self->index);
    /* The last one to finish wakes the caller if it parked (same pairing as above). */
    if (atomic_fetch_add(&pool->finished, 1) + 1 == FLOOR_WORKERS &&
        atomic_load(&pool->caller_parked)) {
      futex_wake(&pool->finished, 1);
    }
  }
  return NULL;
}

/* Run pool->task once on every worker; return when all have finished. */
void floor_broadcast(floor_pool *pool) {
  atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
  atomic_fetch_add(&pool->generation, 1); /* seq_cst: publishes `finished = 0` too */
  if (atomic_load(&pool->parked_workers) > 0) futex_wake(&pool->generation, INT_MAX);
  atomic_store(&pool->caller_parked, 1);
  uint32_t finished;
  while ((finished = atomic_load(&pool->finished)) != FLOOR_WORKERS) {
    futex_wait(&pool->finished, finished);
  }
  atomic_store_explicit(&pool->caller_parked, 0, memory_order_relaxed);
}

int floor_start(floor_pool *pool, const int *cpus) {
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->parked_workers, 0);
  atomic_init(&pool->stop, 0);
  atomic_init(&pool->finished, 0);
  atomic_init(&pool->caller_parked, 0);
  atomic_init(&pool->pin_failures, 0);
  pool->task = empty_task;
  pool->task_arg = NULL;
  for (int i = 0; i < FLOOR_WORKERS; i++) {
    pool->cpus[i] = cpus[i];
    floor_args[i].pool = pool;
    floor_args[i].index = i;
    int rc = pthread_create(&pool->threads[i], NULL, floor_worker, &floor_args[i]);
    if (rc != 0) return rc;
  }
  floor_broadcast(pool); /* both workers are up and pinned once it returns */
  return atomic_load(&pool->pin_failures) ? EINVAL : 0;
}

void floor_stop(floor_pool *pool) {
  atomic_store(&pool->stop, 1);
  atomic_fetch_add(&pool->generation, 1);
  futex_wake(&pool->generation, INT_MAX);
  for (int i = 0; i < FLOOR_WORKERS; i++) pthread_join(pool->threads[i], NULL);
}

void floor_run(void *arg) { floor_broadcast(arg); }
