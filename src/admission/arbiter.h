/* src/admission/arbiter.h: who holds a context.
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
#ifndef TL_ADMISSION_ARBITER_H
#define TL_ADMISSION_ARBITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tenlane/context.h"
#include "tenlane/session.h"

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

#endif
