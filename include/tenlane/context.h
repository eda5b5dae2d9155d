/* tenlane/context.h: the engine object.
 *
 * A context owns the thread budget, the optional CPU set, one pool (only when the
 * budget exceeds 1), the admission arbiter and the root resources (a scratch arena
 * and a plan cache) that a held session checks out. Work enters only through a
 * session (tenlane/session.h). */
#ifndef TENLANE_CONTEXT_H
#define TENLANE_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/pool.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_context tl_context;

/* An admission identity. Get fresh ones from tl_owner_new; 0 is never a valid owner. */
typedef uint64_t tl_owner;

/* A process-wide fresh owner identity. Thread-safe, never fails, never returns 0. */
TL_API tl_owner tl_owner_new(void);

/* The largest thread budget a context (and workers a pool, tenlane/pool.h) may have: more
 * is refused with TL_E_INVALID. */
#define TL_THREADS_MAX 4096

typedef struct tl_context_config {
  size_t size;          /* sizeof(tl_context_config), set by tl_context_config_init */
  int threads;          /* thread budget, at most TL_THREADS_MAX (4096); 0 = one per CPU of
                           the CPU set (or of the process) */
  const int *cpus;      /* CPU set, or NULL: nothing is pinned. Borrowed for the call. */
  int cpu_count;        /* entries in cpus */
  size_t scratch_limit; /* bytes one scratch arena may hold (TL_E_SCRATCH_LIMIT beyond it);
                           0 = no limit: only the allocator limits scratch (TL_E_NOMEM) */
  int spin_us;          /* idle spin window of the pool's workers; < 0 = the default;
                           at most TL_SPIN_US_MAX (10 ms) */
} tl_context_config;

/* The most contexts one thread may execute for at once: hold their sessions, or run their
 * lanes or ticket entries. One more is refused with TL_E_LIMIT. */
#define TL_CONTEXTS_PER_THREAD_MAX 8

/* Fill `config` with the defaults (budget = CPUs available, no CPU set, default limits) and
 * set its size. NULL is ignored. */
TL_API void tl_context_config_init(tl_context_config *config);

/* The context's serial: a process-wide number, never 0 and never given to another context
 * in this process (an address can be: a context made after one was destroyed may get its
 * address back). 0 for NULL. Any thread. */
TL_API uint64_t tl_context_serial(const tl_context *ctx);

/* Create a context. *out owns it; destroy it with tl_context_destroy. With a budget of
 * 1 no pool and no thread is made. Errors: TL_E_INVALID (NULL, a config size below the first
 * version's (not filled by tl_context_config_init), a budget below 0 or above
 * TL_THREADS_MAX, a CPU
 * the machine does not have, spin_us above TL_SPIN_US_MAX), TL_E_NOMEM, TL_E_THREAD,
 * TL_E_AFFINITY. Any thread. */
TL_API tl_status tl_context_create(const tl_context_config *config, tl_context **out);

/* Destroy a context with no open session. NULL is ignored (TL_OK). Returns TL_E_BUSY
 * and destroys nothing while a session is open or an opener waits; TL_E_TARGET_POOL_CALLER
 * from one of its own workers; TL_E_OWNER_DEAD once, destroying nothing, when a holder's
 * thread ended holding the session and no opener was told yet (call it again). In the
 * child of a fork() it frees the context's memory without joining the workers (they do
 * not exist there) or taking a lock, and returns TL_OK whatever was open. Any thread. */
TL_API tl_status tl_context_destroy(tl_context *ctx);

/* The thread budget (>= 1): the number of lanes a phase runs. */
TL_API int tl_context_budget(const tl_context *ctx);

/* The context's pool, borrowed (valid until the context is destroyed), or NULL when
 * the budget is 1. Work may be run on it directly; it is the pool phases run on. */
TL_API tl_pool *tl_context_pool(tl_context *ctx);

typedef struct tl_context_stats {
  int budget;                /* thread budget */
  int has_pool;              /* 1 when a pool exists (budget > 1) */
  int session_open;          /* 1 while a root session is held */
  tl_owner owner;            /* the holder, 0 when none */
  int root_checked_out;      /* 1 while the root resources are checked out by a session */
  int phase_active;          /* 1 while a phase runs on the held session */
  int active_lanes;          /* lanes inside a child surface right now */
  int active_children;       /* ticket entries inside a child surface right now */
  int waiting_openers;       /* openers queued for admission */
  size_t root_scratch_bytes; /* bytes the root scratch arena holds (reserved) */
  size_t child_bundles;      /* child resource bundles made so far (reused across entries) */
} tl_context_stats;

/* A snapshot of the context's state. Never blocks, from any thread, also while a
 * session or phase is running. Errors: TL_E_INVALID (NULL). */
TL_API tl_status tl_context_stats_get(const tl_context *ctx, tl_context_stats *out);

#ifdef __cplusplus
}
#endif
#endif
