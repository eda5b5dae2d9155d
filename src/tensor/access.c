/* src/tensor/access.c: reading and writing one element through tl_scalar, and moving a
 * buffer's ownership into a reshaped view. No surface: messages go to the calling thread. */
#include <string.h>

#include "base/base.h"
#include "tenlane/tensor.h"

/* Check `index` against t's shape and return the element's address in *at. */
static tl_status locate(const tl_tensor *t, const int64_t *index, const char *call, void **at) {
  tl_status status = tl_tensor_validate(t, "t");
  if (status != TL_OK) return tl__fail(status, "%s: %s", call, tl_last_message());
  if (t->rank > 0 && index == NULL)
    return tl__fail(TL_E_INVALID, "%s: index is NULL for a rank-%d tensor", call, t->rank);
  for (int k = 0; k < t->rank; k++) {
    if (index[k] < 0 || index[k] >= t->shape[k])
      return tl__fail(TL_E_SHAPE, "%s: index[%d] is %lld, outside [0, %lld)", call, k,
                      (long long)index[k], (long long)t->shape[k]);
  }
  *at = tl_tensor_element(t, index);
  return TL_OK;
}

tl_status tl_tensor_get(const tl_tensor *t, const int64_t *index, tl_scalar *out) {
  if (out == NULL) return tl__fail(TL_E_INVALID, "tl_tensor_get: out is NULL");
  void *at;
  tl_status status = locate(t, index, "tl_tensor_get", &at);
  if (status != TL_OK) return status;
  tl_scalar value = {0.0, 0.0};
  switch (t->dtype) {
    case TL_F32:
      value.re = *(const float *)at;
      break;
    case TL_F64:
      value.re = *(const double *)at;
      break;
    case TL_C64:
      value.re = ((const float *)at)[0];
      value.im = ((const float *)at)[1];
      break;
    case TL_C128:
      value.re = ((const double *)at)[0];
      value.im = ((const double *)at)[1];
      break;
  }
  *out = value;
  return TL_OK;
}

tl_status tl_tensor_set(tl_tensor *t, const int64_t *index, tl_scalar value) {
  void *at;
  tl_status status = locate(t, index, "tl_tensor_set", &at);
  if (status != TL_OK) return status;
  if (!tl_dtype_is_complex(t->dtype) && value.im != 0.0)
    return tl__fail(TL_E_DTYPE, "tl_tensor_set: value has imaginary part %g, t is %s", value.im,
                    tl_dtype_name(t->dtype));
  switch (t->dtype) {
    case TL_F32:
      *(float *)at = (float)value.re;
      break;
    case TL_F64:
      *(double *)at = value.re;
      break;
    case TL_C64:
      ((float *)at)[0] = (float)value.re;
      ((float *)at)[1] = (float)value.im;
      break;
    case TL_C128:
      ((double *)at)[0] = value.re;
      ((double *)at)[1] = value.im;
      break;
  }
  return TL_OK;
}

tl_status tl_tensor_reshape_move(tl_tensor *src, int rank, const int64_t *shape, tl_tensor *out) {
  if (src == NULL || out == NULL)
    return tl__fail(TL_E_INVALID, "tl_tensor_reshape_move: src (%p) and out (%p) must not be NULL",
                    (void *)src, (void *)out);
  if (src->owned == NULL)
    return tl__fail(TL_E_INVALID,
                    "tl_tensor_reshape_move: src owns no buffer (a view or a wrapped tensor); use "
                    "tl_tensor_reshape_view");
  tl_tensor view;
  tl_status status = tl_tensor_reshape_view(src, rank, shape, &view);
  if (status != TL_OK) return tl__fail(status, "tl_tensor_reshape_move: %s", tl_last_message());
  view.owned = src->owned;
  memset(src, 0, sizeof *src);
  *out = view;
  return TL_OK;
}
