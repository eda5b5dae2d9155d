/* src/pool/wait.c: waiting without starving anyone. A pool worker that waits (it drives a
 * broadcast on another pool, or a loop on its own) keeps running its own pool's work; an
 * outside thread spins a short while, yielding, then sleeps on its waiter so that on an
 * oversubscribed machine the workers it waits for get its core. */
#include <sched.h>

#include "pool_int.h"

void tl__pool_wait(tl_pool *target, int (*done)(void *arg), void *arg) {
  if (done(arg)) return;
  tl__worker *self = tl__worker_self();
  tl__waiter *waiter = tl__waiter_self();
  uint64_t spin_ns = self != NULL ? self->pool->spin_ns : target->driver_spin_ns;
  for (;;) {
    uint64_t deadline = tl__now_ns() + spin_ns;
    for (unsigned spins = 1;; spins++) {
      if (done(arg)) return;
      if (self != NULL && tl__pool_run_one(self->pool, self)) {
        deadline = tl__now_ns() + spin_ns;
        continue;
      }
      if ((spins & 15u) == 0) {
        if (tl__now_ns() >= deadline) break;
        sched_yield();
      } else {
        tl__cpu_relax();
      }
    }
    unsigned seen = atomic_load(&waiter->seq);
    atomic_store(&waiter->sleeping, 1);
    int ready = done(arg) || (self != NULL && tl__pool_has_work(self->pool, self) &&
                              !atomic_load(&self->pool->stop));
    if (!ready) tl__waiter_sleep(waiter, seen);
    atomic_store(&waiter->sleeping, 0);
  }
}
