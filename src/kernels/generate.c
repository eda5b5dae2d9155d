/* src/kernels/generate.c: routes that make values rather than transform them: the identity
 * matrix and seeded random data (tl_fill_into is an elementwise route, elementwise.c).
 *
 * Random values come from a counter-based generator: element i (its column-major position
 * in out's shape) gets splitmix64 of (seed, i), so the values depend only on the seed, the
 * shape and the dtype, never on out's strides, the surface or the threads. */
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

static tl_status identity_impl(tl_exec *exec, tl_tensor *out) {
  tl_status status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if (out->rank != 2)
    return tl__fail(TL_E_SHAPE, "out has rank %d, expected a matrix (rank 2)", out->rank);
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  const tl_tensor *ts[1] = {out};
  tl__loop loop;
  tl__loop_plan(&loop, 1, ts);
  tl__ew_params zero = {{0.0, 0.0}, {0.0, 0.0}};
  status = tl__loop_execute(exec, team, &loop, tl__ew_fill_kernel(out->dtype), &zero);
  if (status != TL_OK) return status;
  int64_t diagonal = out->shape[0] < out->shape[1] ? out->shape[0] : out->shape[1];
  size_t size = tl_dtype_size(out->dtype);
  for (int64_t i = 0; i < diagonal; i++) {
    char *at =
        (char *)out->data + (out->offset + i * (out->strides[0] + out->strides[1])) * (int64_t)size;
    if (out->dtype == TL_F32 || out->dtype == TL_C64)
      *(float *)at = 1.0f;
    else
      *(double *)at = 1.0;
  }
  return TL_OK;
}

static uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Draw `k` of element `index` under `seed`: uniform on [-1, 1), 53 random bits. */
static double draw(uint64_t seed, uint64_t index, uint64_t k) {
  uint64_t bits = splitmix64(splitmix64(seed) ^ (2 * index + k));
  return (double)(bits >> 11) * 0x1.0p-52 - 1.0;
}

static tl_status random_impl(tl_exec *exec, uint64_t seed, tl_tensor *out) {
  tl_status status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  int64_t count = tl_tensor_numel(out);
  if (count == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the first element was written");
  int64_t idx[TL_MAX_RANK] = {0};
  for (int64_t i = 0; i < count; i++) {
    double re = draw(seed, (uint64_t)i, 0), im = draw(seed, (uint64_t)i, 1);
    void *at = tl_tensor_element(out, idx);
    switch (out->dtype) {
      case TL_F32:
        *(float *)at = (float)re;
        break;
      case TL_F64:
        *(double *)at = re;
        break;
      case TL_C64:
        ((float *)at)[0] = (float)re;
        ((float *)at)[1] = (float)im;
        break;
      case TL_C128:
        ((double *)at)[0] = re;
        ((double *)at)[1] = im;
        break;
    }
    for (int k = 0; k < out->rank && ++idx[k] == out->shape[k]; k++) idx[k] = 0;
  }
  return TL_OK;
}

tl_status tl_identity_into(tl_exec *exec, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_identity_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, identity_impl(exec, out));
}

tl_status tl_random_into(tl_exec *exec, uint64_t seed, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_random_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, random_impl(exec, seed, out));
}
