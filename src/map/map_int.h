/* src/map/map_int.h: how a map's lanes size the runs of items they take (src/map/chunk.c).
 * Pure functions of their arguments, so the tests can drive them without threads. */
#ifndef TL_MAP_INT_H
#define TL_MAP_INT_H

#include <stddef.h>
#include <stdint.h>

/* A chunk is grown while a whole one runs shorter than this, and shrunk when one runs
 * longer than four times this. */
#define TL__MAP_CHUNK_TARGET_NS 20000u
/* The largest chunk a lane asks for. */
#define TL__MAP_CHUNK_MAX 4096u

/* The size of the next chunk to take: `wanted` (the lane's own size), at most the items
 * left (count - taken) over twice the lanes, and at least 1. */
size_t tl__map_chunk_bound(size_t count, size_t taken, size_t lanes, size_t wanted);

/* The lane's size after a chunk of `chunk` items took `took_ns`: doubled (up to
 * TL__MAP_CHUNK_MAX) when it ran shorter than the target, halved (down to 1) when it ran
 * longer than four times the target, else unchanged. */
size_t tl__map_chunk_next(size_t chunk, uint64_t took_ns);

#endif
