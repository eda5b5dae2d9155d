/* src/tensor/tensor_int.h: what the tensor layer offers the library's other layers only. */
#ifndef TL_TENSOR_INT_H
#define TL_TENSOR_INT_H

#include "tenlane/tensor.h"

/* tl_tensor_create (row_major 0) or tl_tensor_create_row_major (1) without the zero fill:
 * the elements are unspecified until written. For a route that writes every element of
 * its result, so that a large result's first touch is spread over the steps that fill it.
 * Same checks and errors as tl_tensor_create. */
tl_status tl__tensor_create_unfilled(tl_dtype dtype, int rank, const int64_t *shape, int row_major,
                                     tl_tensor *out);

#endif
