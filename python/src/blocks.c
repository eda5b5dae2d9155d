/* python/src/blocks.c: memory for small results, kept for the next result of its size.
 *
 * A loop that makes a batch of small results and drops them before the next batch
 * (map_einsum over thousands of environment updates, say) would otherwise take fresh pages
 * from the system for every batch: the C library returns the memory the interpreter's thread
 * frees to the system, and the lanes fault it in again, one page fault per 4 KiB. In a
 * 16 x 16 update that cost more than the arithmetic. Instead, a result of at most
 * TLPY_BLOCK_MAX bytes gets a block from a free list of its size class (64-byte steps), and
 * when its Buffer is collected the block goes back to the list, up to TLPY_BLOCK_KEEP bytes
 * kept in all; past that, and on tenlane.release_cached_memory(), blocks are freed. One
 * mutex guards the lists (a thread holding the GIL gives blocks back in groups, under one
 * lock per group): any thread may take or give a block, with or without the GIL. A
 * fork holds the mutex across the fork (pthread_atfork), so a child never inherits it
 * locked by a thread that does not exist there. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <pthread.h>
#include <stdlib.h>

#define STEP 64
#define CLASSES (TLPY_BLOCK_MAX / STEP)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *heads[CLASSES]; /* class c holds blocks of (c + 1) * STEP bytes */
static size_t kept;          /* bytes on the lists */

static size_t class_of(size_t bytes) { return (bytes + STEP - 1) / STEP - 1; }

int tlpy_block_take_many(size_t bytes, void **blocks, int count) {
  if (bytes == 0 || bytes > TLPY_BLOCK_MAX) return 0;
  size_t c = class_of(bytes), size = (c + 1) * STEP;
  int got = 0;
  pthread_mutex_lock(&lock);
  while (got < count && heads[c]) {
    blocks[got] = heads[c];
    heads[c] = *(void **)blocks[got++];
    kept -= size;
  }
  pthread_mutex_unlock(&lock);
  for (; got < count; got++)
    if (!(blocks[got] = aligned_alloc(STEP, size))) break;
  return got;
}

void *tlpy_block_take(size_t bytes) {
  void *block = NULL;
  return tlpy_block_take_many(bytes, &block, 1) == 1 ? block : NULL;
}

/* Put `block` (taken for `bytes`) on its list, lock held; 0 when the lists are full. */
static int keep_locked(void *block, size_t bytes) {
  size_t c = class_of(bytes), size = (c + 1) * STEP;
  if (kept + size > TLPY_BLOCK_KEEP) return 0;
  *(void **)block = heads[c];
  heads[c] = block;
  kept += size;
  return 1;
}

void tlpy_block_give_many(size_t bytes, void *const *blocks, int count) {
  int kept_here = 0;
  pthread_mutex_lock(&lock);
  for (; kept_here < count; kept_here++)
    if (blocks[kept_here] && !keep_locked(blocks[kept_here], bytes)) break;
  pthread_mutex_unlock(&lock);
  for (int i = kept_here; i < count; i++) free(blocks[i]); /* past the cap */
}

void tlpy_block_give(void *block, size_t bytes) {
  if (block) tlpy_block_give_many(bytes, &block, 1);
}

size_t tlpy_block_release(void) {
  void *lists[CLASSES];
  pthread_mutex_lock(&lock);
  size_t freed = kept;
  for (size_t c = 0; c < CLASSES; c++) lists[c] = heads[c], heads[c] = NULL;
  kept = 0;
  pthread_mutex_unlock(&lock);
  for (size_t c = 0; c < CLASSES; c++)
    while (lists[c]) {
      void *next = *(void **)lists[c];
      free(lists[c]);
      lists[c] = next;
    }
  return freed;
}

/* Blocks given back by collected results (the GIL held), put on the lists PENDING at a time
 * under one lock: a dropped batch of 10,000 results gives 10,000 blocks back in a row, and
 * a lock per block was most of the time those results took to collect. */
#define PENDING 256
#define PENDING_BYTES ((size_t)1 << 20) /* or fewer, when they hold this much */
static struct {
  void *block;
  size_t bytes;
} pending[PENDING];
static int pending_count;
static size_t pending_bytes;

void tlpy_block_flush_held(void) {
  if (pending_count == 0) return;
  int freeing = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < pending_count; i++) /* past the cap: freed below, outside the lock */
    if (!keep_locked(pending[i].block, pending[i].bytes))
      pending[freeing++].block = pending[i].block;
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < freeing; i++) free(pending[i].block);
  pending_count = 0;
  pending_bytes = 0;
}

void tlpy_block_give_held(void *block, size_t bytes) {
  if (!block) return;
  pending[pending_count].block = block;
  pending[pending_count].bytes = bytes;
  pending_count++;
  pending_bytes += bytes;
  if (pending_count == PENDING || pending_bytes >= PENDING_BYTES) tlpy_block_flush_held();
}

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_done(void) { pthread_mutex_unlock(&lock); }

static int registered = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void register_fork_handlers(void) {
  registered = pthread_atfork(fork_prepare, fork_done, fork_done) == 0 ? 0 : -1;
}

int tlpy_blocks_init(void) { /* once per process, however often the module initialises */
  pthread_once(&once, register_fork_handlers);
  return registered;
}

size_t tlpy_block_kept(void) {
  pthread_mutex_lock(&lock);
  size_t bytes = kept;
  pthread_mutex_unlock(&lock);
  return bytes;
}
