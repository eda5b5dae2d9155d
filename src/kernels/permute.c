/* src/kernels/permute.c: the permute, copy and reshape routes.
 *
 * Invariant: all checks precede the first write; the copy itself is the permute core
 * (permute_core.c) run over the surface in blocks. Reshape follows column-major element
 * order and returns a view whenever tl_tensor_reshape_view can make one. */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

static tl_status check_perm(const int *perm, int rank) {
  if (perm == NULL && rank > 0) return tl__fail(TL_E_INVALID, "perm is NULL");
  uint64_t seen = 0;
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || (seen & ((uint64_t)1 << perm[k])))
      return tl__fail(TL_E_INVALID, "perm[%d] = %d: not a permutation of 0..%d", k, perm[k],
                      rank - 1);
    seen |= (uint64_t)1 << perm[k];
  }
  return TL_OK;
}

static tl_status permute_into_impl(tl_exec *exec, const tl_tensor *x, const int *perm,
                                   tl_tensor *out) {
  tl_status status;
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if ((status = check_perm(perm, x->rank)) != TL_OK) return status;
  if ((status = tl__check_dtype(out, "out", x->dtype)) != TL_OK) return status;
  if (out->rank != x->rank)
    return tl__fail(TL_E_SHAPE, "out has rank %d, x has rank %d", out->rank, x->rank);
  tl_tensor view;
  if ((status = tl_tensor_permute_view(x, perm, &view)) != TL_OK) return status;
  for (int k = 0; k < x->rank; k++) {
    if (out->shape[k] != view.shape[k])
      return tl__fail(TL_E_SHAPE, "out axis %d has extent %lld, x axis perm[%d] = %d has %lld", k,
                      (long long)out->shape[k], k, perm[k], (long long)view.shape[k]);
  }
  if ((status = tl__check_no_overlap(out, "out", x, "x")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  return tl__copy_execute(exec, team, out, &view);
}

tl_status tl_permute_into(tl_exec *exec, const tl_tensor *x, const int *perm, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_permute_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, permute_into_impl(exec, x, perm, out));
}

tl_status tl_permute(tl_exec *exec, const tl_tensor *x, const int *perm, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_permute");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "out is NULL"));
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return tl__exec_end(exec, status);
  if ((status = check_perm(perm, x->rank)) != TL_OK) return tl__exec_end(exec, status);
  int64_t shape[TL_MAX_RANK];
  for (int k = 0; k < x->rank; k++) shape[k] = x->shape[perm[k]];
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, x->dtype, x->rank, shape, &fresh)) != TL_OK)
    return tl__exec_end(exec, status);
  status = permute_into_impl(exec, x, perm, &fresh);
  if (status != TL_OK)
    tl_tensor_release(&fresh);
  else
    *out = fresh;
  return tl__exec_end(exec, status);
}

/* ---- reshape -------------------------------------------------------------------------- */

/* t viewed with a new shape under column-major strides (t must be column-major dense). */
static tl_tensor as_col_major(const tl_tensor *t, int rank, const int64_t *shape) {
  tl_tensor v = *t;
  v.owned = NULL;
  v.rank = rank;
  for (int k = 0; k < rank; k++) v.shape[k] = shape[k];
  tl_strides_col_major(rank, shape, v.strides);
  return v;
}

static tl_status reshape_into_impl(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {
  tl_status status;
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if ((status = tl__check_dtype(out, "out", x->dtype)) != TL_OK) return status;
  int64_t nx = tl_tensor_numel(x), no = tl_tensor_numel(out);
  if (nx != no)
    return tl__fail(TL_E_SHAPE, "out has %lld elements, x has %lld", (long long)no, (long long)nx);
  if ((status = tl__check_no_overlap(out, "out", x, "x")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  tl_tensor view;
  /* out seen with x's shape, or x seen with out's shape: then one strided copy. */
  if (tl_tensor_reshape_view(out, x->rank, x->shape, &view) == TL_OK)
    return tl__copy_execute(exec, team, &view, x);
  if (tl_tensor_reshape_view(x, out->rank, out->shape, &view) == TL_OK)
    return tl__copy_execute(exec, team, out, &view);
  /* Neither: go through a column-major scratch copy of x. */
  void *buffer;
  size_t bytes = (size_t)nx * tl_dtype_size(x->dtype);
  if ((status = tl__exec_scratch(exec, bytes ? bytes : 64, 64, &buffer)) != TL_OK) return status;
  tl_tensor tmp = *x;
  tmp.owned = NULL;
  tmp.data = buffer;
  tmp.offset = 0;
  tl_strides_col_major(x->rank, x->shape, tmp.strides);
  if ((status = tl__copy_execute(exec, team, &tmp, x)) != TL_OK) return status;
  tl_tensor flat = as_col_major(&tmp, out->rank, out->shape);
  return tl__copy_execute(exec, team, out, &flat);
}

tl_status tl_reshape_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_reshape_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, reshape_into_impl(exec, x, out));
}

static tl_status reshape_impl(tl_exec *exec, const tl_tensor *x, int rank, const int64_t *shape,
                              tl_tensor *out) {
  tl_status status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if (rank < 0 || rank > TL_MAX_RANK)
    return tl__fail(TL_E_INVALID, "rank %d outside [0, %d]", rank, TL_MAX_RANK);
  if (rank > 0 && shape == NULL) return tl__fail(TL_E_INVALID, "shape is NULL");
  tl_tensor view;
  status = tl_tensor_reshape_view(x, rank, shape, &view);
  if (status == TL_OK) {
    *out = view;
    return TL_OK;
  }
  if (status != TL_E_UNAVAILABLE) return status;
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, x->dtype, rank, shape, &fresh)) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) {
    tl_tensor_release(&fresh);
    return status;
  }
  tl_tensor target = as_col_major(&fresh, x->rank, x->shape);
  status = tl__copy_execute(exec, team, &target, x);
  if (status != TL_OK) {
    tl_tensor_release(&fresh);
    return status;
  }
  *out = fresh;
  return TL_OK;
}

tl_status tl_reshape(tl_exec *exec, int rank, const int64_t *shape, const tl_tensor *x,
                     tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_reshape");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, reshape_impl(exec, x, rank, shape, out));
}
