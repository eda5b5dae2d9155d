/* src/kernels/check.c: the argument checks every route shares, so that each malformed
 * call gets the same typed status and a message naming the argument and its values. */
#include "kernels.h"
#include "base/base.h"

tl_status tl__check_tensor(const tl_tensor *t, const char *name) {
  return tl_tensor_validate(t, name);
}

tl_status tl__check_output(const tl_tensor *out, const char *out_name) {
  tl_status status = tl_tensor_validate(out, out_name);
  if (status != TL_OK) return status;
  if (tl_tensor_self_overlap(out))
    return tl__fail(TL_E_ALIAS,
                    "%s: its strides map two indices to one element (a zero or colliding "
                    "stride), so it cannot be written",
                    out_name);
  return TL_OK;
}

tl_status tl__check_no_overlap(const tl_tensor *out, const char *out_name, const tl_tensor *in,
                               const char *in_name) {
  if (in != NULL && tl_tensor_overlap(out, in))
    return tl__fail(TL_E_ALIAS, "%s overlaps input %s (%p and %p)", out_name, in_name, out->data,
                    in->data);
  return TL_OK;
}

tl_status tl__check_dtype(const tl_tensor *t, const char *name, tl_dtype dtype) {
  if (t->dtype != dtype)
    return tl__fail(TL_E_DTYPE, "%s has dtype %s, expected %s", name, tl_dtype_name(t->dtype),
                    tl_dtype_name(dtype));
  return TL_OK;
}

tl_status tl__broadcast_to(const tl_tensor *x, const char *x_name, const tl_tensor *out,
                           tl_tensor *view) {
  if (x->rank > out->rank) {
    /* Extra trailing axes of x are allowed when they have extent 1. */
    for (int k = out->rank; k < x->rank; k++) {
      if (x->shape[k] != 1)
        return tl__fail(TL_E_SHAPE,
                        "%s has rank %d, output rank %d, and its axis %d has extent %lld", x_name,
                        x->rank, out->rank, k, (long long)x->shape[k]);
    }
  }
  tl_tensor t = *x;
  t.owned = NULL;
  for (int k = 0; k < out->rank; k++) {
    int64_t have = k < x->rank ? x->shape[k] : 1;
    int64_t stride = k < x->rank ? x->strides[k] : 0;
    if (have == out->shape[k]) {
      t.strides[k] = have == 1 ? 0 : stride;
    } else if (have == 1) {
      t.strides[k] = 0;
    } else {
      return tl__fail(TL_E_SHAPE, "%s axis %d has extent %lld, the output's is %lld", x_name, k,
                      (long long)have, (long long)out->shape[k]);
    }
    t.shape[k] = out->shape[k];
  }
  t.rank = out->rank;
  *view = t;
  return TL_OK;
}

tl_status tl__check_scalar(const char *name, tl_scalar s, tl_dtype dtype) {
  if (!tl_dtype_is_complex(dtype) && s.im != 0.0)
    return tl__fail(TL_E_DTYPE, "%s has imaginary part %g but the dtype %s is real", name, s.im,
                    tl_dtype_name(dtype));
  return TL_OK;
}
