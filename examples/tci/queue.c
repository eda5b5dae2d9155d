/* examples/tci/queue.c: the patch queue every lane pulls from. It grows while lanes work: a
 * patch that splits queues its children. The run is over when nothing is pending and no
 * patch is being worked on. Its arrays grow geometrically, so a run in its steady state
 * makes no allocation per patch beyond the kept pieces. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tci_internal.h"

int tci_queue_init(tci_queue *q, size_t capacity, char *why) {
  memset(q, 0, sizeof *q);
  if (capacity < 16) capacity = 16;
  q->pending = malloc(sizeof(tci_patch) * capacity);
  q->kept = malloc(sizeof(tci_piece *) * capacity);
  if (!q->pending || !q->kept) {
    free(q->pending);
    free(q->kept);
    snprintf(why, TCI_WHY, "no memory for a patch queue of %zu", capacity);
    return TCI_E_NOMEM;
  }
  q->pending_cap = capacity;
  q->kept_cap = capacity;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->wake, NULL);
  q->pending[0].prefix_len = 0; /* the root: the whole grid */
  q->pending[0].chain = 0.0;
  q->pending_count = 1;
  return TCI_OK;
}

void tci_queue_destroy(tci_queue *q) {
  for (size_t i = 0; i < q->kept_count; i++) tci_piece_free(q->kept[i]);
  free(q->kept);
  free(q->pending);
  pthread_cond_destroy(&q->wake);
  pthread_mutex_destroy(&q->lock);
}

int tci_queue_take(tci_queue *q, tci_patch *out, int (*cancelled)(void *), void *arg) {
  pthread_mutex_lock(&q->lock);
  int got = 0;
  for (;;) {
    if (q->stopped) break;
    if (q->pending_count > 0) {
      *out = q->pending[--q->pending_count];
      q->working++;
      got = 1;
      break;
    }
    if (q->working == 0) break;
    if (cancelled && cancelled(arg)) break;
    /* Peers are working and may queue children: wait a short slice (never without bound). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 2000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&q->wake, &q->lock, &until);
  }
  pthread_mutex_unlock(&q->lock);
  return got;
}

static int grow(void **array, size_t *cap, size_t need, size_t item) {
  if (need <= *cap) return 0;
  size_t cap2 = *cap * 2 > need ? *cap * 2 : need;
  void *p = realloc(*array, cap2 * item);
  if (!p) return -1;
  *array = p;
  *cap = cap2;
  return 0;
}

double tci_queue_timing(tci_queue *q, const tci_patch *patch, double seconds) {
  double chain = patch->chain + seconds;
  q->stats.busy_seconds += seconds;
  if (chain > q->stats.chain_seconds) q->stats.chain_seconds = chain;
  return chain;
}

int tci_queue_finish(tci_queue *q, const tci_patch *patch, const tci_patch_outcome *outcome,
                     double seconds, int local_dim, char *why) {
  int rc = TCI_OK;
  pthread_mutex_lock(&q->lock);
  double chain = tci_queue_timing(q, patch, seconds);
  q->stats.evaluations += outcome->evaluations;
  q->stats.lookups += outcome->lookups;
  q->stats.patches_run++;
  q->finished++;
  if (outcome->split) {
    q->stats.splits++;
    if (grow((void **)&q->pending, &q->pending_cap, q->pending_count + (size_t)local_dim,
             sizeof(tci_patch))) {
      rc = TCI_E_NOMEM;
    } else {
      /* Children in reverse, so the stack hands out the lowest first. */
      for (int s = local_dim - 1; s >= 0; s--) {
        tci_patch *child = &q->pending[q->pending_count++];
        *child = *patch;
        child->prefix[patch->prefix_len] = (uint8_t)s;
        child->prefix_len = patch->prefix_len + 1;
        child->chain = chain;
      }
    }
  } else if (grow((void **)&q->kept, &q->kept_cap, q->kept_count + 1, sizeof(tci_piece *))) {
    tci_piece_free(outcome->piece);
    rc = TCI_E_NOMEM;
  } else {
    q->kept[q->kept_count++] = outcome->piece;
  }
  if (rc) {
    snprintf(why, TCI_WHY, "no memory to grow the patch queue past %zu entries",
             q->pending_cap > q->kept_cap ? q->pending_cap : q->kept_cap);
    q->stopped = 1;
    q->failed = 1;
  }
  q->working--;
  pthread_cond_broadcast(&q->wake);
  pthread_mutex_unlock(&q->lock);
  return rc;
}

void tci_queue_stop(tci_queue *q, int cancelled, int taken, uint64_t evaluations) {
  pthread_mutex_lock(&q->lock);
  q->stats.evaluations += evaluations;
  q->stopped = 1;
  if (cancelled)
    q->cancelled = 1;
  else
    q->failed = 1;
  if (taken) q->working--;
  pthread_cond_broadcast(&q->wake);
  pthread_mutex_unlock(&q->lock);
}
