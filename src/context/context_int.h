/* src/context/context_int.h: the context's insides, for the layers that work on it
 * (session, tickets, phase). Users see only tenlane/context.h. The context embeds the one
 * session object (session/session_int.h) and one report per lane (phase/lane_report.h),
 * made with it so that neither opening a session nor running a phase allocates them.
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
#include "exec/exec.h"
#include "phase/lane_report.h"
#include "session/session_int.h"
#include "tenlane/context.h"

struct tl_context {
  uint64_t serial; /* process-wide, never reused: what tickets and marks match on */
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

  atomic_uint_fast64_t owner_died; /* an owner whose thread ended holding the session, not
                                     yet reported (TL_E_OWNER_DEAD); 0 when none */
  unsigned fork_epoch;             /* the fork epoch the context was made in */

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

#endif
