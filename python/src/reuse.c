/* python/src/reuse.c: large memory freed by tenlane is kept for the next allocation of its
 * size, so the loop `r = s.matmul(a, b)` reuses the pages of the result it just dropped
 * instead of faulting a fresh mapping in (glibc returns blocks this big to the kernel).
 *
 * The module installs this allocator (tl_allocator_set) at import, before any tenlane
 * object exists; it serves every tenlane allocation in the module's private copy of the
 * library. Each block carries a header of one alignment unit (at least 32 bytes) before
 * the pointer handed out, holding its rounded size. A freed block of at least
 * TLPY_REUSE_MIN bytes goes to a small table (TLPY_REUSE_SLOTS entries, at most
 * TLPY_REUSE_KEEP bytes in all) instead of free(); an allocation of the same rounded size
 * and alignment takes it back. When the table has no room, the blocks kept longest are
 * freed to make it: the block just freed is the one a loop asks for next, and a table left
 * full of an earlier loop's sizes sent every later large result to fresh pages (a 64 MiB
 * complex Hadamard product paid some 550 page faults a call after three other sizes).
 * Any thread; one mutex. */
#include "tlpy.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define TLPY_REUSE_MIN ((size_t)256 << 10)
#define TLPY_REUSE_SLOTS 16
#define TLPY_REUSE_KEEP ((size_t)256 << 20)

typedef struct header {
  size_t size;  /* rounded bytes after the header */
  size_t align; /* the header's length (the alignment asked, at least 32) */
} header;

typedef struct slot {
  void *ptr; /* as handed out; NULL when empty */
  size_t size, align;
  uint64_t age; /* when it was kept: higher is newer */
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot kept[TLPY_REUSE_SLOTS];
static size_t kept_bytes;
static uint64_t kept_clock;

static size_t round_size(size_t size) {
  size_t unit = size >= TLPY_REUSE_MIN ? (size_t)64 << 10 : 64; /* size classes */
  return size > SIZE_MAX - unit ? 0 : (size + unit - 1) / unit * unit;
}

static void *reuse_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (align < 32) align = 32;
  size_t rounded = round_size(size);
  if (rounded == 0 || rounded > SIZE_MAX - align) return NULL;
  if (rounded >= TLPY_REUSE_MIN) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < TLPY_REUSE_SLOTS; i++) {
      if (kept[i].ptr && kept[i].size == rounded && kept[i].align == align) {
        void *p = kept[i].ptr;
        kept[i].ptr = NULL;
        kept_bytes -= rounded;
        pthread_mutex_unlock(&lock);
        return p;
      }
    }
    pthread_mutex_unlock(&lock);
  }
  char *base = aligned_alloc(align, align + rounded);
  if (!base) return NULL;
  header *h = (header *)(base + align - sizeof(header));
  h->size = rounded;
  h->align = align;
  return base + align;
}

/* The slot of the block kept longest, or -1 when none is kept (lock held). */
static int oldest_locked(void) {
  int oldest = -1;
  for (int i = 0; i < TLPY_REUSE_SLOTS; i++)
    if (kept[i].ptr && (oldest < 0 || kept[i].age < kept[oldest].age)) oldest = i;
  return oldest;
}

static void reuse_free(void *ptr, void *user) {
  (void)user;
  header *h = (header *)((char *)ptr - sizeof(header));
  size_t size = h->size, align = h->align;
  if (size < TLPY_REUSE_MIN || size > TLPY_REUSE_KEEP) {
    free((char *)ptr - align);
    return;
  }
  slot evicted[TLPY_REUSE_SLOTS];
  int n_evicted = 0, free_slot = -1;
  pthread_mutex_lock(&lock);
  for (;;) {
    free_slot = -1;
    for (int i = 0; i < TLPY_REUSE_SLOTS && free_slot < 0; i++)
      if (!kept[i].ptr) free_slot = i;
    if (free_slot >= 0 && kept_bytes + size <= TLPY_REUSE_KEEP) break;
    /* No room: the oldest block goes. Some block is kept whenever there is no room, since
     * the new one fits in an empty table; the check only guards the index. */
    int oldest = oldest_locked();
    if (oldest < 0) break;
    evicted[n_evicted++] = kept[oldest];
    kept_bytes -= kept[oldest].size;
    kept[oldest].ptr = NULL;
  }
  const int keep = free_slot >= 0 && kept_bytes + size <= TLPY_REUSE_KEEP;
  if (keep) {
    kept[free_slot] = (slot){ptr, size, align, ++kept_clock};
    kept_bytes += size;
  }
  pthread_mutex_unlock(&lock);
  if (!keep) free((char *)ptr - align);
  for (int i = 0; i < n_evicted; i++) free((char *)evicted[i].ptr - evicted[i].align);
}

void tlpy_reuse_install(void) {
  static const tl_allocator allocator = {reuse_alloc, reuse_free, NULL};
  tl_allocator_set(&allocator);
}

size_t tlpy_reuse_release(void) {
  slot taken[TLPY_REUSE_SLOTS];
  size_t bytes;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < TLPY_REUSE_SLOTS; i++) {
    taken[i] = kept[i];
    kept[i].ptr = NULL;
  }
  bytes = kept_bytes;
  kept_bytes = 0;
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < TLPY_REUSE_SLOTS; i++)
    if (taken[i].ptr) free((char *)taken[i].ptr - taken[i].align);
  return bytes;
}

size_t tlpy_reuse_kept(void) {
  pthread_mutex_lock(&lock);
  size_t bytes = kept_bytes;
  pthread_mutex_unlock(&lock);
  return bytes;
}
