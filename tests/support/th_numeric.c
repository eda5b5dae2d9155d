/* tests/support/th_numeric.c: see th_numeric.h. */
#include "th_numeric.h"

#include <math.h>

double th_num_from_bits(uint64_t bits) {
  return (double)(bits >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

double th_num_uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return th_num_from_bits(*state);
}

double complex th_num_get(const tl_tensor *t, const int64_t *idx) {
  const void *p = tl_tensor_element(t, idx);
  switch (t->dtype) {
    case TL_F32:
      return *(const float *)p;
    case TL_F64:
      return *(const double *)p;
    case TL_C64:
      return ((const float *)p)[0] + I * ((const float *)p)[1];
    default:
      return ((const double *)p)[0] + I * ((const double *)p)[1];
  }
}

void th_num_set(const tl_tensor *t, const int64_t *idx, double complex v) {
  th_num_set_parts(t, idx, creal(v), cimag(v));
}

void th_num_set_parts(const tl_tensor *t, const int64_t *idx, double re, double im) {
  void *p = tl_tensor_element(t, idx);
  switch (t->dtype) {
    case TL_F32:
      *(float *)p = (float)re;
      break;
    case TL_F64:
      *(double *)p = re;
      break;
    case TL_C64:
      ((float *)p)[0] = (float)re, ((float *)p)[1] = (float)im;
      break;
    default:
      ((double *)p)[0] = re, ((double *)p)[1] = im;
      break;
  }
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
