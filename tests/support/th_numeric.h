/* tests/support/th_numeric.h: the numeric helpers the test areas share: a deterministic
 * generator of values in [-1, 1), element access through double complex for every dtype,
 * walking a shape's indices in column-major order, and comparison within a per-dtype
 * tolerance. Each area keeps its own generator state (and seed), so its data does not move
 * when another area draws more values. */
#ifndef TH_NUMERIC_H
#define TH_NUMERIC_H

#include <complex.h>
#include <stdint.h>

#include "tenlane/tensor.h"

/* The top 53 bits of `bits` as a double uniform in [-1, 1). */
double th_num_from_bits(uint64_t bits);

/* Advance the linear congruential generator at *state (Knuth's MMIX constants) and return
 * its new value through th_num_from_bits. */
double th_num_uniform(uint64_t *state);

/* re + i im with each part as given: CMPLX is missing under clang 14 with glibc, and
 * re + I * im makes an infinite im's real part NaN (I * inf is NaN + inf i). */
double complex th_num_cplx(double re, double im);
/* Element i of a dense buffer of dtype as double complex (an invalid dtype reads as c128). */
double complex th_num_load(tl_dtype dtype, const void *base, int64_t i);
/* Store element i of a dense buffer of dtype (the imaginary part dropped for a real one);
 * _parts stores each part as given (no complex arithmetic). */
void th_num_store(tl_dtype dtype, void *base, int64_t i, double complex v);
void th_num_store_parts(tl_dtype dtype, void *base, int64_t i, double re, double im);
/* The element of t at idx as double complex (an invalid dtype reads as c128). */
double complex th_num_get(const tl_tensor *t, const int64_t *idx);
/* Store v at idx, converted to t's dtype (the imaginary part dropped for a real one). */
void th_num_set(const tl_tensor *t, const int64_t *idx, double complex v);
/* The same from its parts (no complex arithmetic, so each part is stored as given). */
void th_num_set_parts(const tl_tensor *t, const int64_t *idx, double re, double im);

/* Strides (in elements) of a rows x cols matrix in one of four layouts the kernel tests
 * sweep: 0 column-major, 1 row-major, 2 column-major with a padded column stride (rows + 3),
 * 3 strided both ways (every other element of a padded matrix: 2, 2 rows + 1). */
void th_num_layout_strides(int layout, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs);

/* The product of the rank extents of shape (1 for rank 0). */
int64_t th_num_numel(int rank, const int64_t *shape);
/* Advance a column-major multi-index within shape; returns 0 after the last index (idx is
 * then all zeros again). */
int th_num_next_index(int rank, const int64_t *shape, int64_t *idx);

/* Visit every index IDX of a shape in column-major order (none when an extent is 0). */
#define TH_NUM_FOR_EACH(IDX, RANK, SHAPE)                                                  \
  for (int64_t IDX[TL_MAX_RANK] = {0}, IDX##_go = th_num_numel(RANK, SHAPE) > 0; IDX##_go; \
       IDX##_go = th_num_next_index(RANK, SHAPE, IDX))

/* The relative tolerance of results computed in dtype: 2e-5 for f32/c64, 1e-12 otherwise. */
double th_num_tolerance(tl_dtype dtype);

/* |got - want| <= tol * (scale + |want|), with NaN equal to NaN and an infinite want equal
 * to the same infinity. */
int th_num_close_enough(double complex got, double complex want, double tol, double scale);

#endif
