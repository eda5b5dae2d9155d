/* src/kernels/reduce.c: the reduce routes (tl_reduce_into, tl_reduce): argument checks,
 * the plan's axes, its scratch, and the split of its items over the surface. The loops are
 * in reduce_core.c.
 *
 * Invariants: all checks precede the first write; an empty reduction gives the identity
 * (0, 1, -inf, +inf, 0); max and min propagate NaN. */
#include <string.h>

#include "base/base.h"
#include "exec/exec.h"
#include "reduce_core.h"

/* The checks on op, x, out and the axes, before anything is planned: the reduced axes as a
 * bit mask in *reduced. */
static tl_status check_args(tl_reduce_op op, const tl_tensor *x, int axis_count, const int *axes,
                            const tl_tensor *out, uint64_t *reduced) {
  tl_status status;
  if ((unsigned)op > TL_REDUCE_NORM2)
    return tl__fail(TL_E_INVALID, "op %d is not a tl_reduce_op", (int)op);
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if (axis_count < 0 || axis_count > x->rank)
    return tl__fail(TL_E_INVALID, "axis_count %d outside [0, %d]", axis_count, x->rank);
  if (axis_count > 0 && axes == NULL) return tl__fail(TL_E_INVALID, "axes is NULL");
  *reduced = 0;
  for (int i = 0; i < axis_count; i++) {
    if (axes[i] < 0 || axes[i] >= x->rank)
      return tl__fail(TL_E_INVALID, "axes[%d] = %d outside [0, %d)", i, axes[i], x->rank);
    if (*reduced & ((uint64_t)1 << axes[i]))
      return tl__fail(TL_E_INVALID, "axes[%d] = %d is listed twice", i, axes[i]);
    *reduced |= (uint64_t)1 << axes[i];
  }
  if (tl_dtype_is_complex(x->dtype) && (op == TL_REDUCE_MAX || op == TL_REDUCE_MIN))
    return tl__fail(TL_E_DTYPE, "max and min need a real dtype, x is %s", tl_dtype_name(x->dtype));
  tl_dtype out_dtype = op == TL_REDUCE_NORM2 ? tl_dtype_real(x->dtype) : x->dtype;
  if ((status = tl__check_dtype(out, "out", out_dtype)) != TL_OK) return status;
  if (out->rank != x->rank - axis_count && !(out->rank == x->rank && axis_count > 0))
    return tl__fail(TL_E_SHAPE, "out has rank %d; reducing %d of x's %d axes needs rank %d or %d",
                    out->rank, axis_count, x->rank, x->rank - axis_count, x->rank);
  return TL_OK;
}

static tl_status reduce_into_impl(tl_exec *exec, tl_reduce_op op, const tl_tensor *x,
                                  int axis_count, const int *axes, tl_tensor *out) {
  uint64_t reduced = 0;
  tl_status status = check_args(op, x, axis_count, axes, out, &reduced);
  if (status != TL_OK) return status;
  int cplx = tl_dtype_is_complex(x->dtype);
  tl_dtype out_dtype = op == TL_REDUCE_NORM2 ? tl_dtype_real(x->dtype) : x->dtype;
  int keepdims = out->rank == x->rank && axis_count > 0;
  tl__reduce_plan *pl;
  if ((status = tl__exec_scratch(exec, sizeof *pl, 64, (void **)&pl)) != TL_OK) return status;
  memset(pl, 0, sizeof *pl);
  int64_t key_k[TL_MAX_RANK], key_r[TL_MAX_RANK];
  for (int k = 0, o = 0; k < x->rank; k++) {
    int is_reduced = (int)((reduced >> k) & 1);
    if (!is_reduced || keepdims) {
      int64_t want = is_reduced ? 1 : x->shape[k];
      if (out->shape[o] != want)
        return tl__fail(TL_E_SHAPE, "out axis %d has extent %lld, expected %lld (x axis %d%s)", o,
                        (long long)out->shape[o], (long long)want, k,
                        is_reduced ? ", reduced" : "");
    }
    if (is_reduced) {
      if (x->shape[k] != 1) {
        pl->re[pl->nr] = x->shape[k];
        pl->rx[pl->nr] = x->strides[k];
        key_r[pl->nr] = tl__abs64(x->strides[k]);
        pl->nr++;
      }
      if (keepdims) o++;
    } else {
      if (x->shape[k] != 1) {
        pl->ke[pl->nk] = x->shape[k];
        pl->kx[pl->nk] = x->strides[k];
        pl->ko[pl->nk] = out->strides[o];
        key_k[pl->nk] = tl__abs64(out->strides[o]);
        pl->nk++;
      }
      o++;
    }
  }
  if ((status = tl__check_no_overlap(out, "out", x, "x")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  if (tl_tensor_numel(out) == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the first element was written");
  tl__reduce_sort_axes(pl->nr, key_r, pl->re, pl->rx, NULL);
  tl__reduce_sort_axes(pl->nk, key_k, pl->ke, pl->kx, pl->ko);
  pl->op = op;
  pl->dtype = x->dtype;
  pl->out_dtype = out_dtype;
  pl->complex_in = cplx;
  pl->xes = (int64_t)tl_dtype_size(x->dtype);
  pl->oes = (int64_t)tl_dtype_size(out_dtype);
  pl->xbase = (const char *)x->data + x->offset * pl->xes;
  pl->obase = (char *)out->data + out->offset * pl->oes;
  tl__reduce_plan_modes(pl, team, tl_tensor_numel(out));
  atomic_int stopped = 0;
  pl->exec = exec;
  pl->stopped = &stopped;
  int64_t total = pl->total;
  if (pl->parts > 1) {
    size_t per = pl->inner_mode ? 2 : 2 * CHUNK;
    size_t bytes = (size_t)pl->out_items * (size_t)pl->parts * per * sizeof(double);
    if ((status = tl__exec_scratch(exec, bytes, 64, (void **)&pl->partials)) != TL_OK)
      return status;
  }
  if (!pl->inner_mode && pl->parts == 1) {
    /* accumulators: one block per pool worker and one for the calling thread (slot 0) */
    size_t slots = tl__exec_thread_slots(exec);
    size_t bytes = slots * 2 * CHUNK * sizeof(double);
    if ((status = tl__exec_scratch(exec, bytes, 64, (void **)&pl->acc_slots)) != TL_OK)
      return status;
  }
  size_t work = (size_t)(pl->out_items * pl->parts);
  int parallel = team > 1 && total >= TL__PARALLEL_MIN_ELEMENTS && work > 1;
  int64_t per_item = total / (int64_t)(work > 0 ? work : 1);
  int64_t grain = 32768 / (per_item > 0 ? per_item : 1);
  /* whole groups of four items, as the inner mode sums rows (reduce_core.c): a chunk of ten
   * sent two of every ten items through the one-row sum */
  if (grain > 4) grain = grain / 4 * 4;
  int64_t max_grain = ((int64_t)work + team * 4 - 1) / (team * 4);
  if (grain > max_grain) grain = max_grain;
  /* on one thread, blocked items go a whole block to a chunk (their row walks look at the
   * flag themselves): a chunk of one item read its rows' runs alone, far apart */
  if (!parallel && pl->blocked)
    grain = pl->ke[0] < TL__REDUCE_ITEM_BLOCK ? pl->ke[0] : TL__REDUCE_ITEM_BLOCK;
  if (grain < 1) grain = 1;
  status = tl__exec_run_chunks(exec, parallel, work, (size_t)grain, tl__reduce_run, pl, "reducing");
  /* seen inside an item: the work units not started were skipped too */
  if (atomic_load_explicit(&stopped, memory_order_relaxed))
    return tl__fail(TL_E_CANCELLED,
                    "cancelled while reducing %lld input elements into %lld outputs: stopped "
                    "inside a run (output unspecified)",
                    (long long)total, (long long)tl_tensor_numel(out));
  if (status != TL_OK) return status;
  if (pl->parts > 1) tl__reduce_combine(pl);
  return TL_OK;
}

tl_status tl_reduce_into(tl_exec *exec, tl_reduce_op op, const tl_tensor *x, int axis_count,
                         const int *axes, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_reduce_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, reduce_into_impl(exec, op, x, axis_count, axes, out));
}

tl_status tl_reduce(tl_exec *exec, tl_reduce_op op, const tl_tensor *x, int axis_count,
                    const int *axes, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_reduce");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "out is NULL"));
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return tl__exec_end(exec, status);
  if (axis_count < 0 || axis_count > x->rank || (axis_count > 0 && axes == NULL))
    return tl__exec_end(exec, tl__fail(TL_E_INVALID, "axis_count %d (axes %p) for x of rank %d",
                                       axis_count, (const void *)axes, x->rank));
  int64_t shape[TL_MAX_RANK];
  int rank = 0;
  for (int k = 0; k < x->rank; k++) {
    int is_reduced = 0;
    for (int i = 0; i < axis_count; i++) is_reduced |= axes[i] == k;
    if (!is_reduced) shape[rank++] = x->shape[k];
  }
  if ((unsigned)op > TL_REDUCE_NORM2)
    return tl__exec_end(exec, tl__fail(TL_E_INVALID, "op %d is not a tl_reduce_op", (int)op));
  tl_dtype out_dtype = op == TL_REDUCE_NORM2 ? tl_dtype_real(x->dtype) : x->dtype;
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, out_dtype, rank, shape, &fresh)) != TL_OK)
    return tl__exec_end(exec, status);
  status = reduce_into_impl(exec, op, x, axis_count, axes, &fresh);
  if (status != TL_OK)
    tl_tensor_release(&fresh);
  else
    *out = fresh;
  return tl__exec_end(exec, status);
}
