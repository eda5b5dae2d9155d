/* src/kernels/convert.c: dtype conversion (tl_convert_into, tl_convert). One row kernel per
 * (output dtype, input dtype) pair, generated from one macro: the input element is read as
 * a pair of doubles (real, imaginary) and written in the output's dtype. A complex input
 * converted to a real dtype keeps the real part, as numpy's astype does. */
#include "kernels.h"

#include "base/base.h"
#include "exec/exec.h"

#define TL__READ_f32(p, re, im) (re = *(const float *)(p), im = 0.0)
#define TL__READ_f64(p, re, im) (re = *(const double *)(p), im = 0.0)
#define TL__READ_c64(p, re, im) (re = ((const float *)(p))[0], im = ((const float *)(p))[1])
#define TL__READ_c128(p, re, im) (re = ((const double *)(p))[0], im = ((const double *)(p))[1])
#define TL__WRITE_f32(p, re, im) (*(float *)(p) = (float)(re), (void)(im))
#define TL__WRITE_f64(p, re, im) (*(double *)(p) = (re), (void)(im))
#define TL__WRITE_c64(p, re, im) (((float *)(p))[0] = (float)(re), ((float *)(p))[1] = (float)(im))
#define TL__WRITE_c128(p, re, im) (((double *)(p))[0] = (re), ((double *)(p))[1] = (im))

#define TL__CONVERT_KERNEL(OUT, IN, OUT_SIZE, IN_SIZE)                          \
  static void convert_##OUT##_##IN(int64_t n, char *const *p, const int64_t *s, \
                                   const void *params) {                        \
    (void)params;                                                               \
    char *dst = p[0];                                                           \
    const char *src = p[1];                                                     \
    int64_t ds = s[0] * (OUT_SIZE), ss = s[1] * (IN_SIZE);                      \
    for (int64_t i = 0; i < n; i++) {                                           \
      double re, im;                                                            \
      TL__READ_##IN(src + i * ss, re, im);                                      \
      TL__WRITE_##OUT(dst + i * ds, re, im);                                    \
    }                                                                           \
  }

#define TL__CONVERT_FROM(OUT, OUT_SIZE)     \
  TL__CONVERT_KERNEL(OUT, f32, OUT_SIZE, 4) \
  TL__CONVERT_KERNEL(OUT, f64, OUT_SIZE, 8) \
  TL__CONVERT_KERNEL(OUT, c64, OUT_SIZE, 8) \
  TL__CONVERT_KERNEL(OUT, c128, OUT_SIZE, 16)

TL__CONVERT_FROM(f32, 4)
TL__CONVERT_FROM(f64, 8)
TL__CONVERT_FROM(c64, 8)
TL__CONVERT_FROM(c128, 16)

/* Indexed [out dtype][in dtype] in tl_dtype order. */
static const tl__row_fn convert_kernels[TL_DTYPE_COUNT][TL_DTYPE_COUNT] = {
    {convert_f32_f32, convert_f32_f64, convert_f32_c64, convert_f32_c128},
    {convert_f64_f32, convert_f64_f64, convert_f64_c64, convert_f64_c128},
    {convert_c64_f32, convert_c64_f64, convert_c64_c64, convert_c64_c128},
    {convert_c128_f32, convert_c128_f64, convert_c128_c64, convert_c128_c128},
};

static tl_status convert_into_impl(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {
  tl_status status;
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  tl_tensor xv;
  if ((status = tl__broadcast_to(x, "x", out, &xv)) != TL_OK) return status;
  if ((status = tl__check_no_overlap(out, "out", x, "x")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  if (x->dtype == out->dtype) return tl__copy_execute(exec, team, out, &xv);
  const tl_tensor *ts[2] = {out, &xv};
  tl__loop loop;
  tl__loop_plan(&loop, 2, ts);
  return tl__loop_execute(exec, team, &loop, convert_kernels[out->dtype][x->dtype], NULL);
}

static tl_status convert_fresh_impl(tl_exec *exec, const tl_tensor *x, tl_dtype dtype,
                                    tl_tensor *out) {
  tl_status status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  if (tl_dtype_size(dtype) == 0)
    return tl__fail(TL_E_DTYPE, "dtype %d is not a tl_dtype", (int)dtype);
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, dtype, x->rank, x->shape, &fresh)) != TL_OK) return status;
  status = convert_into_impl(exec, x, &fresh);
  if (status != TL_OK) {
    tl_tensor_release(&fresh);
    return status;
  }
  *out = fresh;
  return TL_OK;
}

tl_status tl_convert_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_convert_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, convert_into_impl(exec, x, out));
}

tl_status tl_convert(tl_exec *exec, tl_dtype dtype, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_convert");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, convert_fresh_impl(exec, x, dtype, out));
}
