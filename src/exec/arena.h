/* src/exec/arena.h: the scratch arena. A bump allocator over a list of chunks that
 * it keeps: reset (back to a mark) forgets contents but keeps memory, release gives the
 * memory back. After a first run has grown it, a repeated operation takes scratch without
 * touching the heap. The bytes it may hold are capped by the context's scratch limit. */
#ifndef TL_EXEC_ARENA_H
#define TL_EXEC_ARENA_H

#include <stddef.h>

#include "tenlane/status.h"

typedef struct tl__arena_chunk tl__arena_chunk;

typedef struct tl__arena {
  tl__arena_chunk *first;   /* chunks in order; all kept until release */
  tl__arena_chunk *current; /* chunk the next allocation is tried in */
  size_t used;              /* bytes used in current */
  size_t reserved;          /* bytes held in all chunks */
  size_t limit;             /* cap on reserved (SIZE_MAX: only the allocator limits it) */
  size_t growths;           /* chunks allocated since init or release */
} tl__arena;

typedef struct tl__arena_mark {
  tl__arena_chunk *chunk;
  size_t used;
} tl__arena_mark;

void tl__arena_init(tl__arena *arena, size_t limit);
/* Give every chunk back; the arena is empty and usable again. */
void tl__arena_release(tl__arena *arena);
/* Forget every allocation, keep the chunks. */
void tl__arena_reset(tl__arena *arena);

tl__arena_mark tl__arena_mark_get(const tl__arena *arena);
/* Forget allocations made after `mark`. */
void tl__arena_reset_to(tl__arena *arena, tl__arena_mark mark);

/* `bytes` of scratch aligned to `align` (power of two, <= 4096) in *out. Errors:
 * TL_E_SCRATCH_LIMIT when the limit would be exceeded, TL_E_NOMEM; both leave a message. */
tl_status tl__arena_alloc(tl__arena *arena, size_t bytes, size_t align, void **out);

#endif
