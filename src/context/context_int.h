/* src/context/context_int.h: the context's insides, for the layers that work on it
 * (admission, session, phase). Users see only tenlane/context.h.
 *
 * Invariants:
 * - The pool exists exactly when budget > 1, and has budget workers.
 * - The root resources are checked out by at most one session (the holder's), flagged by
 *   root_checked_out; child bundles are each used by one child surface at a time.
 * - The session object lives inside the context (one holder at a time), so a session
 *   pointer stays valid, and checkable, until the context is destroyed. */
#ifndef TL_CONTEXT_INT_H
#define TL_CONTEXT_INT_H

#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "admission/arbiter.h"
#include "base/unwind.h"
#include "session/exec.h"
#include "tenlane/context.h"
#include "tenlane/phase.h"

typedef enum tl__session_state {
  TL__SESSION_CLOSED = 0,
  TL__SESSION_IDLE = 1,
  TL__SESSION_PHASE = 2
} tl__session_state;

struct tl_session {
  struct tl_context *ctx;
  tl_owner owner;
  uint64_t generation;
  unsigned long thread_token;
  atomic_int state; /* tl__session_state; read by stats */
  tl_exec exec;     /* the root surface */
  int affinity_saved;
  cpu_set_t saved_mask;
  tl__unwind_node unwind; /* closes the session if a panic passes over it */
  char message[TL_MESSAGE_CAPACITY];
};

/* One lane's report, written by its worker, read by the driver after the join. */
typedef struct tl__lane_report {
  atomic_int active;        /* 1 while the lane is inside its child surface (read by stats) */
  int entered;              /* opened its child surface */
  int skipped;              /* saw cancellation before entry */
  int code;                 /* the callback's value */
  tl_status session_status; /* entry or cleanup failure */
  int panicked;
  char message[TL_MESSAGE_CAPACITY];
} tl__lane_report;

struct tl_context {
  int budget;
  tl_pool *pool;
  size_t scratch_limit;
  int has_cpu_set;
  cpu_set_t cpu_set;

  tl__arbiter arbiter;
  tl__resources root;
  atomic_int root_checked_out;
  atomic_size_t root_reserved; /* root arena bytes, published at the end of each root call */
  struct tl_session session;

  pthread_mutex_t bundle_lock;
  tl__resources *free_bundles;
  atomic_size_t bundle_count;

  atomic_int phase_active;
  atomic_int active_children;
  tl__lane_report *lane_reports; /* budget entries, reused by every run */
  tl__resources **lane_bundles;  /* budget entries: lane i's private bundle, made on first use
                                    and kept across runs (only lane i's thread touches it) */
};

/* Take a child resource bundle (private scratch and plan cache) for one child surface,
 * reusing a returned one when there is one. TL_E_NOMEM with a message. */
tl_status tl__bundle_checkout(struct tl_context *ctx, tl__resources **out);
/* Return a bundle: its scratch is reset (memory kept), its plans kept. */
void tl__bundle_return(struct tl_context *ctx, tl__resources *bundle);
/* Free every returned bundle and every lane's bundle (context destruction). */
void tl__bundles_release(struct tl_context *ctx);
/* Lane `index`'s own bundle, made on first use. TL_E_NOMEM with a message. */
tl_status tl__lane_bundle(struct tl_context *ctx, int index, tl__resources **out);

/* Set up `exec` as a one-thread child surface of `session` on the calling thread. */
void tl__exec_init_child(tl_exec *exec, tl_session *session, tl_exec_kind kind,
                         tl__resources *resources, const atomic_int *cancel);

#endif
