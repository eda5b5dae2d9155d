/* src/base/fork.c: the fork epoch. A child made by fork() has one thread, the one that
 * called fork(); every pool worker and every thread that held a lock is gone. Objects
 * record the epoch they were made in, and a call on an object whose epoch is not the
 * current one returns TL_E_FORKED at once instead of waiting for threads that do not
 * exist. The epoch is bumped by a pthread_atfork child handler, registered once. */
#include <pthread.h>

#include "base.h"

atomic_uint tl__fork_epoch_value;

static void bump_in_child(void) { atomic_fetch_add(&tl__fork_epoch_value, 1); }

static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static void watch(void) { pthread_atfork(NULL, NULL, bump_in_child); }

unsigned tl__fork_watch(void) {
  pthread_once(&watch_once, watch);
  return atomic_load(&tl__fork_epoch_value);
}
