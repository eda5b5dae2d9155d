/* src/exec/arena.c: the scratch arena (see arena.h). Chunks are kept in a list and
 * reused after a reset, so a surface that repeats an operation takes scratch without any
 * heap traffic once its first run has grown it. The limit caps the bytes held. */
#include <assert.h>
#include <stdint.h>
#include "arena.h"

#include "base/base.h"

struct tl__arena_chunk {
  tl__arena_chunk *next;
  size_t capacity; /* usable bytes after the header */
  /* data follows, aligned to 64 */
};

#define TL__CHUNK_HEADER 64
#define TL__CHUNK_MIN (64u * 1024u)

static unsigned char *chunk_data(tl__arena_chunk *chunk) {
  return (unsigned char *)chunk + TL__CHUNK_HEADER;
}

void tl__arena_init(tl__arena *arena, size_t limit) {
  arena->first = NULL;
  arena->current = NULL;
  arena->used = 0;
  arena->reserved = 0;
  arena->limit = limit;
  arena->growths = 0;
}

void tl__arena_release(tl__arena *arena) {
  tl__arena_chunk *chunk = arena->first;
  while (chunk != NULL) {
    tl__arena_chunk *next = chunk->next;
    tl__free(chunk);
    chunk = next;
  }
  tl__arena_init(arena, arena->limit);
}

void tl__arena_reset(tl__arena *arena) {
  arena->current = arena->first;
  arena->used = 0;
}

tl__arena_mark tl__arena_mark_get(const tl__arena *arena) {
  tl__arena_mark mark = {arena->current, arena->used};
  return mark;
}

void tl__arena_reset_to(tl__arena *arena, tl__arena_mark mark) {
  assert(mark.chunk != NULL || mark.used == 0);
  arena->current = mark.chunk;
  arena->used = mark.used;
  if (arena->current == NULL) arena->current = arena->first, arena->used = 0;
}

/* Try to place the request in `chunk` after `used` bytes; 1 and *offset on success. The
 * address is aligned, not the offset: chunk data is only 64-aligned, and `align` may be up
 * to 4096. offset + bytes <= capacity on success, so `used` never passes the capacity. */
static int fits(tl__arena_chunk *chunk, size_t used, size_t bytes, size_t align, size_t *offset) {
  uintptr_t base = (uintptr_t)chunk_data(chunk);
  size_t skew = (size_t)(base & (align - 1)), start;
  if (!tl__size_add(used, skew, &start) || !tl__size_align_up(start, align, &start) ||
      start - skew > chunk->capacity || chunk->capacity - (start - skew) < bytes)
    return 0;
  *offset = start - skew;
  return 1;
}

tl_status tl__arena_alloc(tl__arena *arena, size_t bytes, size_t align, void **out) {
  if (align == 0) align = 16;
  if (align > 4096 || (align & (align - 1)) != 0)
    return tl__fail(TL_E_INVALID, "scratch alignment %zu is not a power of two <= 4096", align);
  if (bytes == 0) bytes = 1;
  size_t offset = 0;
  /* The current chunk, then the chunks after it that a reset left behind. */
  tl__arena_chunk *chunk = arena->current;
  size_t used = arena->used;
  while (chunk != NULL) {
    if (fits(chunk, used, bytes, align, &offset)) {
      arena->current = chunk;
      arena->used = offset + bytes;
      *out = chunk_data(chunk) + offset;
      return TL_OK;
    }
    chunk = chunk->next;
    used = 0;
  }
  /* Grow geometrically: a new chunk at least as big as everything held so far and twice
   * the request, so a stream of slowly growing requests grows the arena a handful of
   * times, not once per call. Near the limit the chunk is cut to what the limit allows. */
  size_t need;
  if (!tl__size_add(bytes, align, &need))
    return tl__fail(TL_E_SCRATCH_LIMIT, "scratch request of %zu bytes overflows", bytes);
  size_t capacity = arena->reserved > TL__CHUNK_MIN ? arena->reserved : TL__CHUNK_MIN;
  size_t headroom;
  if (tl__size_mul(need, 2, &headroom) && capacity < headroom) capacity = headroom;
  if (capacity < need) capacity = need;
  if (need > arena->limit || arena->reserved > arena->limit - need)
    return tl__fail(TL_E_SCRATCH_LIMIT,
                    "scratch request of %zu bytes exceeds the scratch limit (%zu bytes, %zu "
                    "already held)",
                    bytes, arena->limit, arena->reserved);
  if (capacity > arena->limit - arena->reserved) capacity = arena->limit - arena->reserved;
  /* Every sum is checked: with no limit (SIZE_MAX), or a request near SIZE_MAX, an unchecked
   * header plus capacity wraps to a small block (issue 28). */
  size_t total;
  if (!tl__size_add(TL__CHUNK_HEADER, capacity, &total))
    return tl__fail(TL_E_SCRATCH_LIMIT,
                    "scratch request of %zu bytes overflows with the chunk header (%d bytes)",
                    bytes, TL__CHUNK_HEADER);
  tl__arena_chunk *fresh = tl__alloc(total, 64);
  if (fresh == NULL && arena->limit == SIZE_MAX)
    return tl__fail(TL_E_NOMEM,
                    "the allocator gave no memory for a scratch chunk of %zu bytes (%zu bytes "
                    "of scratch already held; no scratch limit is set)",
                    total, arena->reserved);
  if (fresh == NULL)
    return tl__fail(TL_E_NOMEM,
                    "the allocator gave no memory for a scratch chunk of %zu bytes (%zu bytes "
                    "of scratch already held; the scratch limit is %zu bytes)",
                    total, arena->reserved, arena->limit);
  arena->growths++;
  fresh->next = NULL;
  fresh->capacity = capacity;
  /* Append at the end of the list so chunks keep their order for marks. */
  if (arena->first == NULL) {
    arena->first = fresh;
  } else {
    tl__arena_chunk *last = arena->first;
    while (last->next != NULL) last = last->next;
    last->next = fresh;
  }
  arena->reserved += capacity; /* <= limit: capacity was cut to limit - reserved above */
  /* Fits: capacity >= need = bytes + align covers any alignment slack. */
  fits(fresh, 0, bytes, align, &offset);
  arena->current = fresh;
  arena->used = offset + bytes;
  *out = chunk_data(fresh) + offset;
  return TL_OK;
}
