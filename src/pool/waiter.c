/* src/pool/waiter.c: thread-local waiters and the futex calls behind them (waiter.h). */
#include "waiter.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Thread_local tl__waiter thread_waiter;

tl__waiter *tl__waiter_self(void) { return &thread_waiter; }

void tl__waiter_wake(tl__waiter *waiter) {
  atomic_fetch_add(&waiter->seq, 1);
  if (atomic_load(&waiter->sleeping)) {
    syscall(SYS_futex, &waiter->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  }
}

void tl__waiter_sleep(tl__waiter *waiter, unsigned seen) {
  syscall(SYS_futex, &waiter->seq, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}
