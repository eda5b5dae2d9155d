/* tests/support/th_numeric.c: see th_numeric.h. */
#include "th_numeric.h"

#include <math.h>
#include <string.h>

double th_num_from_bits(uint64_t bits) {
  return (double)(bits >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

double th_num_uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return th_num_from_bits(*state);
}

double complex th_num_cplx(double re, double im) {
  const double parts[2] = {re, im};
  double complex z;
  memcpy(&z, parts, sizeof z);
  return z;
}

double complex th_num_load(tl_dtype dtype, const void *base, int64_t i) {
  switch (dtype) {
    case TL_F32:
      return ((const float *)base)[i];
    case TL_F64:
      return ((const double *)base)[i];
    case TL_C64:
      return th_num_cplx(((const float *)base)[2 * i], ((const float *)base)[2 * i + 1]);
    default:
      return th_num_cplx(((const double *)base)[2 * i], ((const double *)base)[2 * i + 1]);
  }
}

void th_num_store_parts(tl_dtype dtype, void *base, int64_t i, double re, double im) {
  switch (dtype) {
    case TL_F32:
      ((float *)base)[i] = (float)re;
      break;
    case TL_F64:
      ((double *)base)[i] = re;
      break;
    case TL_C64:
      ((float *)base)[2 * i] = (float)re, ((float *)base)[2 * i + 1] = (float)im;
      break;
    default:
      ((double *)base)[2 * i] = re, ((double *)base)[2 * i + 1] = im;
      break;
  }
}

void th_num_store(tl_dtype dtype, void *base, int64_t i, double complex v) {
  th_num_store_parts(dtype, base, i, creal(v), cimag(v));
}

double complex th_num_get(const tl_tensor *t, const int64_t *idx) {
  return th_num_load(t->dtype, tl_tensor_element(t, idx), 0);
}

void th_num_set(const tl_tensor *t, const int64_t *idx, double complex v) {
  th_num_set_parts(t, idx, creal(v), cimag(v));
}

void th_num_set_parts(const tl_tensor *t, const int64_t *idx, double re, double im) {
  th_num_store_parts(t->dtype, tl_tensor_element(t, idx), 0, re, im);
}

int64_t th_num_numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int k = 0; k < rank; k++) n *= shape[k];
  return n;
}

int th_num_next_index(int rank, const int64_t *shape, int64_t *idx) {
  for (int k = 0; k < rank; k++) {
    if (++idx[k] < shape[k]) return 1;
    idx[k] = 0;
  }
  return 0;
}

double th_num_tolerance(tl_dtype dtype) {
  return dtype == TL_F32 || dtype == TL_C64 ? 2e-5 : 1e-12;
}

int th_num_close_enough(double complex got, double complex want, double tol, double scale) {
  if (isnan(creal(want)) || isnan(cimag(want))) return isnan(creal(got)) || isnan(cimag(got));
  if (isinf(creal(want)) && creal(want) == creal(got)) return 1;
  return cabs(got - want) <= tol * (scale + cabs(want));
}

void th_num_layout_strides(int layout, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs) {
  switch (layout) {
    case 0:
      *rs = 1, *cs = rows;
      break;
    case 1:
      *rs = cols, *cs = 1;
      break;
    case 2:
      *rs = 1, *cs = rows + 3;
      break;
    default:
      *rs = 2, *cs = 2 * rows + 1;
      break;
  }
}
