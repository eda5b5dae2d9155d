/* examples/mpi/item.c: one patch on a lane's surface, for the ranks' phases.
 *
 * Every kernel of the patch is a tenlane route on the lane's child surface (the
 * tenlane_fanout_patch library's fan_tenlane_ops, as in tenlane-fanout's variant (a)), so a rank's
 * results are bit-identical to the one-rank run whatever the rank and lane counts. The patch's
 * buffers live in one block per lane, made on the lane's first item and kept, so the measured
 * phases allocate nothing.
 *
 * Invariant: an item writes only its own result and its own lane's slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/map.h"

#include "mpi_fanout.h"

/* ---- The item ------------------------------------------------------------------------- */

static int injected(const mpi_options *opt, size_t item) {
  for (int i = 0; i < opt->fail_count; i++)
    if (opt->fail_items[i] == item) return 1;
  return 0;
}

static int record_failure(mpi_lane_slot *slot, size_t item, const char *why) {
  if (!slot->failed || item < slot->failed_item) {
    slot->failed = 1;
    slot->failed_item = item;
    snprintf(slot->why, sizeof slot->why, "%s", why);
  }
  return 1;
}

int mpi_item(tl_exec *exec, size_t index, int lane_index, void *arg) {
  mpi_item_arg *ia = arg;
  size_t item = ia->first + index;
  if (lane_index < 0 || lane_index >= ia->slot_count) return 1;
  mpi_lane_slot *slot = &ia->slots[lane_index];
  if (!slot->block) {
    size_t bytes = (fan_work_bytes(ia->pb) + 63) & ~(size_t)63;
    slot->block = aligned_alloc(64, bytes);
    if (!slot->block) return record_failure(slot, item, "out of memory for the lane's buffers");
    fan_work_carve(ia->pb, slot->block, &slot->work);
  }
  if (injected(ia->opt, item)) {
    char why[64];
    snprintf(why, sizeof why, "injected failure (--fail-item %zu)", item);
    return record_failure(slot, item, why);
  }
  fan_tenlane_backend backend;
  fan_call call;
  fan_tenlane_call_init(&call, ia->pb->dtype, &backend, exec);
  int rc = fan_patch_run(ia->pb, item, &call, &slot->work, &ia->out[index]);
  /* A route that saw the run's cancellation (a peer's item failed) stopped this item; it
   * did not fail by itself, so it must never outrank the real failure. */
  if (rc && backend.last_status == (int)TL_E_CANCELLED) return (int)TL_E_CANCELLED;
  return rc ? record_failure(slot, item, call.why) : 0;
}
