/* src/pool/pool_int.h: the pool's insides, shared by the files of src/pool only (and by
 * tests that look inside). Other layers use tenlane/pool.h and tl__pool_wait.
 *
 * Invariants:
 * - A broadcast is published by bumping bc_generation after its fields are written; a
 *   worker runs it once when its own bc_seen differs, then decrements bc_remaining. The
 *   next broadcast starts only after bc_remaining reached 0, so no worker can miss one.
 * - Jobs (parallel loops) sit in a FIFO under job_lock. Chunks are claimed under the lock;
 *   the submitter frees nothing until every chunk reported done, and a worker touches the
 *   job only before its done-increment.
 * - A worker with nothing to do spins for spin_ns, then sleeps on its waiter. Anyone who
 *   gives it work wakes it through tl__waiter_wake. */
#ifndef TL_POOL_INT_H
#define TL_POOL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "tenlane/pool.h"
#include "waiter.h"

typedef struct tl__job {
  struct tl__job *next;
  tl_pool_range_fn fn;
  void *arg;
  size_t count;
  size_t grain;
  size_t chunks;
  size_t next_chunk; /* under the pool's job_lock */
  atomic_size_t done_chunks;
  tl__waiter *submitter;
} tl__job;

typedef struct tl__worker {
  tl_pool *pool;
  int index;
  int cpu; /* pinned CPU, or -1 */
  pthread_t thread;
  _Atomic(tl__waiter *) waiter; /* set by the worker when it starts */
  _Alignas(TL__CACHE_LINE) atomic_uint_fast64_t bc_seen;
} tl__worker;

struct tl_pool {
  int workers;
  unsigned fork_epoch;     /* the fork epoch it was made in (base/fork.c) */
  uint64_t spin_ns;        /* idle spin window of the workers */
  uint64_t driver_spin_ns; /* how long an outside thread waiting on this pool spins first */
  tl__worker *worker;

  /* Broadcast: written by the one driver that holds bc_busy. */
  atomic_int bc_busy;
  tl_pool_fn bc_fn;
  void *bc_arg;
  tl__waiter *bc_driver;
  _Alignas(TL__CACHE_LINE) atomic_uint_fast64_t bc_generation;
  _Alignas(TL__CACHE_LINE) atomic_int bc_remaining;

  /* Job queue. */
  _Alignas(TL__CACHE_LINE) pthread_mutex_t job_lock;
  tl__job *job_head;
  tl__job *job_tail;
  _Alignas(TL__CACHE_LINE) atomic_int jobs_queued;

  /* Start-up and shut-down. */
  atomic_int stop;
  atomic_int started;
  atomic_int start_failed; /* a tl_status of the first worker that failed to start */
};

/* The worker record of the calling thread, or NULL off every pool. */
tl__worker *tl__worker_self(void);

/* Run one pending piece of this pool's work for worker `self` (its broadcast, or one chunk
 * of the oldest job). Returns 1 if something ran. */
int tl__pool_run_one(tl_pool *pool, tl__worker *self);

/* 1 when `self` has something to run in its pool (or the pool stops). */
int tl__pool_has_work(tl_pool *pool, tl__worker *self);

/* Wake every worker of the pool that sleeps; those pinned to the caller's CPU last. */
void tl__pool_wake_all(tl_pool *pool);

/* The order tl__pool_wake_all uses: wake(worker, arg) for every worker, the ones pinned to
 * CPU `here` after all others (here < 0: index order). */
void tl__pool_wake_each(tl_pool *pool, int here, void (*wake)(tl__worker *worker, void *arg),
                        void *arg);

/* Wait on the calling thread until done(arg) is non-zero, for work running on `target`.
 * While waiting, a thread that is a worker of some pool runs that pool's work; an outside
 * thread spins for target's driver window, then sleeps, giving its core up. Someone must
 * tl__waiter_wake this thread's waiter after making done() true. */
void tl__pool_wait(tl_pool *target, int (*done)(void *arg), void *arg);

/* What a poll saw: nothing, some work done (the spin window starts again), or the awaited
 * state. poll(arg, 0) (just before sleeping) must not run work. */
enum { TL__POLL_NOTHING = 0, TL__POLL_PROGRESS = 1, TL__POLL_READY = 2 };
typedef int (*tl__poll_fn)(void *arg, int may_run);

/* Spin up to spin_ns polling (yielding the CPU every yield_mask + 1 spins once the window
 * has passed the check), then sleep on the calling thread's waiter unless a last poll is
 * READY. Returns after READY or one wake-up: callers loop until their condition holds. */
void tl__spin_then_sleep(uint64_t spin_ns, unsigned yield_mask, tl__poll_fn poll, void *arg);

/* TL_E_FORKED (message beginning with `call`) when the pool was made before a fork() and
 * this is the child, whose copy of the pool has no workers; TL_OK otherwise. */
tl_status tl__pool_refuse_forked(const tl_pool *pool, const char *call);

/* Default idle spin window of workers. */
#define TL__POOL_DEFAULT_SPIN_US 200

#endif
