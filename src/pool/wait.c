/* src/pool/wait.c: waiting without starving anyone. The one spin-then-sleep loop
 * (tl__spin_then_sleep) serves an idle worker and a waiting thread alike. A pool worker
 * that waits (it drives a broadcast on another pool, or a loop on its own) keeps running
 * its own pool's work; an outside thread spins a short while, yielding, then sleeps on its
 * waiter so that on an oversubscribed machine the workers it waits for get its core. */
#include <sched.h>

#include "pool_int.h"

void tl__spin_then_sleep(uint64_t spin_ns, unsigned yield_mask, tl__poll_fn poll, void *arg) {
  tl__waiter *waiter = tl__waiter_self();
  uint64_t deadline = tl__now_ns() + spin_ns;
  for (unsigned spins = 1;; spins++) {
    int seen_now = poll(arg, 1);
    if (seen_now == TL__POLL_READY) return;
    if (seen_now == TL__POLL_PROGRESS) {
      deadline = tl__now_ns() + spin_ns;
      continue;
    }
    if ((spins & yield_mask) == 0) {
      if (tl__now_ns() >= deadline) break;
      /* Give the core to a runnable thread (the driver, on an oversubscribed machine). */
      sched_yield();
    } else {
      tl__cpu_relax();
    }
  }
  /* Announce the sleep, then look once more: a waker that saw sleeping == 0 made its change
   * visible before this second look. */
  unsigned seen = atomic_load(&waiter->seq);
  atomic_store(&waiter->sleeping, 1);
  if (poll(arg, 0) != TL__POLL_READY) tl__waiter_sleep(waiter, seen);
  atomic_store(&waiter->sleeping, 0);
}

typedef struct wait_poll {
  int (*done)(void *arg);
  void *arg;
  tl__worker *self;
} wait_poll;

/* What a waiter looks at: its condition, then (a pool worker) its own pool's work. */
static int poll_wait(void *arg, int may_run) {
  wait_poll *w = arg;
  if (w->done(w->arg)) return TL__POLL_READY;
  if (w->self == NULL) return TL__POLL_NOTHING;
  if (!may_run)
    return tl__pool_has_work(w->self->pool, w->self) && !atomic_load(&w->self->pool->stop)
               ? TL__POLL_READY
               : TL__POLL_NOTHING;
  return tl__pool_run_one(w->self->pool, w->self) ? TL__POLL_PROGRESS : TL__POLL_NOTHING;
}

void tl__pool_wait(tl_pool *target, int (*done)(void *arg), void *arg) {
  if (done(arg)) return;
  wait_poll w = {done, arg, tl__worker_self()};
  uint64_t spin_ns = w.self != NULL ? w.self->pool->spin_ns : target->driver_spin_ns;
  while (!done(arg)) tl__spin_then_sleep(spin_ns, 15u, poll_wait, &w);
}
