/* src/map/chunk.c: the size of the runs of consecutive items a map's lane takes at once.
 *
 * Taking an item number moves the shared counter's cache line to the taking core: a
 * cross-core round trip, a fraction of a microsecond (more on a virtual machine). Items of
 * about a microsecond would pay it on every item, so a lane takes a run (a chunk) and
 * sizes the next one from how long the last one took: short chunks double, long ones
 * halve. A lane starts at one item, so items that each run longer than the target are
 * still taken one at a time. The guided bound keeps the last items spread over every
 * lane: a chunk never holds more than the items left over twice the lanes. */
#include "map/map_int.h"

size_t tl__map_chunk_bound(size_t count, size_t taken, size_t lanes, size_t wanted) {
  if (wanted < 1) wanted = 1;
  if (taken >= count) return 1;
  size_t guided = (count - taken) / (2 * (lanes > 0 ? lanes : 1));
  if (guided < 1) guided = 1;
  return wanted < guided ? wanted : guided;
}

size_t tl__map_chunk_next(size_t chunk, uint64_t took_ns) {
  if (chunk < 1) return 1;
  if (took_ns < TL__MAP_CHUNK_TARGET_NS) return chunk < TL__MAP_CHUNK_MAX ? chunk * 2 : chunk;
  if (took_ns > 4 * (uint64_t)TL__MAP_CHUNK_TARGET_NS && chunk > 1) return chunk / 2;
  return chunk;
}
