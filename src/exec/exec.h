/* src/exec/exec.h: what a numerical route may ask of the surface it runs on.
 *
 * The execution layer sits below the context: a surface knows its resources (arena and
 * plan cache), its pool, its thread and the gate its holder keeps, and nothing of the
 * context, the session or the phase that made it. Those layers set a surface up through
 * tl__exec_init and keep the gate and the message buffers the surface points at.
 *
 * Every route is written against this interface and nothing else of the execution
 * layer: it begins and ends its call (which checks the thread, parks root calls during a
 * phase and records messages), takes scratch from the surface's arena, finds plans in its
 * cache, and splits work with tl__exec_parallel_for, which uses the pool from a root
 * surface and the calling thread alone from a lane, ticket or inline surface. */
#ifndef TL_EXEC_EXEC_H
#define TL_EXEC_EXEC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "arena.h"
#include "plan_cache.h"

/* The resources a surface works with: checked out by the root session, or private to a
 * child (a lane or a ticket entry), reused across entries through the context. */
typedef struct tl__resources {
  tl__arena arena;
  tl__plan_cache plans;
  struct tl__resources *next_free; /* the context's free list of child bundles */
  struct tl_exec *surface;         /* a ticket entry's surface over this bundle (made with the
                                      bundle, outlives the entry: a kept pointer stays
                                      checkable until the context is destroyed) */
} tl__resources;

/* The thread token of a retired surface: its lane or ticket callback returned. Routes on it
 * get TL_E_STALE. No thread has this token. */
#define TL__EXEC_RETIRED UINT64_MAX

/* The gate a root surface's holder keeps (the session's state): a route runs only while it
 * is OPEN; PARKED while the session's phase runs, CLOSED after close. */
typedef enum tl__gate { TL__GATE_CLOSED = 0, TL__GATE_OPEN = 1, TL__GATE_PARKED = 2 } tl__gate;

struct tl_exec {
  tl_exec_kind kind;
  const atomic_int *gate;      /* root: the holder's tl__gate; NULL for a child surface */
  char *holder_message;        /* root: the session's message buffer, else NULL */
  atomic_size_t *reserved_out; /* root: where the arena's size is published, else NULL */
  tl__resources *resources;    /* scratch and plans of this surface */
  tl_pool *pool;               /* pool routes split over (root with a pool), else NULL */
  int team;                    /* widest team a route uses: pool size or 1 */
  int team_request;            /* tl_exec_set_team: 0 = default */
  int depth;                   /* nesting depth of route calls on this surface */
  tl__arena_mark marks[16];    /* arena position at each tl__exec_begin, restored at its end */
  tl__arena_mark item_floor;   /* where a map item's scratch starts (above lane scratch) */
  tl_order order;              /* the order of fresh results (tl_exec_set_order) */
  const atomic_int *cancel;    /* the lane's run flag, or NULL */
  atomic_int cancel_request;   /* tl_exec_cancel's flag (any thread, signal handlers too) */
  struct tl_exec *outer;       /* the thread's current surface before this one's outermost
                                  call began (tl__exec_current), restored at its end */
  uint64_t thread_token;       /* the thread allowed to use it; TL__EXEC_RETIRED after its
                                  lane or ticket callback returned */
  const char *route;           /* the public entry point of the outermost call in progress */
  char message[TL_MESSAGE_CAPACITY];
};

/* Start a route call named `route` on `exec`: checks exec is non-NULL, is used on its own
 * thread and is not parked by a phase, and remembers the arena position. Calls nest (a
 * route may call other routes on the same surface, up to 16 deep). Returns TL_OK or the
 * refusal (with a message naming `route`). Pair every TL_OK with tl__exec_end, which
 * gives back the scratch taken since the matching begin. */
tl_status tl__exec_begin(tl_exec *exec, const char *route);
/* End the call started by tl__exec_begin; returns `status`, copying the thread's message
 * to the surface when status is not TL_OK. At the outermost level a message that does not
 * already begin with the route's name gets it in front, so every message a user reads
 * starts with the entry point the user called. */
tl_status tl__exec_end(tl_exec *exec, tl_status status);

/* Set up `exec` as a surface of `kind` on the calling thread, over `resources`, splitting
 * over `pool` (NULL: the calling thread alone) with `team` threads; cancel is the lane's
 * run flag or NULL. A root surface's holder then sets gate, holder_message and
 * reserved_out. */
void tl__exec_init(tl_exec *exec, tl_exec_kind kind, tl__resources *resources, tl_pool *pool,
                   int team, const atomic_int *cancel);

/* The team the current call may use. TL_E_UNAVAILABLE when the caller asked (through
 * tl_exec_set_team) for more than one thread on a surface that runs on one thread. */
tl_status tl__exec_team(tl_exec *exec, int *team);

/* Run fn over [0, count) in chunks of at most `grain` (0: chosen here): over the pool from
 * a root surface with a pool, inline on the calling thread otherwise. fn's worker index is
 * the pool worker running the chunk, or -1 for the calling thread. The arena is not
 * thread-safe: take all scratch before the loop on the calling thread, and give each
 * thread its own slice indexed by worker_index + 1 (tl_exec_team(exec) + 1 slices). */
tl_status tl__exec_parallel_for(tl_exec *exec, size_t count, size_t grain, tl_pool_range_fn fn,
                                void *arg);

/* A fresh owned result for the current call, zeroed, in the surface's order. */
tl_status tl__exec_fresh(const tl_exec *exec, tl_dtype dtype, int rank, const int64_t *shape,
                         tl_tensor *out);

/* End of one tl_map item on a lane surface: its TL_SCRATCH_ITEM memory is reclaimed (the
 * lane's own TL_SCRATCH_LANE memory stays). */
void tl__exec_item_end(tl_exec *exec);

/* How many per-thread slices a route that splits with tl__exec_parallel_for needs: one for
 * the calling thread (slot 0) and one per pool worker (slot worker_index + 1). */
static inline size_t tl__exec_thread_slots(const tl_exec *exec) {
  return 1 + (exec->pool != NULL ? (size_t)tl_pool_workers(exec->pool) : 0);
}

/* Run fn over [0, count) in chunks of `grain` (>= 1), checking the lane's cancellation before
 * every chunk: once seen, the chunks not started are skipped and the call returns
 * TL_E_CANCELLED ("cancelled while <what> (output partly written)"). parallel != 0 splits
 * the chunks with tl__exec_parallel_for; else they run in order on the calling thread
 * (worker index -1). The one cancel-aware chunk loop every route uses. */
tl_status tl__exec_run_chunks(tl_exec *exec, int parallel, size_t count, size_t grain,
                              tl_pool_range_fn fn, void *arg, const char *what);

/* 1 when the surface belongs to a lane whose run has been cancelled, or tl_exec_cancel was
 * called on it and not cleared since. Routes check it between blocks and stop with
 * TL_E_CANCELLED (writing nothing when they can). Any thread (pool workers read it). */
static inline int tl__exec_cancelled(const tl_exec *exec) {
  return atomic_load_explicit(&exec->cancel_request, memory_order_relaxed) ||
         (exec->cancel != NULL && atomic_load_explicit(exec->cancel, memory_order_relaxed));
}

/* The surface whose outermost route call runs on the calling thread, or NULL. Code that a
 * route reaches without a surface argument (the BLAS entries LAPACK calls back) asks it
 * whether to stop early. */
tl_exec *tl__exec_current(void);

/* 1 when the calling thread runs a route call whose surface was cancelled. */
static inline int tl__exec_current_cancelled(void) {
  const tl_exec *exec = tl__exec_current();
  return exec != NULL && tl__exec_cancelled(exec);
}

static inline tl__plan_cache *tl__exec_plans(tl_exec *exec) { return &exec->resources->plans; }

/* Scratch for the current call; reclaimed at tl__exec_end (a route may also reset to an
 * earlier mark itself). Errors: TL_E_SCRATCH_LIMIT, TL_E_NOMEM, with a message. */
tl_status tl__exec_scratch(tl_exec *exec, size_t bytes, size_t align, void **out);

#endif
