/* src/tensor/tensor.c: tensor values: creation, validation, spans, overlap, views.
 *
 * Invariant kept here: every tensor that leaves a function of this file with TL_OK
 * satisfies tl_tensor_validate (rank in range, extents >= 0, data present when it has
 * elements, the byte span overflow-free), and a failing call leaves *out untouched. */
#include "tenlane/tensor.h"

#include <string.h>

#include "base/base.h"
#include "tensor_int.h"

size_t tl_dtype_size(tl_dtype dtype) {
  switch (dtype) {
    case TL_F32:
      return 4;
    case TL_F64:
      return 8;
    case TL_C64:
      return 8;
    case TL_C128:
      return 16;
  }
  return 0;
}

const char *tl_dtype_name(tl_dtype dtype) {
  switch (dtype) {
    case TL_F32:
      return "f32";
    case TL_F64:
      return "f64";
    case TL_C64:
      return "c64";
    case TL_C128:
      return "c128";
  }
  return "?";
}

int tl_dtype_is_complex(tl_dtype dtype) { return dtype == TL_C64 || dtype == TL_C128; }

tl_dtype tl_dtype_real(tl_dtype dtype) {
  if (dtype == TL_C64) return TL_F32;
  if (dtype == TL_C128) return TL_F64;
  return dtype;
}

int tl_strides_col_major(int rank, const int64_t *shape, int64_t *strides) {
  int64_t step = 1;
  for (int k = 0; k < rank; k++) {
    strides[k] = step;
    int64_t extent = shape[k] > 0 ? shape[k] : 1;
    if (!tl__i64_mul(step, extent, &step)) return 0;
  }
  return 1;
}

int tl_strides_row_major(int rank, const int64_t *shape, int64_t *strides) {
  int64_t step = 1;
  for (int k = rank - 1; k >= 0; k--) {
    strides[k] = step;
    int64_t extent = shape[k] > 0 ? shape[k] : 1;
    if (!tl__i64_mul(step, extent, &step)) return 0;
  }
  return 1;
}

int64_t tl_tensor_numel(const tl_tensor *t) {
  if (t == NULL || t->rank < 0 || t->rank > TL_MAX_RANK) return -1;
  /* An extent of 0 makes the count 0 whatever the other extents are, in any axis order (a
   * permuted view of an empty tensor must count as the tensor does). */
  int empty = 0;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] < 0) return -1;
    if (t->shape[k] == 0) empty = 1;
  }
  if (empty) return 0;
  int64_t count = 1;
  for (int k = 0; k < t->rank; k++) {
    if (!tl__i64_mul(count, t->shape[k], &count)) return -1;
  }
  return count;
}

int tl_tensor_extent_range(const tl_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t low = t->offset;
  int64_t high = low;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] == 0) {
      *lo = 1;
      *hi = 0;
      return 1;
    }
  }
  for (int k = 0; k < t->rank; k++) {
    if (!tl__span_axis(t->shape[k], t->strides[k], &low, &high)) return 0;
  }
  *lo = low;
  *hi = high;
  return 1;
}

/* Checks shared by create and wrap: rank, dtype, extents. */
static tl_status check_header(tl_dtype dtype, int rank, const int64_t *shape, const char *name) {
  if (tl_dtype_size(dtype) == 0)
    return tl__fail(TL_E_DTYPE, "%s: unknown dtype %d", name, (int)dtype);
  if (rank < 0 || rank > TL_MAX_RANK)
    return tl__fail(TL_E_INVALID, "%s: rank %d outside [0, %d]", name, rank, TL_MAX_RANK);
  if (rank > 0 && shape == NULL)
    return tl__fail(TL_E_INVALID, "%s: shape is NULL for rank %d", name, rank);
  for (int k = 0; k < rank; k++) {
    if (shape[k] < 0)
      return tl__fail(TL_E_SHAPE, "%s: extent %lld of axis %d is negative", name,
                      (long long)shape[k], k);
  }
  return TL_OK;
}

tl_status tl_tensor_validate(const tl_tensor *t, const char *name) {
  if (name == NULL) name = "tensor";
  if (t == NULL) return tl__fail(TL_E_INVALID, "%s is NULL", name);
  tl_status status = check_header(t->dtype, t->rank, t->shape, name);
  if (status != TL_OK) return status;
  int64_t count = tl_tensor_numel(t);
  if (count < 0)
    return tl__fail(TL_E_SHAPE, "%s: the element count of its shape overflows int64", name);
  /* The span is bounded for an empty tensor too, each axis of extent 0 taken as extent 2:
   * its strides and offset are never applied to data, but every view of it (select, slice,
   * reshape, a permutation that puts the empty axis last) computes with them, and each of
   * those computations stays inside this span. */
  int64_t lo = t->offset;
  int64_t hi = lo;
  int64_t es = (int64_t)tl_dtype_size(t->dtype);
  int64_t lo_bytes, hi_bytes;
  for (int k = 0; k < t->rank; k++) {
    if (!tl__span_axis(t->shape[k], t->strides[k], &lo, &hi))
      return tl__fail(TL_E_SHAPE,
                      "%s: its strides reach past int64: axis %d (extent %lld, stride %lld) "
                      "from offset %lld",
                      name, k, (long long)t->shape[k], (long long)t->strides[k],
                      (long long)t->offset);
  }
  int64_t width;
  if (!tl__i64_mul(lo, es, &lo_bytes) || !tl__i64_mul(hi, es, &hi_bytes) ||
      hi_bytes > INT64_MAX - es)
    return tl__fail(TL_E_SHAPE,
                    "%s: the byte span [%lld, %lld] x %lld of its shape, strides and offset "
                    "overflows int64",
                    name, (long long)lo, (long long)hi, (long long)es);
  /* The width too (issue 28's audit): kernels step from the lowest or the first element by
   * byte offsets relative to it, each a partial sum of index x stride x element size; all of
   * them lie within [0, width], so none can wrap once the width fits. */
  if (!tl__i64_sub(hi_bytes, lo_bytes, &width) || width > INT64_MAX - es)
    return tl__fail(TL_E_SHAPE,
                    "%s: the byte span [%lld, %lld] of its shape, strides and offset is wider "
                    "than int64",
                    name, (long long)lo_bytes, (long long)hi_bytes);
  if (count == 0) return TL_OK;
  if (t->data == NULL)
    return tl__fail(TL_E_INVALID, "%s: data is NULL with %lld elements", name, (long long)count);
  /* The span must also be addressable from data without wrapping the address space. */
  uintptr_t base = (uintptr_t)t->data;
  if (lo_bytes < 0 && (uintptr_t)(-(lo_bytes + 1)) >= base)
    return tl__fail(TL_E_SHAPE, "%s: offset %lld and negative strides reach below address 0", name,
                    (long long)t->offset);
  if (hi_bytes > 0 && (uintptr_t)hi_bytes > UINTPTR_MAX - base)
    return tl__fail(TL_E_SHAPE, "%s: the strides reach past the end of the address space", name);
  return TL_OK;
}

static tl_status create_impl(tl_dtype dtype, int rank, const int64_t *shape, int row_major,
                             int zeroed, tl_tensor *out) {
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  tl_status status = check_header(dtype, rank, shape, "shape");
  if (status != TL_OK) return status;
  /* The bytes of the nonzero extents are bounded in any axis order, as numpy does ("array
   * is too big" for 2^40 x 2^40 x 0 as for 0 x 2^40 x 2^40): the column- and row-major
   * strides of the result then fit, and so does its span, even when an extent is 0. */
  size_t reach = 1, count = 1, bytes;
  for (int k = 0; k < rank; k++) {
    if (shape[k] == 0) {
      count = 0;
      continue;
    }
    if (!tl__size_mul(reach, (size_t)shape[k], &reach) ||
        !tl__size_mul(reach, tl_dtype_size(dtype), &bytes) || bytes > (size_t)INT64_MAX / 2)
      return tl__fail(TL_E_SHAPE,
                      "shape: the nonzero extents up to axis %d (extent %lld) overflow the byte "
                      "size of %s elements (an extent of 0 elsewhere does not lift the bound)",
                      k, (long long)shape[k], tl_dtype_name(dtype));
  }
  if (count != 0) count = reach;
  bytes = count * tl_dtype_size(dtype); /* count <= reach, whose bytes were checked */
  tl_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  for (int k = 0; k < rank; k++) t.shape[k] = shape[k];
  /* Cannot fail: the product of the nonzero extents was bounded above. */
  if (row_major)
    (void)tl_strides_row_major(rank, shape, t.strides);
  else
    (void)tl_strides_col_major(rank, shape, t.strides);
  void *buffer = tl__alloc(bytes == 0 ? 64 : bytes, 64);
  if (buffer == NULL)
    return tl__fail(TL_E_NOMEM, "tensor buffer of %zu bytes could not be allocated", bytes);
  if (bytes > 0 && zeroed) memset(buffer, 0, bytes);
  t.data = buffer;
  t.owned = buffer;
  *out = t;
  return TL_OK;
}

tl_status tl_tensor_create(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *out) {
  return create_impl(dtype, rank, shape, 0, 1, out);
}

tl_status tl_tensor_create_row_major(tl_dtype dtype, int rank, const int64_t *shape,
                                     tl_tensor *out) {
  return create_impl(dtype, rank, shape, 1, 1, out);
}

tl_status tl__tensor_create_unfilled(tl_dtype dtype, int rank, const int64_t *shape, int row_major,
                                     tl_tensor *out) {
  return create_impl(dtype, rank, shape, row_major, 0, out);
}

tl_status tl_tensor_create_like(const tl_tensor *like, tl_tensor *out) {
  if (like == NULL) return tl__fail(TL_E_INVALID, "like is NULL");
  return create_impl(like->dtype, like->rank, like->shape, 0, 1, out);
}

tl_status tl_tensor_wrap(tl_dtype dtype, int rank, const int64_t *shape, const int64_t *strides,
                         void *data, int64_t offset, tl_tensor *out) {
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  tl_status status = check_header(dtype, rank, shape, "shape");
  if (status != TL_OK) return status;
  tl_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  for (int k = 0; k < rank; k++) t.shape[k] = shape[k];
  if (strides != NULL) {
    for (int k = 0; k < rank; k++) t.strides[k] = strides[k];
  } else if (!tl_strides_col_major(rank, shape, t.strides)) {
    return tl__fail(TL_E_SHAPE, "shape: column-major strides overflow int64");
  }
  t.offset = offset;
  t.data = data;
  t.owned = NULL;
  status = tl_tensor_validate(&t, "wrapped tensor");
  if (status != TL_OK) return status;
  *out = t;
  return TL_OK;
}

tl_status tl_tensor_wrap_row_major(tl_dtype dtype, int rank, const int64_t *shape, void *data,
                                   tl_tensor *out) {
  int64_t strides[TL_MAX_RANK];
  tl_status status = check_header(dtype, rank, shape, "shape");
  if (status != TL_OK) return status;
  if (!tl_strides_row_major(rank, shape, strides))
    return tl__fail(TL_E_SHAPE, "shape: row-major strides overflow int64");
  return tl_tensor_wrap(dtype, rank, shape, strides, data, 0, out);
}

void tl_tensor_release(tl_tensor *t) {
  if (t == NULL) return;
  if (t->owned != NULL) tl__free(t->owned);
  memset(t, 0, sizeof *t);
}

int tl_tensor_overlap(const tl_tensor *a, const tl_tensor *b) {
  if (a == NULL || b == NULL || a->data == NULL || b->data == NULL) return 0;
  int64_t alo, ahi, blo, bhi;
  if (!tl_tensor_extent_range(a, &alo, &ahi) || !tl_tensor_extent_range(b, &blo, &bhi)) return 1;
  if (alo > ahi || blo > bhi) return 0; /* empty */
  /* Byte bounds as checked products and sums: a tensor whose bounds leave intptr_t cannot
   * be addressed and is answered conservatively, as overlapping. */
  int64_t aes = (int64_t)tl_dtype_size(a->dtype), bes = (int64_t)tl_dtype_size(b->dtype);
  int64_t a_lo, a_hi, b_lo, b_hi;
  if (!tl__i64_mul(alo, aes, &a_lo) || !tl__i64_add(ahi, 1, &a_hi) ||
      !tl__i64_mul(a_hi, aes, &a_hi) || !tl__i64_mul(blo, bes, &b_lo) ||
      !tl__i64_add(bhi, 1, &b_hi) || !tl__i64_mul(b_hi, bes, &b_hi))
    return 1;
  intptr_t a_begin, a_end, b_begin, b_end;
  if (__builtin_add_overflow((intptr_t)a->data, (intptr_t)a_lo, &a_begin) ||
      __builtin_add_overflow((intptr_t)a->data, (intptr_t)a_hi, &a_end) ||
      __builtin_add_overflow((intptr_t)b->data, (intptr_t)b_lo, &b_begin) ||
      __builtin_add_overflow((intptr_t)b->data, (intptr_t)b_hi, &b_end))
    return 1;
  return a_begin < b_end && b_begin < a_end;
}

int tl_tensor_self_overlap(const tl_tensor *t) {
  if (t == NULL) return 0;
  int64_t extent[TL_MAX_RANK], stride[TL_MAX_RANK];
  int n = 0;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] == 0) return 0;
    if (t->shape[k] == 1) continue;
    if (t->strides[k] == 0) return 1;
    /* |INT64_MIN| has no int64: such a tensor cannot be addressed anyway (its byte span
     * overflows), so it is answered conservatively, as one that overlaps. */
    if (t->strides[k] == INT64_MIN) return 1;
    int64_t s = t->strides[k] < 0 ? -t->strides[k] : t->strides[k];
    /* insertion sort by |stride| */
    int pos = n;
    while (pos > 0 && stride[pos - 1] > s) {
      stride[pos] = stride[pos - 1];
      extent[pos] = extent[pos - 1];
      pos--;
    }
    stride[pos] = s;
    extent[pos] = t->shape[k];
    n++;
  }
  int64_t reach = 0; /* max offset the faster axes reach */
  for (int k = 0; k < n; k++) {
    if (stride[k] <= reach) return 1;
    int64_t add;
    if (!tl__i64_mul(stride[k], extent[k] - 1, &add) || !tl__i64_add(reach, add, &reach)) return 1;
  }
  return 0;
}

int tl_tensor_is_col_major(const tl_tensor *t) {
  int64_t step = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] == 0) return 1;
  }
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] != 1 && t->strides[k] != step) return 0;
    if (!tl__i64_mul(step, t->shape[k], &step)) return 0; /* no stride can match further */
  }
  return 1;
}

int tl_tensor_is_row_major(const tl_tensor *t) {
  int64_t step = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] == 0) return 1;
  }
  for (int k = t->rank - 1; k >= 0; k--) {
    if (t->shape[k] != 1 && t->strides[k] != step) return 0;
    if (!tl__i64_mul(step, t->shape[k], &step)) return 0; /* no stride can match further */
  }
  return 1;
}

void *tl_tensor_element(const tl_tensor *t, const int64_t *idx) {
  int64_t off = t->offset;
  for (int k = 0; k < t->rank; k++) off += idx[k] * t->strides[k];
  return (char *)t->data + off * (int64_t)tl_dtype_size(t->dtype);
}

/* ---- Views --------------------------------------------------------------------------- */

static tl_status check_src(const tl_tensor *src, tl_tensor *out) {
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  return tl_tensor_validate(src, "src");
}

static void as_view(tl_tensor *t) { t->owned = NULL; }

/* The last step of every view call: the view must validate (span bounded in int64 and in
 * bytes, empty or not) before it reaches *out. A validated src keeps each view inside its
 * span, so this refuses nothing a correct view computation produces; it is the one place
 * that would catch a view computation that a future edit leaves unchecked. */
static tl_status finish_view(const char *call, const tl_tensor *t, tl_tensor *out) {
  tl_status status = tl_tensor_validate(t, call);
  if (status != TL_OK) return status;
  *out = *t;
  return TL_OK;
}

/* Python's slice rules (PySlice_AdjustIndices) for an axis of n >= 0 elements, without
 * one overflowing operation: a negative start/stop counts from the end, then both are
 * clamped to [0, n] (step > 0) or [-1, n - 1] (step < 0); *count is the number of
 * elements start, start + step, ... before stop. A step of INT64_MIN is never negated. */
static void slice_bounds(int64_t n, int64_t *start, int64_t *stop, int64_t step, int64_t *count) {
  int64_t *ends[2] = {start, stop};
  for (int e = 0; e < 2; e++) {
    int64_t v = *ends[e];
    if (v < 0) {
      v += n; /* v < 0 <= n: cannot overflow */
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    *ends[e] = v;
  }
  *count = 0;
  /* Both ends are now in [-1, n], so the differences below stay within int64. */
  if (step > 0 && *start < *stop) *count = (*stop - *start - 1) / step + 1;
  if (step < 0 && *stop < *start) {
    int64_t span = *start - *stop - 1; /* >= 0 and < n */
    /* span / -step without forming -INT64_MIN: for step <= -span - 1 the quotient is 0. */
    *count = (step < -span ? 0 : span / -step) + 1;
  }
}

tl_status tl_tensor_slice(const tl_tensor *src, int axis, int64_t start, int64_t stop, int64_t step,
                          tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (axis < 0 || axis >= src->rank)
    return tl__fail(TL_E_INVALID, "axis %d outside [0, %d)", axis, src->rank);
  if (step == 0) return tl__fail(TL_E_INVALID, "step is 0");
  int64_t count;
  slice_bounds(src->shape[axis], &start, &stop, step, &count);
  tl_tensor t = *src;
  as_view(&t);
  t.shape[axis] = count;
  if (count > 0) {
    /* start is in [0, n); the view's offset and step are checked products (a step near
     * +-2^63 has one element, and keeps src's stride). */
    int64_t moved, stride = src->strides[axis];
    if (!tl__i64_mul(start, src->strides[axis], &moved) ||
        !tl__i64_add(src->offset, moved, &t.offset) ||
        (count > 1 && !tl__i64_mul(src->strides[axis], step, &stride)))
      return tl__fail(TL_E_SHAPE,
                      "slice start %lld step %lld of axis %d (stride %lld) overflows int64",
                      (long long)start, (long long)step, axis, (long long)src->strides[axis]);
    t.strides[axis] = stride;
  }
  return finish_view("tl_tensor_slice", &t, out);
}

tl_status tl_tensor_permute_view(const tl_tensor *src, const int *perm, tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (perm == NULL && src->rank > 0) return tl__fail(TL_E_INVALID, "perm is NULL");
  uint64_t seen = 0;
  for (int k = 0; k < src->rank; k++) {
    if (perm[k] < 0 || perm[k] >= src->rank || (seen & ((uint64_t)1 << perm[k])))
      return tl__fail(TL_E_INVALID, "perm[%d] = %d: not a permutation of 0..%d", k, perm[k],
                      src->rank - 1);
    seen |= (uint64_t)1 << perm[k];
  }
  tl_tensor t = *src;
  as_view(&t);
  for (int k = 0; k < src->rank; k++) {
    t.shape[k] = src->shape[perm[k]];
    t.strides[k] = src->strides[perm[k]];
  }
  return finish_view("tl_tensor_permute_view", &t, out);
}

tl_status tl_tensor_transpose_view(const tl_tensor *src, int axis0, int axis1, tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (axis0 < 0 || axis0 >= src->rank || axis1 < 0 || axis1 >= src->rank)
    return tl__fail(TL_E_INVALID, "axes %d and %d: each must be in [0, %d)", axis0, axis1,
                    src->rank);
  tl_tensor t = *src;
  as_view(&t);
  t.shape[axis0] = src->shape[axis1];
  t.strides[axis0] = src->strides[axis1];
  t.shape[axis1] = src->shape[axis0];
  t.strides[axis1] = src->strides[axis0];
  return finish_view("tl_tensor_transpose_view", &t, out);
}

tl_status tl_tensor_reverse_view(const tl_tensor *src, tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  tl_tensor t = *src;
  as_view(&t);
  for (int k = 0; k < src->rank; k++) {
    t.shape[k] = src->shape[src->rank - 1 - k];
    t.strides[k] = src->strides[src->rank - 1 - k];
  }
  return finish_view("tl_tensor_reverse_view", &t, out);
}

tl_status tl_tensor_select(const tl_tensor *src, int axis, int64_t index, tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (axis < 0 || axis >= src->rank)
    return tl__fail(TL_E_INVALID, "axis %d outside [0, %d)", axis, src->rank);
  if (index < 0 || index >= src->shape[axis])
    return tl__fail(TL_E_INVALID, "index %lld outside [0, %lld) on axis %d", (long long)index,
                    (long long)src->shape[axis], axis);
  tl_tensor t = *src;
  as_view(&t);
  /* An empty src (another axis of extent 0) has unchecked strides: the move is a checked
   * product there. */
  int64_t moved;
  if (!tl__i64_mul(index, src->strides[axis], &moved) ||
      !tl__i64_add(src->offset, moved, &t.offset))
    return tl__fail(TL_E_SHAPE, "index %lld of axis %d (stride %lld, offset %lld) overflows int64",
                    (long long)index, axis, (long long)src->strides[axis], (long long)src->offset);
  for (int k = axis; k + 1 < src->rank; k++) {
    t.shape[k] = src->shape[k + 1];
    t.strides[k] = src->strides[k + 1];
  }
  t.rank = src->rank - 1;
  t.shape[t.rank] = 0;
  t.strides[t.rank] = 0;
  return finish_view("tl_tensor_select", &t, out);
}

tl_status tl_tensor_unsqueeze(const tl_tensor *src, int axis, tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (src->rank >= TL_MAX_RANK)
    return tl__fail(TL_E_INVALID, "src: rank %d is already the maximum %d", src->rank, TL_MAX_RANK);
  if (axis < 0 || axis > src->rank)
    return tl__fail(TL_E_INVALID, "axis %d outside [0, %d]", axis, src->rank);
  tl_tensor t = *src;
  as_view(&t);
  for (int k = src->rank; k > axis; k--) {
    t.shape[k] = src->shape[k - 1];
    t.strides[k] = src->strides[k - 1];
  }
  t.shape[axis] = 1;
  t.strides[axis] = 0;
  t.rank = src->rank + 1;
  return finish_view("tl_tensor_unsqueeze", &t, out);
}

tl_status tl_tensor_broadcast_view(const tl_tensor *src, int rank, const int64_t *shape,
                                   tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  if (rank < src->rank || rank > TL_MAX_RANK)
    return tl__fail(TL_E_INVALID, "rank %d: must be in [%d, %d]", rank, src->rank, TL_MAX_RANK);
  if (shape == NULL && rank > 0) return tl__fail(TL_E_INVALID, "shape is NULL");
  tl_tensor t = *src;
  as_view(&t);
  for (int k = 0; k < rank; k++) {
    if (shape[k] < 0)
      return tl__fail(TL_E_SHAPE, "shape[%d] = %lld is negative", k, (long long)shape[k]);
    int64_t have = k < src->rank ? src->shape[k] : 1;
    int64_t stride = k < src->rank ? src->strides[k] : 0;
    if (have == shape[k]) {
      t.strides[k] = stride;
    } else if (have == 1) {
      t.strides[k] = 0;
    } else {
      return tl__fail(TL_E_SHAPE, "src axis %d has extent %lld, cannot broadcast to %lld", k,
                      (long long)have, (long long)shape[k]);
    }
    t.shape[k] = shape[k];
  }
  t.rank = rank;
  return finish_view("tl_tensor_broadcast_view", &t, out);
}

tl_status tl_tensor_reshape_view(const tl_tensor *src, int rank, const int64_t *shape,
                                 tl_tensor *out) {
  tl_status status = check_src(src, out);
  if (status != TL_OK) return status;
  status = check_header(src->dtype, rank, shape, "shape");
  if (status != TL_OK) return status;
  tl_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = src->dtype;
  t.rank = rank;
  t.data = src->data;
  t.offset = src->offset;
  for (int k = 0; k < rank; k++) t.shape[k] = shape[k];
  int64_t count_new = tl_tensor_numel(&t), count_old = tl_tensor_numel(src);
  if (count_new < 0 || count_new != count_old)
    return tl__fail(TL_E_SHAPE, "the new shape has %lld elements, src has %lld",
                    (long long)count_new, (long long)count_old);
  if (count_new == 0) {
    if (!tl_strides_col_major(rank, shape, t.strides))
      return tl__fail(TL_E_SHAPE,
                      "tl_tensor_reshape_view: the column-major strides of the empty new shape "
                      "overflow int64");
    return finish_view("tl_tensor_reshape_view", &t, out);
  }
  /* Old axes without the extent-1 ones; groups of consecutive old and new axes with equal
   * products must be contiguous (column-major) among themselves. */
  int64_t od[TL_MAX_RANK], os[TL_MAX_RANK];
  int on = 0;
  for (int k = 0; k < src->rank; k++) {
    if (src->shape[k] != 1) {
      od[on] = src->shape[k];
      os[on] = src->strides[k];
      on++;
    }
  }
  int oi = 0, ni = 0;
  while (ni < rank || oi < on) {
    /* new axes of extent 1 outside any group */
    if (ni < rank && shape[ni] == 1) {
      t.strides[ni] = 0;
      ni++;
      continue;
    }
    if (ni >= rank || oi >= on) break; /* cannot happen: equal products */
    int oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = shape[ni];
    while (op != np) {
      if (op < np)
        op *= od[oj++];
      else
        np *= shape[nj++];
    }
    for (int k = oi; k + 1 < oj; k++) {
      int64_t next;
      if (!tl__i64_mul(os[k], od[k], &next) || os[k + 1] != next)
        return tl__fail(TL_E_UNAVAILABLE,
                        "no view: src axes are not contiguous where the new shape merges them");
    }
    int64_t stride = os[oi];
    for (int k = ni; k < nj; k++) {
      t.strides[k] = stride;
      if (k + 1 < nj) stride *= shape[k]; /* within the group's span: no overflow */
    }
    oi = oj;
    ni = nj;
  }
  return finish_view("tl_tensor_reshape_view", &t, out);
}
