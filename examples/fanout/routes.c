/* examples/fanout/routes.c: the patch kernels as tenlane routes on a surface.
 *
 * Every kernel wraps the caller's column-major buffers as borrowed tensor views and calls
 * the route (tl_gemm_into; tl_qrcp_into, tl_lu_into and tl_triangular_solve_into of
 * linalg.h) on the surface in the backend, so the routes' temporaries come from that
 * surface's scratch arena: a lane's private arena inside tl_map, kept across the items
 * the lane pulls. Nothing here allocates. */
#include <stdio.h>

#include "tenlane/linalg.h"
#include "tenlane/ops.h"

#include "patch.h"

static tl_dtype tl_type(fan_dtype dtype) { return dtype == FAN_C128 ? TL_C128 : TL_F64; }

static int route_failed(fan_call *call, const char *route, tl_status status, int m, int n) {
  fan_tenlane_backend *self = call->backend;
  self->last_status = (int)status;
  snprintf(call->why, sizeof call->why, "%s (%d x %d) failed: %s: %s", route, m, n,
           tl_status_name(status), tl_exec_message(self->exec));
  return 1;
}

/* A borrowed column-major m x n view of caller memory with leading dimension ld. */
static tl_status wrap_matrix(fan_dtype dtype, const void *data, int m, int n, int ld,
                             tl_tensor *out) {
  int64_t shape[2] = {m, n};
  int64_t strides[2] = {1, ld};
  return tl_tensor_wrap(tl_type(dtype), 2, shape, strides, (void *)data, 0, out);
}

static int route_gemm(fan_call *call, int m, int n, int k, const void *a, int lda, const void *b,
                      int ldb, void *c, int ldc) {
  fan_tenlane_backend *self = call->backend;
  tl_tensor ta, tb, tc;
  tl_status status = wrap_matrix(call->dtype, a, m, k, lda, &ta);
  if (status == TL_OK) status = wrap_matrix(call->dtype, b, k, n, ldb, &tb);
  if (status == TL_OK) status = wrap_matrix(call->dtype, c, m, n, ldc, &tc);
  if (status == TL_OK)
    status = tl_gemm_into(self->exec, tl_scalar_real(1.0), &ta, &tb, tl_scalar_real(0.0), &tc);
  return status == TL_OK ? 0 : route_failed(call, "tl_gemm_into", status, m, n);
}

static int route_qrcp(fan_call *call, int m, int n, const void *a, int lda, double rtol, void *q,
                      int ldq, void *r, int ldr, int64_t *perm, int *rank) {
  fan_tenlane_backend *self = call->backend;
  int k = m < n ? m : n;
  tl_tensor ta, tq, tr;
  tl_truncation truncation = {sizeof(tl_truncation), 0, rtol, 0.0};
  int64_t rank64 = 0;
  tl_status status = wrap_matrix(call->dtype, a, m, n, lda, &ta);
  if (status == TL_OK) status = wrap_matrix(call->dtype, q, m, k, ldq, &tq);
  if (status == TL_OK) status = wrap_matrix(call->dtype, r, k, n, ldr, &tr);
  if (status == TL_OK) status = tl_qrcp_into(self->exec, &truncation, &ta, &tq, &tr, perm, &rank64);
  if (status != TL_OK) return route_failed(call, "tl_qrcp_into", status, m, n);
  *rank = (int)rank64;
  return 0;
}

static int route_lu(fan_call *call, int m, int n, const void *a, int lda, void *lu, int ldlu,
                    int64_t *pivots) {
  fan_tenlane_backend *self = call->backend;
  tl_tensor ta, tlu;
  tl_status status = wrap_matrix(call->dtype, a, m, n, lda, &ta);
  if (status == TL_OK) status = wrap_matrix(call->dtype, lu, m, n, ldlu, &tlu);
  if (status == TL_OK) status = tl_lu_into(self->exec, &ta, &tlu, pivots);
  return status == TL_OK ? 0 : route_failed(call, "tl_lu_into", status, m, n);
}

static int route_solve_right(fan_call *call, int lower, int unit, int m, int n, const void *t,
                             int ldt, const void *b, int ldb, void *x, int ldx) {
  fan_tenlane_backend *self = call->backend;
  tl_tensor tt, tb, tx;
  tl_status status = wrap_matrix(call->dtype, t, n, n, ldt, &tt);
  if (status == TL_OK) status = wrap_matrix(call->dtype, b, m, n, ldb, &tb);
  if (status == TL_OK) status = wrap_matrix(call->dtype, x, m, n, ldx, &tx);
  if (status == TL_OK)
    status = tl_triangular_solve_into(self->exec, TL_RIGHT, lower ? TL_LOWER : TL_UPPER,
                                      TL_NO_TRANS, unit ? TL_UNIT : TL_NON_UNIT, &tt, &tb, &tx);
  return status == TL_OK ? 0 : route_failed(call, "tl_triangular_solve_into", status, m, n);
}

const fan_ops fan_tenlane_ops = {"tenlane", route_gemm, route_qrcp, route_lu, route_solve_right};

void fan_tenlane_call_init(fan_call *call, fan_dtype dtype, fan_tenlane_backend *backend,
                           struct tl_exec *exec) {
  backend->exec = exec;
  backend->last_status = TL_OK;
  call->ops = &fan_tenlane_ops;
  call->dtype = dtype;
  call->backend = backend;
  call->why[0] = '\0';
}
