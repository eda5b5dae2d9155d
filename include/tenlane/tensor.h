/* tenlane/tensor.h: the strided tensor every numerical route reads and writes.
 *
 * A tensor is a plain value: dtype, rank, shape, signed element strides and an element
 * offset into `data`. Element (i0, ..., i{r-1}) lives at
 *   (char *)data + (offset + sum_k i_k * strides[k]) * tl_dtype_size(dtype).
 * Strides are in elements and may be negative or zero (a broadcast view; never valid as
 * an output). Column-major (first index fastest, as BLAS and LAPACK) is the default;
 * the *_row_major helpers give C order. A tensor either owns its buffer (`owned` is the
 * buffer tl_tensor_release frees) or borrows it (`owned` is NULL). Views borrow: they
 * never own, and must not outlive the tensor they view.
 *
 * Layout facts a program may rely on: a complex element is two reals of its precision,
 * real part first (C's float _Complex / double _Complex, numpy's complex64 / complex128),
 * and strides count whole complex elements. A fresh tensor (tl_tensor_create*, and every
 * route's fresh result) is contiguous from offset 0 in its order, and owns its buffer.
 *
 * Invariants every route checks with tl_tensor_validate: 0 <= rank <= TL_MAX_RANK,
 * extents >= 0, data != NULL unless the tensor is empty, and the byte span the strides
 * reach fits in an int64 without overflow. The span is bounded for an empty tensor too,
 * each axis of extent 0 counted as extent 2 (one step of its stride must fit): views of it
 * compute with its strides and offset. tl_tensor_create* bound the bytes of the nonzero extents in
 * any order (numpy's "array is too big"), so 2^40 x 2^40 x 0 is refused as 0 x 2^40 x 2^40 is. None
 * of these functions takes a surface; they record failure messages on the calling thread
 * (tl_last_message). Any thread. */
#ifndef TENLANE_TENSOR_H
#define TENLANE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_dtype { TL_F32 = 0, TL_F64 = 1, TL_C64 = 2, TL_C128 = 3 } tl_dtype;

#define TL_DTYPE_COUNT 4
#define TL_MAX_RANK 64 /* numpy 2's limit; numpy 1.x allows 32 */

typedef struct tl_tensor {
  tl_dtype dtype;
  int rank;
  int64_t shape[TL_MAX_RANK];
  int64_t strides[TL_MAX_RANK]; /* in elements, signed */
  int64_t offset;               /* elements from data to element (0,...,0) */
  void *data;
  void *owned; /* buffer this tensor owns (freed by tl_tensor_release), or NULL */
} tl_tensor;

/* A scalar for any dtype: the imaginary part must be 0 where a real dtype takes it. */
typedef struct tl_scalar {
  double re, im;
} tl_scalar;

static inline tl_scalar tl_scalar_real(double re) {
  tl_scalar s = {re, 0.0};
  return s;
}

/* Bytes per element: 4, 8, 8, 16; 0 for an unknown dtype. */
TL_API size_t tl_dtype_size(tl_dtype dtype);
/* "f32", "f64", "c64", "c128", or "?" for an unknown dtype. Static. */
TL_API const char *tl_dtype_name(tl_dtype dtype);
/* 1 for c64 and c128. */
TL_API int tl_dtype_is_complex(tl_dtype dtype);
/* The real dtype of the same precision (c64 -> f32, c128 -> f64; real ones map to themselves). */
TL_API tl_dtype tl_dtype_real(tl_dtype dtype);

/* ---- Creation and release ------------------------------------------------------------ */

/* A fresh, zeroed, owned column-major tensor (buffer aligned to 64 bytes, through the
 * allocator hooks). shape may be NULL when rank is 0. Errors: TL_E_INVALID (NULL out,
 * rank outside [0, TL_MAX_RANK], NULL shape), TL_E_DTYPE, TL_E_SHAPE (negative extent,
 * size overflow), TL_E_NOMEM. On failure *out is untouched. */
TL_API tl_status tl_tensor_create(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *out);
/* The same with row-major (C order) strides. */
TL_API tl_status tl_tensor_create_row_major(tl_dtype dtype, int rank, const int64_t *shape,
                                            tl_tensor *out);
/* A fresh owned column-major tensor with the shape and dtype of `like` (zeroed). */
TL_API tl_status tl_tensor_create_like(const tl_tensor *like, tl_tensor *out);

/* A borrowed tensor over caller memory. strides NULL = column-major. The result is
 * validated (see above). Errors: TL_E_INVALID, TL_E_DTYPE, TL_E_SHAPE. */
TL_API tl_status tl_tensor_wrap(tl_dtype dtype, int rank, const int64_t *shape,
                                const int64_t *strides, void *data, int64_t offset, tl_tensor *out);
/* A borrowed row-major (C order) tensor over caller memory. */
TL_API tl_status tl_tensor_wrap_row_major(tl_dtype dtype, int rank, const int64_t *shape,
                                          void *data, tl_tensor *out);

/* Free the owned buffer (if any) and clear the tensor to rank 0, no data. NULL is ignored.
 * Safe on a zero-initialised tensor and on a released one. */
TL_API void tl_tensor_release(tl_tensor *t);

/* ---- Queries ------------------------------------------------------------------------- */

/* Product of the extents: 1 for rank 0, 0 when any extent is 0 (whatever the others are); -1
 * when t is NULL, an extent is negative or the product of the extents overflows int64. */
TL_API int64_t tl_tensor_numel(const tl_tensor *t);

/* Check the invariants above. `name` names the argument in the message ("a", "out").
 * Errors: TL_E_INVALID (NULL, rank out of range, NULL data with elements), TL_E_DTYPE,
 * TL_E_SHAPE (negative extent, span overflow). */
TL_API tl_status tl_tensor_validate(const tl_tensor *t, const char *name);

/* The element range [*lo, *hi] (element offsets from data) the tensor touches; an empty
 * tensor gives lo = 1, hi = 0. Returns 0 on overflow. */
TL_API int tl_tensor_extent_range(const tl_tensor *t, int64_t *lo, int64_t *hi);

/* 1 when the memory a and b may touch overlaps (byte ranges of non-empty tensors over
 * intersecting spans). Conservative: interleaved but disjoint views count as overlapping. */
TL_API int tl_tensor_overlap(const tl_tensor *a, const tl_tensor *b);

/* 1 when some two distinct indices map to the same element (a zero stride on an extent
 * > 1, or strides that collide). Such a tensor can be read but never written. Exact for
 * zero strides and for strides that sort into a nested (non-interleaved) order;
 * otherwise conservative (reports 1). */
TL_API int tl_tensor_self_overlap(const tl_tensor *t);

/* 1 when the strides are exactly column-major (resp. row-major) for the shape
 * (axes of extent 1 may have any stride). */
TL_API int tl_tensor_is_col_major(const tl_tensor *t);
TL_API int tl_tensor_is_row_major(const tl_tensor *t);

/* Pointer to element idx[0..rank-1] (no bounds check; idx may be NULL for rank 0). For a
 * tensor that validates and each idx[k] in [0, shape[k]) the arithmetic stays inside the
 * validated span; anything else is the caller's undefined behaviour. */
TL_API void *tl_tensor_element(const tl_tensor *t, const int64_t *idx);

/* Read element index[0..rank-1] of t (index may be NULL for rank 0) into *out, whatever the
 * dtype: a real element gives im = 0; f32 and c64 widen to double. Borrows t; any thread
 * that may read t's memory. Errors: TL_E_INVALID (NULL out or index, an invalid t),
 * TL_E_SHAPE (an index outside its extent; the message names the axis), TL_E_DTYPE. */
TL_API tl_status tl_tensor_get(const tl_tensor *t, const int64_t *index, tl_scalar *out);
/* Write `value` to element index of t (rounded to f32 for f32 and c64). Borrows t; the
 * caller keeps writes to one element on one thread. Errors: as tl_tensor_get, and
 * TL_E_DTYPE for a nonzero imaginary part on a real dtype (nothing written). */
TL_API tl_status tl_tensor_set(tl_tensor *t, const int64_t *index, tl_scalar value);

/* Column-major / row-major strides for a shape. Returns 0 on overflow. */
TL_API int tl_strides_col_major(int rank, const int64_t *shape, int64_t *strides);
TL_API int tl_strides_row_major(int rank, const int64_t *shape, int64_t *strides);

/* ---- Views (borrow src's memory; `owned` is NULL) ------------------------------------ */
/* Each view call validates src and its result (TL_E_SHAPE, with the call's name, when the
 * result's span would leave int64), so a view is never a tensor that fails validation. */

/* Axis `axis` restricted to start, start+step, ... while < stop (step > 0) or > stop
 * (step < 0). start/stop are clamped like Python slices after negative indices wrap.
 * Any int64 start, stop and step is taken (INT64_MIN and INT64_MAX included): the view is
 * the one Python's slice(start, stop, step) gives, computed without overflow.
 * Errors: TL_E_INVALID (NULL, axis out of range, step 0), TL_E_SHAPE (the view's offset
 * or stride would overflow int64). */
TL_API tl_status tl_tensor_slice(const tl_tensor *src, int axis, int64_t start, int64_t stop,
                                 int64_t step, tl_tensor *out);
/* The view whose axis k is src's axis perm[k]. Errors: TL_E_INVALID (not a permutation). */
TL_API tl_status tl_tensor_permute_view(const tl_tensor *src, const int *perm, tl_tensor *out);
/* Swap two axes. */
TL_API tl_status tl_tensor_transpose_view(const tl_tensor *src, int axis0, int axis1,
                                          tl_tensor *out);
/* Reverse all axes (a matrix transpose for rank 2; column-major becomes row-major). */
TL_API tl_status tl_tensor_reverse_view(const tl_tensor *src, tl_tensor *out);
/* Fix axis `axis` at `index` and drop it (rank - 1). */
TL_API tl_status tl_tensor_select(const tl_tensor *src, int axis, int64_t index, tl_tensor *out);
/* Insert a size-1 axis at position `axis` (0..rank). */
TL_API tl_status tl_tensor_unsqueeze(const tl_tensor *src, int axis, tl_tensor *out);
/* Broadcast view to `rank` axes of `shape`: src's axes align to the leading axes (src
 * must have rank <= rank); an axis of extent 1 stretches with stride 0. Read-only.
 * Errors: TL_E_SHAPE when an extent neither matches nor is 1. */
TL_API tl_status tl_tensor_broadcast_view(const tl_tensor *src, int rank, const int64_t *shape,
                                          tl_tensor *out);
/* A view with a new shape sharing src's memory when the strides allow it (column-major
 * element order, as reshape in Fortran/Julia). Errors: TL_E_SHAPE (element counts differ),
 * TL_E_UNAVAILABLE when no view exists (use tl_reshape, which copies). */
TL_API tl_status tl_tensor_reshape_view(const tl_tensor *src, int rank, const int64_t *shape,
                                        tl_tensor *out);

/* Reshape an owning tensor in place of a copy: *out becomes the view tl_tensor_reshape_view
 * would make, and takes over src's buffer (out->owned = src's), and *src is cleared to an
 * empty tensor (as after tl_tensor_release). src may be out. A fresh column-major result
 * (every route's default) is contiguous from offset 0, so it always reshapes this way.
 * Errors (src unchanged):
 * TL_E_INVALID (NULL, src owns no buffer), TL_E_SHAPE (element counts differ),
 * TL_E_UNAVAILABLE (src's strides allow no view). Any thread. */
TL_API tl_status tl_tensor_reshape_move(tl_tensor *src, int rank, const int64_t *shape,
                                        tl_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
