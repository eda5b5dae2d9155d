/* src/core/core_int.h: the insides of the core module (admission, the context, the held
 * session, the phase lease and its lanes), for the files of src/core and the layers above
 * it (src/map opens its phase here). Users see only the public headers
 * (tenlane/context.h, session.h, phase.h). These four parts are one module, not four
 * layers: the context embeds the session and the lane reports, the session ends phases a
 * longjmp left open, the phase resolves session handles, and tickets join a session's
 * grant (docs/design/core.md). */
#ifndef TL_CORE_INT_H
#define TL_CORE_INT_H

#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/base.h"
#include "base/unwind.h"
#include "exec/exec.h"
#include "tenlane/context.h"
#include "tenlane/phase.h"
#include "tenlane/session.h"
#include "tenlane/status.h"

/* ---- Admission: who holds a context (arbiter.c, owner.c) ----------------------------------- */

/* Who holds a context.
 *
 * Invariants:
 * - At most one owner holds the context (holder != 0); each grant bumps generation, which
 *   is what tickets and stale checks compare against.
 * - Openers that wait are granted strictly in arrival order: close hands the context
 *   directly to the oldest waiter, so a newcomer can never overtake a queued one.
 * - A pool worker never waits here (it could starve its own pool): it is refused instead.
 * - Child entries (lanes, ticket entries) never wait either: they join the current grant
 *   or are refused. Close first stops new child entries, then waits for those in flight.
 *   A child entry takes no lock: it counts itself in, then reads `closing`, then checks the
 *   grant is still the live one (all sequentially consistent), and counts itself out again
 *   if not; close raises `closing` before it reads the count, so one of the two sees the
 *   other, and close clears `granted` before it clears `closing`, so a child that missed
 *   the drain sees the cleared grant.
 * The lock is held only for these bookkeeping steps, never across user code. */

typedef struct tl__opener {
  struct tl__opener *next;
  pthread_cond_t granted_cond;
  tl_owner owner;
  int granted;
} tl__opener;

typedef struct tl__arbiter {
  pthread_mutex_t lock;
  tl_owner holder;              /* 0 when free */
  uint64_t generation;          /* bumped at each grant */
  atomic_int closing;           /* the holder is closing: child entries are refused */
  atomic_int children;          /* child entries in flight */
  atomic_uint_fast64_t granted; /* generation of the live grant, 0 when none (lock-free reads) */
  pthread_cond_t children_done;
  tl__opener *head, *tail;
  int waiting;
} tl__arbiter;

void tl__arbiter_init(tl__arbiter *arbiter);
void tl__arbiter_destroy(tl__arbiter *arbiter);

/* Grant the context to `owner`, waiting in line when mode is TL_WAIT and the caller is not
 * a pool worker. On TL_OK *generation is the grant's generation. TL_E_BUSY otherwise. */
tl_status tl__admission_open(tl__arbiter *arbiter, tl_owner owner, tl_wait_mode mode,
                             uint64_t *generation);
/* Stop child entries and wait for those in flight (start of close). */
void tl__admission_drain_children(tl__arbiter *arbiter);
/* Release the grant: hand it to the oldest waiter, or free the context. */
void tl__admission_close(tl__arbiter *arbiter);

/* Join the grant `generation` of `owner` as a child, without waiting. TL_E_STALE when that
 * grant ended or is closing. Pair with tl__child_leave. */
tl_status tl__child_enter(tl__arbiter *arbiter, tl_owner owner, uint64_t generation);
void tl__child_leave(tl__arbiter *arbiter);

/* 1 when an owner holds the context, an opener waits or a child entry is in flight, with
 * the holder and the number of waiting openers in *holder and *waiting (under the lock:
 * for destruction, which must see a settled state). */
int tl__arbiter_in_use(tl__arbiter *arbiter, tl_owner *holder, int *waiting);

/* Unlocked snapshots for stats (never block). */
tl_owner tl__arbiter_holder(const tl__arbiter *arbiter);
int tl__arbiter_waiting(const tl__arbiter *arbiter);

/* ---- The thread-local reentry marks (marker.c) --------------------------------------------- */

/* The thread-local reentry marker.
 *
 * A thread that executes for a context (it holds the context's session, or runs one of its
 * lanes or ticket entries) carries a mark for that context. Entering the same context
 * again on that thread is refused with TL_E_REENTERED instead of deadlocking. The holder's
 * thread keeps its mark for the session's whole life. A thread may carry marks for a few
 * different contexts at once. */

#define TL__MARKS_MAX TL_CONTEXTS_PER_THREAD_MAX

/* 1 when the calling thread carries a mark for ctx. */
int tl__marker_has(const tl_context *ctx);
/* Add a mark; TL_E_LIMIT, with a message that begins with `call` (the public entry point),
 * when the thread already carries TL__MARKS_MAX. */
tl_status tl__marker_push(const tl_context *ctx, tl_owner owner, const char *call);
/* Remove the thread's mark for ctx (no-op when it has none). */
void tl__marker_pop(const tl_context *ctx);

/* ---- Lane reports: what one lane of a phase run reports to its driver (lane.c) ------------- */

/* What one lane of a phase run reports to its driver. The context
 * keeps one per lane (made with the context, reused by every run); a lane writes only its
 * own, and the driver reads them after the join. */

struct tl__run;
struct tl__lane_report;

/* What a lane callback's tl_lane * points at. It lives in the lane's report (context
 * memory), not on the worker's stack, and `live` says whether its callback is running: a
 * tl_lane kept past its callback is recognised (tl_lane_cancelled reads 1, tl_lane_cancel
 * and tl_lane_fail do nothing, its surface is retired) without reading a dead frame. */
struct tl_lane {
  tl_exec *exec; /* the lane's surface: its bundle's (context memory) */
  struct tl__run *run;
  int index;
  struct tl__lane_report *report;
  atomic_int live;
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
  struct tl_lane lane; /* what the lane's callback is handed */
} tl__lane_report;

/* ---- The held session (session.c, handle.c) ------------------------------------------------ */

/* The held session's insides, for the layers that work on it
 * (context, tickets, phase). Users see only tenlane/session.h.
 *
 * Invariants:
 * - state moves CLOSED -> IDLE at open, IDLE <-> PHASE around a phase, and back to CLOSED
 *   at close; only the opening thread changes it. The root surface reads it as its gate.
 * - thread_token is the opening thread's while the session is open, 0 when closed. */

/* The session's state is the gate its root surface reads (exec/exec.h). */
typedef enum tl__session_state {
  TL__SESSION_CLOSED = TL__GATE_CLOSED,
  TL__SESSION_IDLE = TL__GATE_OPEN,
  TL__SESSION_PHASE = TL__GATE_PARKED
} tl__session_state;

struct tl_session {
  struct tl_context *ctx;
  tl_owner owner;
  uint64_t generation;
  uint64_t thread_token;
  atomic_int state; /* tl__session_state; read by stats */
  tl_exec exec;     /* the root surface */
  int affinity_saved;
  cpu_set_t saved_mask;
  tl__unwind_node unwind; /* closes the session if a panic passes over it */
  char message[TL_MESSAGE_CAPACITY];
  uint64_t id;                      /* this open's number: what the user's handle holds */
  atomic_uint_fast64_t phase_token; /* the open phase's token, 0 when none (handle.c reads it
                                       to tell a foreign phase from a stale one) */
  tl__unwind_node phase_unwind;     /* ends the open phase if a panic passes over it */
  struct tl_session *next_open;     /* the process-wide list of open sessions (handle.c) */
};

/* ---- Handles (handle.c) ---------------------------------------------------------------- */

/* Register a session just opened on the calling thread: a fresh 64-bit open number, the
 * process-wide list of open sessions, the thread's list of held sessions (and the
 * thread-exit hook). Returns the handle the user gets. */
tl_session *tl__session_register(tl_session *session);
/* Remove the session from both lists (at close, before anything is released). */
void tl__session_unregister(tl_session *session);
/* The session `handle` names when the calling thread holds it; otherwise NULL and, in
 * *status, TL_E_INVALID (NULL), TL_E_WRONG_THREAD (open, held by another thread) or
 * TL_E_STALE (closed, or not a handle), with a message that begins with `call`. Never
 * dereferences the handle. */
tl_session *tl__session_resolve(const tl_session *handle, const char *call, tl_status *status);
/* The open session `handle` names, from any thread (NULL when closed). The object stays
 * valid until its context is destroyed, which needs it closed first. */
tl_session *tl__session_find_any(const tl_session *handle);
/* The owner of the open session `handle` names, from any thread; 0 when it is closed. */
tl_owner tl__session_owner_any(const tl_session *handle);
/* Join the ticket's session as a child entry (tl__child_enter) if it is still open, under
 * the registry's lock so that the session cannot close before the entry is counted; the
 * session is found by its open number and its context's serial (never by address), and
 * *ctx is its context. TL_E_STALE (message beginning with `call`) when it is closed. */
tl_status tl__session_join(const tl_ticket *ticket, const char *call, struct tl_context **ctx);
/* 1 when some open session, on any thread, has the phase `token` open. */
int tl__session_phase_elsewhere(uint64_t token);
/* Close a session whose owner thread is ending without having closed it (called on that
 * thread by the thread-exit hook): everything close does except restoring the CPU mask,
 * and the context remembers the dead owner for the next opener and destroy
 * (TL_E_OWNER_DEAD). */
void tl__session_abandon(tl_session *session);

/* ---- The context (context.c, bundles.c) ---------------------------------------------------- */

/* The context's insides, for the layers that work on it
 * (session, tickets, phase). Users see only tenlane/context.h. The context embeds the one
 * session object and one report per lane (both above in this header),
 * made with it so that neither opening a session nor running a phase allocates them.
 *
 * Invariants:
 * - The pool exists exactly when budget > 1, and has budget workers.
 * - The root resources are checked out by at most one session (the holder's), flagged by
 *   root_checked_out; child bundles are each used by one child surface at a time.
 * - The session object lives inside the context (one holder at a time), so a session
 *   pointer stays valid, and checkable, until the context is destroyed. */

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

/* ---- The caller-affinity guard (affinity.c) ------------------------------------------------ */

/* The caller-affinity guard. While a session is held, its thread
 * runs inside the context's CPU set; closing puts the thread's old mask back. */

/* Narrow the calling thread to ctx's CPU set, saving its mask in the session. No-op
 * without a CPU set. TL_E_AFFINITY with a message on failure (the mask is left as it was). */
tl_status tl__affinity_narrow(tl_session *session);
/* Put back the saved mask. TL_E_AFFINITY with a message on failure. */
tl_status tl__affinity_restore(tl_session *session);

/* Test hook: when non-zero, the next restore fails (and the hook clears). */
extern atomic_int tl__fault_affinity_restore;

/* ---- The phase lease and a run (phase.c, lane.c; src/map opens its phase through it) ------- */

/* The lease and a run, shared by phase.c, lane.c and src/map.
 *
 * Invariants:
 * - A phase lives on the stack of tl_session_phase; users hold an opaque token instead of
 *   its address. Tokens point into a thread-local array, so a token kept past its callback
 *   is recognised as stale (or as another thread's) without ever being dereferenced.
 * - While the phase is open the session is in state PHASE: its root surface is parked.
 * - A run's lanes write only their own report; the driver reads reports after the join,
 *   which the broadcast's completion count orders before the driver's reads.
 * - Every lane that entered leaves: its bundle goes back, its mark is removed and the
 *   admission child count drops, on success, failure and panic alike. */

/* An open phase: a record in the opening thread's table of open phases (thread-local
 * memory, never a stack frame), found through its token. */
typedef struct tl__phase {
  uint64_t token; /* what users hold as tl_phase *: a process-wide 64-bit number */
  tl_session *session;
  tl_context *ctx;
  int lanes;
  int running;     /* a run is in progress (refuses a nested run from the inline lane) */
  uintptr_t frame; /* the stack frame of the call that opened it (jump-out detection) */
} tl__phase;

/* The most phases one thread may have open at once (nested on different contexts). */
#define TL__PHASES_NESTED_MAX 16

/* Everything a lane reads to start sits in this one cache line, written by the driver just
 * before the broadcast: a lane pays one cross-core line transfer for its start-up state
 * instead of chasing pointers through the phase and the session. */
typedef struct tl__run {
  _Alignas(TL__CACHE_LINE) atomic_int cancel;
  tl_lane_fn fn;
  void *arg;
  tl_context *ctx;
  tl_session *session;
  tl_owner owner;
  tl__phase *phase;
} tl__run;

/* tl_session_phase, with its messages naming `call` (tl_map opens its phase through it);
 * frame is the public entry point's own stack frame (__builtin_frame_address(0)). */
tl_status tl__session_phase_named(tl_session *handle, tl_phase_fn fn, void *arg, const char *call,
                                  const void *frame);

/* End a phase of `session` that a longjmp left open: its record says it was opened from a
 * frame at or below `frame` (the caller's own frame), so that frame is gone. Returns 1
 * when one was ended. Only the session's own thread calls it. */
int tl__phase_prune(tl_session *session, const void *frame);

/* The phase that `handle` names on the calling thread, or NULL with the refusal in *status
 * (TL_E_INVALID, TL_E_STALE or TL_E_WRONG_THREAD) and a message naming `call`. */
tl__phase *tl__phase_resolve(const tl_phase *handle, const char *call, tl_status *status);

#endif
