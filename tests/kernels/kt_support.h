/* tests/kernels/kt_support.h: helpers of the kernel tests on top of tests/support (held
 * session, element access, index walks and tolerances live there): the kernel tests' random
 * data, the five layouts (column, row, general stride, negative stride, permuted view) and
 * byte images of outputs. Header-only (static functions) so each test binary stays one file. */
#ifndef KT_SUPPORT_H
#define KT_SUPPORT_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static uint64_t kt_rng = 0x9e3779b97f4a7c15ull;
static inline double kt_uniform(void) { return th_num_uniform(&kt_rng); } /* [-1, 1) */

typedef enum kt_layout {
  KT_COL = 0,
  KT_ROW = 1,
  KT_GENERAL = 2,  /* padded: every stride larger than dense, odd gaps */
  KT_NEGATIVE = 3, /* column-major with the first and last axes running backwards */
  KT_PERMUTED = 4, /* a permuted view of a dense tensor of permuted shape */
  KT_LAYOUTS = 5
} kt_layout;

static const char *const kt_layout_name[]
    __attribute__((unused)) = {"column", "row", "general", "negative", "permuted"};

/* A tensor of `shape` in `layout`, over a buffer it owns through `backing` (release that).
 * Filled with random values (complex parts too), the gaps with NaN so a read of a gap
 * shows up. `positive` makes the values lie in [0.5, 1.5). */
typedef struct kt_tensor {
  tl_tensor t;
  tl_tensor backing;
} kt_tensor;

static inline void kt_make(kt_tensor *kt, tl_dtype dtype, int rank, const int64_t *shape,
                           kt_layout layout, int positive) {
  int64_t strides[TL_MAX_RANK];
  int64_t span = 1, offset = 0;
  if (layout == KT_ROW) {
    tl_strides_row_major(rank, shape, strides);
    span = th_num_numel(rank, shape);
  } else if (layout == KT_GENERAL) {
    int64_t step = 2;
    for (int k = 0; k < rank; k++) {
      strides[k] = step;
      step = step * (shape[k] > 0 ? shape[k] : 1) + 3;
    }
    span = step + 2;
  } else if (layout == KT_PERMUTED && rank >= 2) {
    /* dense in the reversed axis order, rotated by one */
    int order[TL_MAX_RANK];
    for (int k = 0; k < rank; k++) order[k] = (k + 1) % rank;
    int64_t step = 1;
    for (int k = 0; k < rank; k++) {
      strides[order[k]] = step;
      step *= shape[order[k]] > 0 ? shape[order[k]] : 1;
    }
    span = step;
  } else {
    tl_strides_col_major(rank, shape, strides);
    span = th_num_numel(rank, shape);
    if (layout == KT_NEGATIVE && rank > 0) {
      int axes[2] = {0, rank - 1};
      for (int i = 0; i < (rank > 1 ? 2 : 1); i++) {
        int k = axes[i];
        if (shape[k] > 0) offset += (shape[k] - 1) * strides[k];
        strides[k] = -strides[k];
      }
    }
  }
  if (th_num_numel(rank, shape) == 0) span = 1, offset = 0;
  int64_t bshape[1] = {span};
  TH_CHECK_OK(tl_tensor_create(dtype, 1, bshape, &kt->backing));
  /* NaN everywhere, then values at the tensor's elements */
  int64_t i0[1] = {0};
  for (i0[0] = 0; i0[0] < span; i0[0]++) th_num_set(&kt->backing, i0, NAN + I * NAN);
  TH_CHECK_OK(tl_tensor_wrap(dtype, rank, shape, strides, kt->backing.data, offset, &kt->t));
  TH_NUM_FOR_EACH(idx, rank, shape) {
    double re = kt_uniform(), im = kt_uniform();
    if (positive) re = 1.0 + 0.5 * re, im = 0.25 * im;
    th_num_set(&kt->t, idx, re + I * (tl_dtype_is_complex(dtype) ? im : 0.0));
  }
}

static inline void kt_free(kt_tensor *kt) { tl_tensor_release(&kt->backing); }

/* Byte image of a tensor's backing store, to show that a failing call wrote nothing. */
typedef struct kt_image {
  void *bytes;
  size_t size;
} kt_image;

static inline kt_image kt_snapshot(const tl_tensor *backing) {
  kt_image im;
  im.size = (size_t)tl_tensor_numel(backing) * tl_dtype_size(backing->dtype);
  im.bytes = malloc(im.size ? im.size : 1);
  memcpy(im.bytes, backing->data, im.size);
  return im;
}

static inline int kt_unchanged(const kt_image *im, const tl_tensor *backing) {
  int same = memcmp(im->bytes, backing->data, im->size) == 0;
  free(im->bytes);
  return same;
}

#endif
