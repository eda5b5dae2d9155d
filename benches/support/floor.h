/* benches/support/floor.h: the hand-written spin-then-futex broadcast, the floor a pool
 * driven from outside is judged against: an outside caller wakes FLOOR_WORKERS workers, each
 * pinned to one CPU, and waits (parked at once) until all of them ran an empty function.
 * Workers spin for a bounded window, yielding every 64 polls, before they park on a futex.
 * It uses no tenlane code. */
#ifndef TL_BENCH_FLOOR_H
#define TL_BENCH_FLOOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

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

/* Start the workers pinned to cpus[0..FLOOR_WORKERS). Returns 0 or an errno value. */
int floor_start(floor_pool *pool, const int *cpus);
/* Run the (empty) task once on every worker; return when all have finished. */
void floor_broadcast(floor_pool *pool);
/* Stop and join the workers. */
void floor_stop(floor_pool *pool);
/* floor_broadcast as a tl_bench contestant (arg: the pool). */
void floor_run(void *arg);

#endif
