/* benches/bench_pool.c: what one empty fork-join costs on two CPUs, and the anchors a pool
 * broadcast is judged against.
 *
 * Anchors (no tenlane code):
 *   - an empty OpenMP parallel region on 2 threads (libgomp under gcc; under clang the
 *     row says LLVM libomp, the runtime clang's -fopenmp links); the caller is a team member
 *     pinned to the first CPU, the other team thread pins itself to the second;
 *   - a hand-written spin-then-futex broadcast, the floor for a pool driven from outside:
 *     the caller wakes 2 workers pinned one per CPU and waits until both ran an empty
 *     function. Workers spin for a bounded window (yielding now and then) before they park
 *     on a futex; the caller parks at once, so it gives its core up to the worker it shares
 *     it with (3 threads on 2 cores, the layout the tenlane pool is measured in). Tried and
 *     dropped here: a caller that spins or yields before it parks (median 43-210 us).
 * Contestants are alternated in rounds, and the cache-line round trip is probed first.
 * Invariant: every thread this file starts is pinned to one CPU and joined before exit. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

enum { FLOOR_WORKERS = 2 };

typedef struct floor_pool {
  /* Written by the caller once per broadcast, read by every worker: its own cache line. */
  _Alignas(64) _Atomic uint32_t generation;
  _Atomic uint32_t parked_workers; /* workers asleep on `generation` */
  _Atomic int stop;
  void (*task)(void *arg, int index);
  void *task_arg;
  /* Written by every worker once per broadcast, read by the caller: a line of its own so the
   * workers' increments do not steal the line the workers poll. */
  _Alignas(64) _Atomic uint32_t finished;
  _Atomic uint32_t caller_parked; /* 1 while the caller sleeps on `finished` */
  _Alignas(64) int cpus[FLOOR_WORKERS];
  pthread_t threads[FLOOR_WORKERS];
  _Atomic int pin_failures;
} floor_pool;

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
static void floor_broadcast(floor_pool *pool) {
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

static int floor_start(floor_pool *pool, const int *cpus) {
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

static void floor_stop(floor_pool *pool) {
  atomic_store(&pool->stop, 1);
  atomic_fetch_add(&pool->generation, 1);
  futex_wake(&pool->generation, INT_MAX);
  for (int i = 0; i < FLOOR_WORKERS; i++) pthread_join(pool->threads[i], NULL);
}

static void run_floor(void *arg) { floor_broadcast(arg); }

/* --- the OpenMP region ------------------------------------------------------------------ */

#ifdef __clang__
#define OMP_ROW "empty omp parallel, 2 threads (LLVM libomp)"
#else
#define OMP_ROW "empty omp parallel, 2 threads (libgomp)"
#endif

static int omp_cpus[2];
static _Atomic int omp_pin_failures;

/* The first region pins each team thread to its CPU; the runtime keeps the same threads
 * for later regions of the same size. */
static int omp_pin_team(void) {
#pragma omp parallel num_threads(2)
  {
    if (tl_bench_pin_self(omp_cpus[omp_get_thread_num()]) != 0) {
      atomic_fetch_add(&omp_pin_failures, 1);
    }
  }
  return atomic_load(&omp_pin_failures) ? EINVAL : 0;
}

static void (*volatile omp_task)(void *, int) = empty_task;

static void run_omp(void *arg) {
  (void)arg;
#pragma omp parallel num_threads(2)
  omp_task(NULL, omp_get_thread_num());
}

/* --- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  tl_bench_options opt;
  if (tl_bench_options_parse(argc, argv, &opt) != 0) return 2;
  int cpus[2];
  int cpu_count = tl_bench_cpus(cpus, 2);
  if (cpu_count < 2) {
    fprintf(stderr, "bench_pool: needs 2 CPUs in the affinity set, has %d\n", cpu_count);
    return 1;
  }

  tl_bench_stats round_trip = tl_bench_round_trip(cpus[0], cpus[1], opt.rounds * 200);
  if (round_trip.count == 0) {
    fprintf(stderr, "bench_pool: the round-trip probe could not pin to CPUs %d and %d\n", cpus[0],
            cpus[1]);
    return 1;
  }
  /* The caller is pinned to the first CPU for every contestant: a team member for OpenMP, an
   * outside thread sharing a core with worker 0 for the floor. */
  if (tl_bench_pin_self(cpus[0]) != 0) {
    fprintf(stderr, "bench_pool: cannot pin the caller to CPU %d\n", cpus[0]);
    return 1;
  }
  omp_cpus[0] = cpus[0];
  omp_cpus[1] = cpus[1];
  if (omp_pin_team() != 0) {
    fprintf(stderr, "bench_pool: cannot pin the OpenMP team to CPUs %d, %d\n", cpus[0], cpus[1]);
    return 1;
  }
  static floor_pool floor;
  int rc = floor_start(&floor, cpus);
  if (rc != 0) {
    fprintf(stderr, "bench_pool: the floor's workers could not start or pin (error %d)\n", rc);
    return 1;
  }

  tl_bench_contestant contestants[] = {
      {OMP_ROW, run_omp, NULL, {0, 0, 0}},
      {"spin-then-futex floor, outside caller -> 2 workers", run_floor, &floor, {0, 0, 0}},
  };
  int count = (int)(sizeof contestants / sizeof contestants[0]);
  rc = tl_bench_alternate(contestants, count, &opt);
  floor_stop(&floor);
  if (rc != 0) {
    fprintf(stderr, "bench_pool: out of memory for samples\n");
    return 1;
  }

  tl_bench_table table;
  tl_bench_table_init(&table, "pool", round_trip, &opt);
  tl_bench_table_add(&table, "cache-line round trip (probe)", round_trip, NULL, NULL);
  tl_bench_table_add(&table, contestants[0].name, contestants[0].stats, NULL, NULL);
  tl_bench_table_add(&table, contestants[1].name, contestants[1].stats, contestants[0].name,
                     &contestants[0].stats);
  tl_bench_table_print(&table, stdout);
  return 0;
}
