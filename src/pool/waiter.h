/* src/pool/waiter.h: how a thread sleeps until someone has something for it.
 *
 * Every thread that waits in tenlane (a pool worker with nothing to do, a driver waiting
 * for a broadcast or a loop to finish) waits on its own thread-local waiter: a sequence
 * word it can sleep on with a futex, and a flag saying it is asleep. A waker bumps the
 * word and makes the futex call only when the flag is set, so while the waiting thread is
 * still spinning a wake costs no system call. The ordering argument: the waker publishes
 * its condition, then bumps seq, then reads `sleeping`; the waiter sets `sleeping`, then
 * re-reads the condition, then sleeps only if seq is unchanged. All four are sequentially
 * consistent, so either the waiter sees the condition or the waker sees it asleep. */
#ifndef TL_POOL_WAITER_H
#define TL_POOL_WAITER_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/base.h"

typedef struct tl__waiter {
  _Alignas(TL__CACHE_LINE) atomic_uint seq;
  atomic_int sleeping;
} tl__waiter;

/* The calling thread's waiter (valid for the thread's life). */
tl__waiter *tl__waiter_self(void);

/* Wake `waiter` if it sleeps; a no-op system-call-wise while it spins. Any thread. */
void tl__waiter_wake(tl__waiter *waiter);

/* Sleep on the futex until seq moves from `seen` (or a spurious wake). */
void tl__waiter_sleep(tl__waiter *waiter, unsigned seen);

#endif
