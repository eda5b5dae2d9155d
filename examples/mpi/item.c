/* examples/mpi/item.c: one patch on a lane's surface, for the ranks' phases.
 *
 * Every kernel of the patch is a tenlane route on the lane's child surface, as in
 * tenlane-fanout's variant (a), so a rank's results are bit-identical to the one-rank run
 * whatever the rank and lane counts. The patch's buffers live in one block per lane,
 * made on the lane's first item and kept, so the measured phases allocate nothing.
 *
 * Invariant: an item writes only its own result and its own lane's slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"

#include "mpi_fanout.h"

/* ---- The routes as fan_ops ------------------------------------------------------------ */

typedef struct route_backend {
  tl_exec *exec;
  tl_status last_status; /* the status of the route that failed, if one did */
} route_backend;

static int route_failed(fan_call *call, const char *route, tl_status status, int m, int n) {
  route_backend *self = call->backend;
  self->last_status = status;
  snprintf(call->why, sizeof call->why, "%s (%d x %d): %s: %s", route, m, n, tl_status_name(status),
           tl_exec_message(self->exec));
  return 1;
}

/* A borrowed column-major m x n view with leading dimension ld. */
static tl_status view(const double *data, int m, int n, int ld, tl_tensor *out) {
  int64_t shape[2] = {m, n};
  int64_t strides[2] = {1, ld};
  return tl_tensor_wrap(TL_F64, 2, shape, strides, (void *)data, 0, out);
}

static int route_gemm(fan_call *call, int m, int n, int k, const double *a, int lda,
                      const double *b, int ldb, double *c, int ldc) {
  route_backend *self = call->backend;
  tl_tensor ta, tb, tc;
  tl_status st = view(a, m, k, lda, &ta);
  if (st == TL_OK) st = view(b, k, n, ldb, &tb);
  if (st == TL_OK) st = view(c, m, n, ldc, &tc);
  if (st == TL_OK)
    st = tl_gemm_into(self->exec, tl_scalar_real(1.0), &ta, &tb, tl_scalar_real(0.0), &tc);
  return st == TL_OK ? 0 : route_failed(call, "tl_gemm_into", st, m, n);
}

static int route_qrcp(fan_call *call, int m, int n, const double *a, int lda, double rtol,
                      double *q, int ldq, double *r, int ldr, int64_t *perm, int *rank) {
  route_backend *self = call->backend;
  int k = m < n ? m : n;
  tl_tensor ta, tq, tr;
  tl_truncation cut = {0, rtol, 0.0};
  int64_t kept = 0;
  tl_status st = view(a, m, n, lda, &ta);
  if (st == TL_OK) st = view(q, m, k, ldq, &tq);
  if (st == TL_OK) st = view(r, k, n, ldr, &tr);
  if (st == TL_OK) st = tl_qrcp_into(self->exec, &ta, &cut, &tq, &tr, perm, &kept);
  if (st != TL_OK) return route_failed(call, "tl_qrcp_into", st, m, n);
  *rank = (int)kept;
  return 0;
}

static int route_lu(fan_call *call, int m, int n, const double *a, int lda, double *lu, int ldlu,
                    int64_t *pivots) {
  route_backend *self = call->backend;
  tl_tensor ta, tlu;
  tl_status st = view(a, m, n, lda, &ta);
  if (st == TL_OK) st = view(lu, m, n, ldlu, &tlu);
  if (st == TL_OK) st = tl_lu_into(self->exec, &ta, &tlu, pivots);
  return st == TL_OK ? 0 : route_failed(call, "tl_lu_into", st, m, n);
}

static int route_solve(fan_call *call, int lower, int unit, int m, int n, const double *t, int ldt,
                       const double *b, int ldb, double *x, int ldx) {
  route_backend *self = call->backend;
  tl_tensor tt, tb, tx;
  tl_status st = view(t, n, n, ldt, &tt);
  if (st == TL_OK) st = view(b, m, n, ldb, &tb);
  if (st == TL_OK) st = view(x, m, n, ldx, &tx);
  if (st == TL_OK)
    st = tl_triangular_solve_into(self->exec, TL_RIGHT, lower ? TL_LOWER : TL_UPPER, TL_NO_TRANS,
                                  unit ? TL_UNIT : TL_NON_UNIT, &tt, &tb, &tx);
  return st == TL_OK ? 0 : route_failed(call, "tl_triangular_solve_into", st, m, n);
}

static const fan_ops route_ops = {"tenlane", route_gemm, route_qrcp, route_lu, route_solve};

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
  route_backend backend = {exec, TL_OK};
  fan_call call;
  call.ops = &route_ops;
  call.backend = &backend;
  call.why[0] = '\0';
  int rc = fan_patch_run(ia->pb, item, &call, &slot->work, &ia->out[index]);
  /* A route that saw the run's cancellation (a peer's item failed) stopped this item; it
   * did not fail by itself, so it must never outrank the real failure. */
  if (rc && backend.last_status == TL_E_CANCELLED) return (int)TL_E_CANCELLED;
  return rc ? record_failure(slot, item, call.why) : 0;
}
