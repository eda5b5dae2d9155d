/* src/base/fault.h: fault injection points for the test suite. Each site has a countdown:
 * 0 means off; n > 0 means the n-th time the site is passed from now, it fails (once).
 * Passing a site costs one relaxed load while it is off. Tests set the countdowns through
 * tl__fault_arm; nothing in a normal program does. */
#ifndef TL_BASE_FAULT_H
#define TL_BASE_FAULT_H

#include <stdatomic.h>
#include <stddef.h>

typedef enum tl__fault_site {
  TL__FAULT_CHILD_ENTRY = 0,     /* a lane's child entry fails (TL_E_NOMEM) */
  TL__FAULT_CHILD_CLEANUP = 1,   /* a lane's child cleanup reports a failure (TL_E_PROVIDER) */
  TL__FAULT_LAPACK_ARGUMENT = 2, /* a LAPACK core passes lda 0: LAPACK calls xerbla_ */
  TL__FAULT_SITES
} tl__fault_site;

extern atomic_int tl__fault_countdown[TL__FAULT_SITES];

void tl__fault_arm(tl__fault_site site, int countdown);

/* 1 while the site has a countdown running (a test armed it), without counting a pass. */
static inline int tl__fault_armed(tl__fault_site site) {
  return atomic_load_explicit(&tl__fault_countdown[site], memory_order_relaxed) > 0;
}

static inline int tl__fault_hit(tl__fault_site site) {
  atomic_int *counter = &tl__fault_countdown[site];
  int value = atomic_load_explicit(counter, memory_order_relaxed);
  while (value > 0) {
    if (atomic_compare_exchange_weak(counter, &value, value - 1)) return value == 1;
  }
  return 0;
}

/* Pause points: a test installs a hook that runs at each of them on the thread passing it,
 * to force one interleaving of two threads (the hook blocks until the other thread has got
 * where the test wants it). Without a hook a pause point costs one relaxed load. */
typedef enum tl__pause_site {
  TL__PAUSE_CLOSE_DRAINED = 0, /* tl_session_close: children drained, grant not yet released */
  TL__PAUSE_CHILD_BETWEEN_LOADS = 1, /* tl__child_enter: between its reads of closing and granted */
  TL__PAUSE_TRIDIAG_PIECE = 2, /* tl_eigh's tridiagonal solver: a piece begins (flag looked at) */
  TL__PAUSE_LINALG_STEP = 3,   /* a linalg route's step begins (tl__la_cancelled: flag looked at) */
  TL__PAUSE_SERIAL_CHUNK = 4   /* tl__exec_run_chunks on the calling thread: a chunk is next */
} tl__pause_site;

typedef void (*tl__pause_fn)(tl__pause_site site);

extern _Atomic(tl__pause_fn) tl__pause_hook;

static inline void tl__pause(tl__pause_site site) {
  tl__pause_fn hook = atomic_load_explicit(&tl__pause_hook, memory_order_relaxed);
  if (hook != NULL) hook(site);
}

#endif
