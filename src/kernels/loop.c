/* src/kernels/loop.c: strided loop plans over up to four operands of one shape.
 *
 * Invariant: the plan visits every index of the common shape exactly once, and axis 0 of
 * the plan is the one along which the output (operand 0) is densest, so a row kernel
 * writes memory in order. Axes are merged only where every operand is contiguous across
 * them, so merging never changes which elements pair up. */
#include <assert.h>
#include <string.h>

#include "kernels.h"

void tl__loop_plan(tl__loop *loop, int ops, const tl_tensor *const *tensors) {
  assert(ops >= 1 && ops <= TL__LOOP_MAX_OPS);
  const tl_tensor *out = tensors[0];
  memset(loop, 0, sizeof *loop);
  loop->ops = ops;
  int empty = 0;
  for (int k = 0; k < out->rank; k++) empty |= out->shape[k] == 0;
  for (int i = 0; i < ops; i++) {
    loop->esize[i] = (int64_t)tl_dtype_size(tensors[i]->dtype);
    /* An empty operand may have no storage at all: no offset is applied to a NULL base.
     * offset x esize, and below (extent - 1) x stride x esize, lie inside the validated byte
     * span (tl_tensor_validate), so they fit int64. */
    char *data = tensors[i]->data;
    loop->base[i] = data == NULL ? NULL : data + tensors[i]->offset * loop->esize[i];
  }
  if (empty) {
    loop->rank = 1;
    loop->shape[0] = 0;
    loop->inner = 0;
    loop->rows = 0;
    return;
  }
  /* Keep the axes of extent > 1, flipping negative output strides. */
  int axis_of[TL_MAX_RANK];
  int n = 0;
  for (int k = 0; k < out->rank; k++) {
    if (out->shape[k] == 1) continue;
    axis_of[n++] = k;
  }
  int64_t shape[TL_MAX_RANK], strides[TL__LOOP_MAX_OPS][TL_MAX_RANK];
  for (int j = 0; j < n; j++) {
    int k = axis_of[j];
    shape[j] = out->shape[k];
    int flip = out->strides[k] < 0;
    for (int i = 0; i < ops; i++) {
      int64_t s = tensors[i]->strides[k];
      if (flip) {
        loop->base[i] += (shape[j] - 1) * s * loop->esize[i];
        s = -s;
      }
      strides[i][j] = s;
    }
  }
  /* Order axes by the output's stride (ties: by the inputs'), insertion sort: n <= 16. */
  int order[TL_MAX_RANK];
  for (int j = 0; j < n; j++) {
    int pos = j;
    while (pos > 0) {
      int prev = order[pos - 1];
      int before = 0;
      for (int i = 0; i < ops; i++) {
        int64_t sp = tl__abs64(strides[i][prev]), sj = tl__abs64(strides[i][j]);
        if (sp != sj) {
          before = sp > sj;
          break;
        }
      }
      if (!before) break;
      order[pos] = prev;
      pos--;
    }
    order[pos] = j;
  }
  /* Merge neighbours where every operand is contiguous across them. */
  int r = 0;
  for (int j = 0; j < n; j++) {
    int src = order[j];
    if (r > 0) {
      int merge = 1;
      for (int i = 0; i < ops && merge; i++)
        merge = strides[i][src] == loop->strides[i][r - 1] * loop->shape[r - 1];
      /* stride x extent: (extent - 1) x stride is inside the span (< 2^61 elements, esize
       * >= 4) and so is one more stride, so the product fits. */
      if (merge) {
        loop->shape[r - 1] *= shape[src];
        continue;
      }
    }
    loop->shape[r] = shape[src];
    for (int i = 0; i < ops; i++) loop->strides[i][r] = strides[i][src];
    r++;
  }
  if (r == 0) {
    r = 1;
    loop->shape[0] = 1;
    for (int i = 0; i < ops; i++) loop->strides[i][0] = 1;
  }
  loop->rank = r;
  loop->inner = loop->shape[0];
  loop->rows = 1;
  /* Bounded: extents of a non-empty validated tensor multiply to its element count, which
   * tl_tensor_validate keeps in int64; merged extents are products of some of them. */
  for (int k = 1; k < r; k++) loop->rows *= loop->shape[k];
}

void tl__loop_run(const tl__loop *loop, int64_t row_begin, int64_t row_end, tl__row_fn fn,
                  const void *params) {
  if (row_begin >= row_end || loop->inner == 0) return;
  const int ops = loop->ops, rank = loop->rank;
  int64_t idx[TL_MAX_RANK];
  char *p[TL__LOOP_MAX_OPS];
  int64_t s0[TL__LOOP_MAX_OPS];
  /* The starting multi-index of row_begin over axes 1..rank-1 (one division per axis). */
  int64_t rem = row_begin;
  for (int i = 0; i < ops; i++) {
    p[i] = loop->base[i];
    s0[i] = loop->strides[i][0];
  }
  for (int k = 1; k < rank; k++) {
    idx[k] = rem % loop->shape[k];
    rem /= loop->shape[k];
    for (int i = 0; i < ops; i++) p[i] += idx[k] * loop->strides[i][k] * loop->esize[i];
  }
  for (int64_t row = row_begin; row < row_end; row++) {
    fn(loop->inner, p, s0, params);
    /* odometer step: every byte step is (extent - 1) x stride x esize at most, inside the
     * operand's validated byte width (tl_tensor_validate: < 2^63), so none wraps; the pointer
     * never leaves the span (a step past the last index would be extent x stride). */
    for (int k = 1; k < rank; k++) {
      if (++idx[k] < loop->shape[k]) {
        for (int i = 0; i < ops; i++) p[i] += loop->strides[i][k] * loop->esize[i];
        break;
      }
      for (int i = 0; i < ops; i++)
        p[i] -= (loop->shape[k] - 1) * loop->strides[i][k] * loop->esize[i];
      idx[k] = 0;
    }
  }
}

void tl__loop_run_span(const tl__loop *loop, int64_t row, int64_t i0, int64_t i1, tl__row_fn fn,
                       const void *params) {
  if (i0 >= i1) return;
  char *p[TL__LOOP_MAX_OPS];
  int64_t s0[TL__LOOP_MAX_OPS];
  for (int i = 0; i < loop->ops; i++) {
    p[i] = loop->base[i] + i0 * loop->strides[i][0] * loop->esize[i];
    s0[i] = loop->strides[i][0];
  }
  int64_t rem = row;
  for (int k = 1; k < loop->rank; k++) {
    int64_t idx = rem % loop->shape[k];
    rem /= loop->shape[k];
    for (int i = 0; i < loop->ops; i++) p[i] += idx * loop->strides[i][k] * loop->esize[i];
  }
  fn(i1 - i0, p, s0, params);
}
