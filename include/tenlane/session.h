/* tenlane/session.h: admission, the held session, its operation surface and tickets.
 *
 * One owner at a time holds a context through a session. The session is bound to the
 * thread that opened it: it carries that thread's reentry marker and, when the context
 * has a CPU set, narrows that thread's affinity to the set until it closes. Numerical
 * calls take the session's tl_exec, split their work over the context's pool and use the
 * root resources the session checked out.
 *
 * Other threads join the holder's work through a tl_ticket: an entry on a ticket runs a
 * callback with a child tl_exec of its own (private scratch and plan cache, one thread),
 * without waiting and without a second admission. */
#ifndef TENLANE_SESSION_H
#define TENLANE_SESSION_H

#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/context.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_session tl_session;

/* The operation surface every numerical call takes first. It is borrowed from a session,
 * a lane or a ticket entry and is valid only as long as that holder says. */
typedef struct tl_exec tl_exec;

typedef enum tl_wait_mode {
  TL_NOWAIT = 0, /* fail with TL_E_BUSY at once if another owner holds the context */
  TL_WAIT = 1    /* queue (first come, first served) until the context is free */
} tl_wait_mode;

/* Open a held session for `owner` on the calling thread.
 * On success *out is the session's handle: a 64-bit open number, never reused, so a
 * handle kept after close stays TL_E_STALE whatever is opened later. Close it on this
 * same thread with tl_session_close. If the thread ends without closing it, tenlane
 * closes it at the thread's exit (see TL_E_OWNER_DEAD).
 * Errors (nothing held, *out untouched):
 *   TL_E_INVALID: NULL ctx or out, owner 0, an unknown mode;
 *   TL_E_REENTERED: this thread already executes for ctx (holds its session, runs one of
 *     its lanes or ticket entries);
 *   TL_E_BUSY: another owner holds ctx and mode is TL_NOWAIT, or the calling thread is a
 *     worker of some tl_pool (pool workers never wait for admission);
 *   TL_E_AFFINITY: the thread could not be narrowed to the CPU set;
 *   TL_E_OWNER_DEAD: the previous holder's thread ended while it held the session; tenlane
 *     closed that session for it. Reported once, to the first opener granted the context
 *     after the death (a TL_WAIT opener queued behind it is woken); open again;
 *   TL_E_LIMIT: this thread already executes for TL_CONTEXTS_PER_THREAD_MAX contexts;
 *   TL_E_FORKED: ctx was made before fork() and this is the child (only destroy works);
 *   TL_E_NOMEM.
 * If a tl_catch scope is active on this thread, the session is registered on it, so a
 * panic that unwinds that scope closes the session. */
TL_API tl_status tl_session_open(tl_context *ctx, tl_owner owner, tl_wait_mode mode,
                                 tl_session **out);

/* Close the session: return the root resources, clear the thread's marker, restore the
 * thread's CPU affinity, release admission and wake the next queued opener, in that order.
 * Waits for ticket entries still running on other threads to return. Everything is
 * released even when the affinity cannot be restored; that failure (TL_E_AFFINITY) is
 * then what close returns. Errors: TL_E_INVALID (NULL), TL_E_WRONG_THREAD (another
 * thread; nothing changes), TL_E_STALE (already closed), TL_E_PHASE_ACTIVE (called inside
 * its own phase), TL_E_FORKED (in the child of a fork(): nothing changes). */
TL_API tl_status tl_session_close(tl_session *session);

/* The session's root operation surface, borrowed for the session's life. Any thread may
 * fetch it (routes on it from another thread return TL_E_WRONG_THREAD). NULL for NULL or
 * a closed session. */
TL_API tl_exec *tl_session_exec(tl_session *session);

/* The owner that holds the session; 0 when it is closed. Any thread. */
TL_API tl_owner tl_session_owner(const tl_session *session);

/* The message of the last failing call made through this session (or ""). Valid until
 * the next call on the session. Opening thread only: "" from another thread or for a
 * closed session. Does not change tl_last_message. */
TL_API const char *tl_session_message(const tl_session *session);

typedef int (*tl_session_fn)(tl_exec *exec, void *arg);

/* The scoped entry: open a session for `owner`, run fn(exec, arg), close it. Returns the
 * open error, else the close error if closing failed (a restoration failure replaces the
 * callback's result), else TL_OK; the callback's own return value goes to *fn_result
 * (may be NULL). */
TL_API tl_status tl_session_with(tl_context *ctx, tl_owner owner, tl_wait_mode mode,
                                 tl_session_fn fn, void *arg, int *fn_result);

/* A ticket lets other threads enter child work under the session's owner while the
 * session is held. It is a plain value: copy it freely; it holds nothing. It names the
 * session by two process-wide serials that are never given out twice, never by an address:
 * a context made later at the same address (a reusing allocator) is not the ticket's, and
 * an entry on it is refused with TL_E_STALE. */
typedef struct tl_ticket {
  tl_context *ctx;         /* where the session was, for the user's information only: an entry
                              never matches on it, nor reads it before the session is found */
  uint64_t context_serial; /* the context's serial (tl_context_serial) */
  uint64_t session_serial; /* the session's open number */
  tl_owner owner;
} tl_ticket;

/* Make a ticket for the held session. Opening thread only.
 * Errors: TL_E_INVALID (NULL), TL_E_WRONG_THREAD. */
TL_API tl_status tl_session_ticket(tl_session *session, tl_ticket *out);

typedef int (*tl_ticket_fn)(tl_exec *exec, void *arg);

/* Run fn(exec, arg) on the calling thread with a child surface of its own: private
 * scratch and plan cache, one thread, the session's owner. Never waits for admission.
 * The surface fn gets lives until the context is destroyed but is retired when fn returns:
 * kept and used later, a route returns TL_E_STALE.
 * Errors (fn not called): TL_E_INVALID (NULL), TL_E_STALE (the session closed or is
 * closing; the context of a closed session is not read, so a ticket may outlive it),
 * TL_E_LIMIT (this thread executes for TL_CONTEXTS_PER_THREAD_MAX contexts), TL_E_REENTERED (the
 * calling thread already executes for this context, e.g. the session's own thread), TL_E_NOMEM.
 * Otherwise TL_OK and fn's value in *fn_result (may be NULL). Any thread. */
TL_API tl_status tl_ticket_enter(const tl_ticket *ticket, tl_ticket_fn fn, void *arg,
                                 int *fn_result);

/* Introspection of a surface, mainly for tests and tools. */
typedef enum tl_exec_kind {
  TL_EXEC_ROOT = 0,   /* a held session's surface; routes split over the pool */
  TL_EXEC_LANE = 1,   /* a phase lane's child surface; one thread */
  TL_EXEC_TICKET = 2, /* a ticket entry's child surface; one thread */
  TL_EXEC_INLINE = 3  /* the budget-1 inline lane on the driver; one thread */
} tl_exec_kind;

TL_API tl_exec_kind tl_exec_kind_of(const tl_exec *exec);

/* The widest team a route on this surface uses: the pool size for a root surface of a
 * context with a pool, else 1. */
TL_API int tl_exec_team(const tl_exec *exec);

/* Ask routes on this surface for a team of `team` threads (0 = the default: the whole
 * pool from a root surface, one thread on a child surface). A later route call that
 * cannot honour a request above 1 (a child surface, or a caller on a pool worker)
 * returns TL_E_UNAVAILABLE and writes nothing. Errors: TL_E_INVALID (NULL, team < 0). */
TL_API tl_status tl_exec_set_team(tl_exec *exec, int team);

/* Cancellation of long calls: one flag per surface.
 *
 * tl_exec_cancel raises the flag of `exec`. While it is raised, the route call in progress
 * on the surface stops at its next check and returns TL_E_CANCELLED, and every later route
 * call on it returns TL_E_CANCELLED at once, writing nothing, until tl_exec_cancel_clear
 * lowers it. Checks sit at block boundaries: between the blocks of a matrix product (each
 * bounded to about 2^32 real flops, a complex multiply-add counting eight: well under a
 * tenth of a second on an optimized BLAS), between the chunks of elementwise, permute and
 * reduction work, between einsum's steps, and in the matrix products and matrix-vector products the
 * factorizations (SVD, QR, eigh's back-transformation) make through LAPACK, which then
 * return zeros so that LAPACK ends quickly, and between LU's trailing updates. A call that has
 * passed its last check (a small call, or one LAPACK step without a product in it, such as eigh's
 * tridiagonal reduction) finishes normally and returns TL_OK. After TL_E_CANCELLED: the outputs of
 * an `_into` call are unspecified (partly written); a plain call returns no result (nothing to
 * release); the inputs are untouched; the surface, its session and its scratch stay usable once the
 * flag is lowered. The message names the route and how much work was left undone. On a lane or
 * ticket surface the flag adds to the lane's run cancellation (tl_lane_cancel) and concerns that
 * surface alone.
 *
 * tl_exec_cancel: any thread, and async-signal-safe (a single lock-free atomic store): a
 * SIGINT handler may call it. The caller keeps `exec` valid (a session's root surface lives
 * as long as its context). NULL does nothing. Nothing is returned: raising a raised flag is
 * no error. Takes no ownership. */
TL_API void tl_exec_cancel(tl_exec *exec);

/* Lower the flag tl_exec_cancel raised (a flag that is not raised stays so). Any thread;
 * to lower it between calls, do it on the surface's thread once the cancelled call has
 * returned. Errors: TL_E_INVALID (NULL). */
TL_API tl_status tl_exec_cancel_clear(tl_exec *exec);

/* 1 while the flag tl_exec_cancel raised is up, else 0 (also for NULL). Any thread. */
TL_API int tl_exec_cancel_requested(const tl_exec *exec);

/* The element order of the fresh results routes make on a surface. */
typedef enum tl_order {
  TL_ORDER_COL_MAJOR = 0, /* first index fastest (the default; BLAS and LAPACK's order) */
  TL_ORDER_ROW_MAJOR = 1  /* last index fastest (C and numpy's order) */
} tl_order;

/* Make the fresh results of later route calls on this surface (every plain form: tl_add,
 * tl_svd, tl_einsum, ...) of `order`; `_into` outputs keep the caller's strides. A fresh
 * result is always contiguous from offset 0, and its element values do not depend on the
 * order. Surface's thread only. Errors: TL_E_INVALID (NULL, an unknown order). */
TL_API tl_status tl_exec_set_order(tl_exec *exec, tl_order order);

/* How long memory from tl_exec_scratch stays valid. */
typedef enum tl_scratch_scope {
  TL_SCRATCH_ITEM = 0, /* until the current tl_map item's callback returns (outside a map:
                          until the lane callback or ticket entry returns) */
  TL_SCRATCH_LANE = 1  /* until the lane callback returns: across every item the lane pulls
                          in one tl_map (a ticket entry: until the entry returns) */
} tl_scratch_scope;

/* `bytes` of scratch memory (64-byte aligned, uninitialised) from a lane's or ticket
 * entry's surface, for the callback's own temporaries: no heap allocation once the
 * surface's arena has grown to the working size, and nothing to free (the library
 * reclaims it when the scope ends). Counts against the context's scratch limit. Surface's
 * thread only. Errors (*out untouched): TL_E_INVALID (NULL, an unknown scope),
 * TL_E_UNAVAILABLE (a root surface: a held session has no item or lane to scope it to),
 * TL_E_WRONG_THREAD, TL_E_SCRATCH_LIMIT, TL_E_NOMEM. */
TL_API tl_status tl_exec_scratch(tl_exec *exec, size_t bytes, tl_scratch_scope scope, void **out);

/* The message of the last failing call made on this surface (or ""). */
TL_API const char *tl_exec_message(const tl_exec *exec);

/* An opaque identity of the surface's private scratch arena (tests compare them). */
TL_API const void *tl_exec_scratch_id(const tl_exec *exec);

#ifdef __cplusplus
}
#endif
#endif
