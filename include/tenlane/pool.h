/* tenlane/pool.h: a fixed set of persistent worker threads.
 *
 * A pool is usually made and owned by a tl_context, but it can be used on its own.
 * Workers are created once, optionally pinned one CPU each, and sleep when idle
 * after a short bounded spin, so an idle pool costs no CPU. Work reaches them in two
 * ways: a broadcast (one call of a function on every worker, joined) and a parallel
 * loop (chunks of an index range shared over the workers through the job queue).
 *
 * A thread that waits on a pool (for a broadcast or a loop to finish) and is itself
 * a worker of another pool keeps running that other pool's work while it waits, so
 * pools that drive each other are never starved. */
#ifndef TENLANE_POOL_H
#define TENLANE_POOL_H

#include <stddef.h>

#include "tenlane/export.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_pool tl_pool;

typedef struct tl_pool_config {
  size_t size;     /* sizeof(tl_pool_config), set by tl_pool_config_init */
  int workers;     /* number of worker threads, >= 1 */
  const int *cpus; /* CPUs to pin to, or NULL for no pinning; borrowed for the call */
  int cpu_count;   /* entries in cpus; workers are spread evenly over them */
  int spin_us;     /* how long an idle worker spins before it sleeps; < 0 for the default;
                      at most TL_SPIN_US_MAX */
} tl_pool_config;

/* The longest idle spin window a pool accepts, in microseconds (10 ms): after its last
 * work a worker burns at most this much CPU before it sleeps. */
#define TL_SPIN_US_MAX 10000

/* Fill `config` with defaults (1 worker, no pinning, the default spin window) and set its
 * size. NULL is ignored. */
TL_API void tl_pool_config_init(tl_pool_config *config);

/* Create a pool and start its workers. On success *out owns the pool; destroy it with
 * tl_pool_destroy. Errors: TL_E_INVALID (NULL, a config size below the first version's (not
 * filled by tl_pool_config_init), workers < 1, a CPU out of range, spin_us
 * above TL_SPIN_US_MAX),
 * TL_E_NOMEM, TL_E_THREAD (a worker could not be started), TL_E_AFFINITY (pinning
 * failed or the mask read back differs). Any thread may call it. */
TL_API tl_status tl_pool_create(const tl_pool_config *config, tl_pool **out);

/* Stop and join the workers and free the pool. NULL is ignored. In the child of a fork()
 * it only frees the memory (the workers do not exist there). Must not be called
 * from one of the pool's own workers or while a broadcast or loop on it is running. */
TL_API void tl_pool_destroy(tl_pool *pool);

/* Number of workers. */
TL_API int tl_pool_workers(const tl_pool *pool);

/* The calling thread's worker index in `pool`, or -1 when it is not one of its workers. */
TL_API int tl_pool_current_index(const tl_pool *pool);

/* The calling thread's own pool when it is a worker of some pool, else NULL. */
TL_API tl_pool *tl_pool_current(void);

typedef void (*tl_pool_fn)(int worker_index, void *arg);

/* Run fn(i, arg) exactly once on each worker i and return after all have returned.
 * Broadcasts to one pool from several threads run one after another.
 * Errors: TL_E_INVALID (NULL), TL_E_TARGET_POOL_CALLER when called from one of the
 * pool's own workers (nothing runs), TL_E_FORKED in the child of a fork() (the pool's
 * workers do not exist there; nothing runs). fn must not call tl_panic without its own tl_catch. */
TL_API tl_status tl_pool_broadcast(tl_pool *pool, tl_pool_fn fn, void *arg);

typedef void (*tl_pool_range_fn)(size_t begin, size_t end, int worker_index, void *arg);

/* Split [0, count) into chunks of at most `grain` indices (grain 0 picks one) and run
 * fn on each chunk on the pool's workers; return once every chunk is done.
 * worker_index is the index of the worker running the chunk, or -1 when the calling
 * thread ran it itself (a worker of this same pool helps with its own loop).
 * Errors: TL_E_INVALID (NULL pool or fn), TL_E_FORKED (in the child of a fork(); nothing
 * runs). count 0 returns TL_OK at once. Any count and grain up to SIZE_MAX is taken: every
 * chunk has begin < end, and the chunks cover [0, count) once each. */
TL_API tl_status tl_pool_parallel_for(tl_pool *pool, size_t count, size_t grain,
                                      tl_pool_range_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
