/* tenlane/map.h: an ordered map over items, built on a phase.
 *
 * Items 0..count-1 are pulled by the lanes from one shared atomic counter, so faster
 * lanes take more items. A lane takes a run of consecutive items at once when its items
 * are short (a whole run under 20 us), growing the run while they stay short, and one item
 * at a time when they are long; near the end the runs shrink so every lane keeps taking.
 * Each item's callback runs on its lane's child surface. Results
 * belong to the caller, kept per item (index your own array by the item number). On a
 * failure the lanes stop pulling, the items they hold finish (a failure does not cancel
 * them), every lane joins, and the lowest item that did not return 0 is reported: every
 * item below it has run to its own result. That item either failed (TL_E_LANE) or stopped
 * on cancellation (TL_E_CANCELLED), whatever items above it returned. */
#ifndef TENLANE_MAP_H
#define TENLANE_MAP_H

#include <stddef.h>

#include "tenlane/export.h"
#include "tenlane/phase.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return 0 for success, or a non-zero code that fails the map. Return TL_E_CANCELLED (as an
 * int) when the item stopped because the run was cancelled (a route on the lane's surface
 * returned TL_E_CANCELLED): such an item is not a failure, but it stops the map like one;
 * when it is the lowest item that did not return 0, the map returns TL_E_CANCELLED and
 * reports it (a failing item above it is named in the message only). */
typedef int (*tl_map_fn)(tl_exec *exec, size_t item, int lane_index, void *arg);

typedef struct tl_map_outcome {
  size_t items_done;  /* items whose callback returned 0 */
  int failed;         /* 1 when some item failed or was cancelled (or a lane's entry failed) */
  size_t failed_item; /* the lowest item that did not return 0 (every item below it ran),
                         when failed and it was an item */
  int code;           /* that item's return value (TL_E_CANCELLED for a cancelled item) */
  tl_status status;   /* TL_OK, TL_E_LANE for an item failure, TL_E_CANCELLED for an item
                         stopped on cancellation, or the entry failure */
  char message[TL_MESSAGE_CAPACITY];
} tl_map_outcome;

/* Run fn over items 0..count-1 in a phase of its own on `session`. Returns TL_OK, TL_E_LANE
 * when an item failed, TL_E_CANCELLED when the lowest item that did not return 0 stopped on
 * cancellation (see *outcome), or any error of tl_session_phase / tl_phase_run.
 * *outcome may be NULL. Session's thread only. */
TL_API tl_status tl_map(tl_session *session, size_t count, tl_map_fn fn, void *arg,
                        tl_map_outcome *outcome);

typedef struct tl_map_options {
  size_t size;   /* sizeof(tl_map_options), set by tl_map_options_init */
  int max_lanes; /* at most this many lanes take items (lanes 0..max_lanes-1); 0 = every lane.
                    Compares 1 and 2 lanes on one context without a second one. */
} tl_map_options;

/* Fill `options` with the defaults (every lane) and set its size. NULL is ignored. Any
 * thread. */
TL_API void tl_map_options_init(tl_map_options *options);

/* tl_map with options (NULL = the defaults, as tl_map; borrowed for the call). Session's
 * thread only. Errors: those of tl_map, and TL_E_INVALID for max_lanes < 0 or an options
 * size below the first version's (options not filled by tl_map_options_init). A max_lanes above the
 * context's budget means every lane. The lanes above the cap still enter and leave the phase; they
 * pull no item. */
TL_API tl_status tl_map_ex(tl_session *session, const tl_map_options *options, size_t count,
                           tl_map_fn fn, void *arg, tl_map_outcome *outcome);

/* The same inside an open phase (one tl_phase_run). */
TL_API tl_status tl_phase_map(tl_phase *phase, size_t count, tl_map_fn fn, void *arg,
                              tl_map_outcome *outcome);

#ifdef __cplusplus
}
#endif
#endif
