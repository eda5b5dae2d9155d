/* src/core/arbiter.c: FIFO admission with direct hand-off (see core_int.h). */
#include <assert.h>
#include "core/core_int.h"

#include "base/base.h"
#include "base/fault.h"
#include "tenlane/pool.h"

void tl__arbiter_init(tl__arbiter *arbiter) {
  pthread_mutex_init(&arbiter->lock, NULL);
  pthread_cond_init(&arbiter->children_done, NULL);
  arbiter->holder = 0;
  arbiter->generation = 0;
  atomic_init(&arbiter->closing, 0);
  atomic_init(&arbiter->children, 0);
  atomic_init(&arbiter->granted, 0);
  arbiter->head = arbiter->tail = NULL;
  arbiter->waiting = 0;
}

void tl__arbiter_destroy(tl__arbiter *arbiter) {
  pthread_cond_destroy(&arbiter->children_done);
  pthread_mutex_destroy(&arbiter->lock);
}

tl_status tl__admission_open(tl__arbiter *arbiter, tl_owner owner, tl_wait_mode mode,
                             uint64_t *generation) {
  pthread_mutex_lock(&arbiter->lock);
  if (arbiter->holder == 0 && arbiter->head == NULL) {
    __atomic_store_n(&arbiter->holder, owner, __ATOMIC_RELAXED);
    *generation = ++arbiter->generation;
    atomic_store(&arbiter->granted, arbiter->generation);
    pthread_mutex_unlock(&arbiter->lock);
    return TL_OK;
  }
  tl_owner holder = arbiter->holder;
  if (mode == TL_NOWAIT) {
    pthread_mutex_unlock(&arbiter->lock);
    return tl__fail(TL_E_BUSY,
                    "tl_session_open: owner %llu asked not to wait, and the context is held by "
                    "owner %llu",
                    (unsigned long long)owner, (unsigned long long)holder);
  }
  if (tl_pool_current() != NULL) {
    pthread_mutex_unlock(&arbiter->lock);
    return tl__fail(TL_E_BUSY,
                    "tl_session_open: owner %llu opened from a pool worker, which never waits "
                    "for admission; the context is held by owner %llu",
                    (unsigned long long)owner, (unsigned long long)holder);
  }
  tl__opener self;
  self.next = NULL;
  self.owner = owner;
  self.granted = 0;
  pthread_cond_init(&self.granted_cond, NULL);
  /* The node lives on this stack frame and is unlinked (by the closer that grants it)
   * before this function returns, so the queue never holds a dangling pointer. */
  if (arbiter->tail != NULL) {
    // cppcheck-suppress autoVariables ; unlinked before return (granted under the lock)
    arbiter->tail->next = &self;
  } else {
    // cppcheck-suppress autoVariables ; unlinked before return (granted under the lock)
    arbiter->head = &self;
  }
  // cppcheck-suppress autoVariables ; unlinked before return (granted under the lock)
  arbiter->tail = &self;
  __atomic_store_n(&arbiter->waiting, arbiter->waiting + 1, __ATOMIC_RELAXED);
  while (!self.granted) pthread_cond_wait(&self.granted_cond, &arbiter->lock);
  *generation = arbiter->generation;
  pthread_mutex_unlock(&arbiter->lock);
  pthread_cond_destroy(&self.granted_cond);
  return TL_OK;
}

void tl__admission_drain_children(tl__arbiter *arbiter) {
  atomic_store(&arbiter->closing, 1);
  pthread_mutex_lock(&arbiter->lock);
  while (atomic_load(&arbiter->children) > 0) {
    pthread_cond_wait(&arbiter->children_done, &arbiter->lock);
  }
  pthread_mutex_unlock(&arbiter->lock);
}

void tl__admission_close(tl__arbiter *arbiter) {
  pthread_mutex_lock(&arbiter->lock);
  assert(arbiter->holder != 0 && "admission closed with no holder");
  atomic_store(&arbiter->granted, 0);
  atomic_store(&arbiter->closing, 0);
  tl__opener *next = arbiter->head;
  if (next != NULL) {
    arbiter->head = next->next;
    if (arbiter->head == NULL) arbiter->tail = NULL;
    __atomic_store_n(&arbiter->waiting, arbiter->waiting - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&arbiter->holder, next->owner, __ATOMIC_RELAXED);
    arbiter->generation++;
    atomic_store(&arbiter->granted, arbiter->generation);
    next->granted = 1;
    pthread_cond_signal(&next->granted_cond);
  } else {
    __atomic_store_n(&arbiter->holder, 0, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&arbiter->lock);
}

tl_status tl__child_enter(tl__arbiter *arbiter, tl_owner owner, uint64_t generation) {
  atomic_fetch_add(&arbiter->children, 1);
  /* closing before granted: close clears granted before it clears closing, so a child that
   * reads closing == 0 either counted itself in before the drain (which then waits for it)
   * or reads a granted that close already cleared. Read the other way round, a child counted
   * in after the drain could read the old grant, then a cleared closing, and enter a closed
   * session (found by the model, model/tenlane.pml). */
  int closing = atomic_load(&arbiter->closing);
  tl__pause(TL__PAUSE_CHILD_BETWEEN_LOADS);
  uint64_t live = atomic_load(&arbiter->granted);
  if (live == generation && !closing) return TL_OK;
  tl__child_leave(arbiter);
  return tl__fail(TL_E_STALE,
                  "child entry for owner %llu, session %llu: that session is %s (live session "
                  "%llu)",
                  (unsigned long long)owner, (unsigned long long)generation,
                  closing && live == generation ? "closing" : "closed", (unsigned long long)live);
}

void tl__child_leave(tl__arbiter *arbiter) {
  if (atomic_fetch_sub(&arbiter->children, 1) == 1 && atomic_load(&arbiter->closing)) {
    /* Under the lock, so a closer between its check and its wait cannot miss this. */
    pthread_mutex_lock(&arbiter->lock);
    pthread_cond_broadcast(&arbiter->children_done);
    pthread_mutex_unlock(&arbiter->lock);
  }
}

tl_owner tl__arbiter_holder(const tl__arbiter *arbiter) {
  return __atomic_load_n(&arbiter->holder, __ATOMIC_RELAXED);
}

int tl__arbiter_in_use(tl__arbiter *arbiter, tl_owner *holder, int *waiting) {
  pthread_mutex_lock(&arbiter->lock);
  *holder = arbiter->holder;
  *waiting = arbiter->waiting;
  int children = atomic_load(&arbiter->children);
  pthread_mutex_unlock(&arbiter->lock);
  return *holder != 0 || *waiting != 0 || children != 0;
}

int tl__arbiter_waiting(const tl__arbiter *arbiter) {
  return __atomic_load_n(&arbiter->waiting, __ATOMIC_RELAXED);
}
