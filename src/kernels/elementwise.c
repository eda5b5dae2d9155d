/* src/kernels/elementwise.c: the elementwise routes (binary, unary, scale, axpby, fill,
 * copy); they run their loop plans over the surface through drive.c.
 *
 * Invariant: every check (arguments, dtypes, broadcast, aliasing, team) happens before the
 * first element is written, so a failing call writes nothing; once the work starts only
 * cancellation (checked per chunk) can stop it. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

/* ---- binary ------------------------------------------------------------------------- */

/* Elements below which a dense call stays on the calling thread (below the size where
 * splitting over the pool pays: see TL__PARALLEL_MIN_ELEMENTS). */
#define TL__DENSE_INLINE_MAX 16384

/* The element count of `t` when it is a column-major contiguous tensor of a valid dtype
 * and rank with data present (or no elements), else -1. Overflow-checked. */
static int64_t dense_count(const tl_tensor *t) {
  if ((unsigned)t->dtype > (unsigned)TL_C128 || t->rank < 0 || t->rank > TL_MAX_RANK) return -1;
  int64_t step = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] < 0 || t->strides[k] != step) return -1;
    if (!tl__i64_mul(step, t->shape[k], &step)) return -1;
  }
  if (step > 0 && t->data == NULL) return -1;
  if (step > (int64_t)(INT64_MAX / 16)) return -1;
  return step;
}

static int same_shape(const tl_tensor *x, const tl_tensor *y) {
  if (x->rank != y->rank) return 0;
  for (int k = 0; k < x->rank; k++) {
    if (x->shape[k] != y->shape[k]) return 0;
  }
  return 1;
}

/* [begin, end) of the bytes a dense tensor of `count` elements covers. */
static int bytes_overlap(const tl_tensor *x, const tl_tensor *y, int64_t count, size_t size) {
  const char *xb = (const char *)x->data + x->offset * (int64_t)size;
  const char *yb = (const char *)y->data + y->offset * (int64_t)size;
  size_t span = (size_t)count * size;
  return count > 0 && xb < yb + span && yb < xb + span;
}

/* The common case of one small operation: a, b and out of one dtype and shape, all dense
 * column-major. It does the same checks as the general path in a few comparisons and calls
 * the row kernel once on the calling thread. Returns 1 when it handled the call (status in
 * *status), 0 to let the general path decide (and report any error). */
static int binary_dense(tl_exec *exec, tl_binary_op op, const tl_tensor *a, const tl_tensor *b,
                        tl_tensor *out, tl_status *status) {
  if (a == NULL || b == NULL || out == NULL || (unsigned)op >= 4) return 0;
  if (a->dtype != out->dtype || b->dtype != out->dtype) return 0;
  if (!same_shape(a, out) || !same_shape(b, out)) return 0;
  int64_t count = dense_count(out);
  if (count < 0 || count > TL__DENSE_INLINE_MAX || dense_count(a) != count ||
      dense_count(b) != count)
    return 0;
  size_t size = tl_dtype_size(out->dtype);
  if (bytes_overlap(out, a, count, size) || bytes_overlap(out, b, count, size)) return 0;
  int team;
  if ((*status = tl__exec_team(exec, &team)) != TL_OK) return 1;
  if (count == 0) return (*status = TL_OK), 1;
  if (tl__exec_cancelled(exec)) {
    *status = tl__fail(TL_E_CANCELLED, "cancelled before the first element was written");
    return 1;
  }
  char *pointers[3] = {(char *)out->data + out->offset * (int64_t)size,
                       (char *)a->data + a->offset * (int64_t)size,
                       (char *)b->data + b->offset * (int64_t)size};
  int64_t strides[3] = {1, 1, 1}; /* the row kernels take element strides */
  tl__ew_binary_kernel(op, out->dtype)(count, pointers, strides, NULL);
  *status = TL_OK;
  return 1;
}

static tl_status binary_into_impl(tl_exec *exec, tl_binary_op op, const tl_tensor *a,
                                  const tl_tensor *b, tl_tensor *out) {
  tl_status status;
  if (binary_dense(exec, op, a, b, out, &status)) return status;
  if ((unsigned)op >= 4) return tl__fail(TL_E_INVALID, "op %d is not a tl_binary_op", (int)op);
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return status;
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if (b->dtype != a->dtype)
    return tl__fail(TL_E_DTYPE, "b has dtype %s, a has %s", tl_dtype_name(b->dtype),
                    tl_dtype_name(a->dtype));
  if ((status = tl__check_dtype(out, "out", a->dtype)) != TL_OK) return status;
  tl_tensor av, bv;
  if ((status = tl__broadcast_to(a, "a", out, &av)) != TL_OK) return status;
  if ((status = tl__broadcast_to(b, "b", out, &bv)) != TL_OK) return status;
  if ((status = tl__check_no_overlap(out, "out", a, "a")) != TL_OK) return status;
  if ((status = tl__check_no_overlap(out, "out", b, "b")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  const tl_tensor *ts[3] = {out, &av, &bv};
  tl__loop loop;
  tl__loop_plan(&loop, 3, ts);
  return tl__loop_execute(exec, team, &loop, tl__ew_binary_kernel(op, a->dtype), NULL);
}

/* The broadcast shape of a and b (trailing padding), or TL_E_SHAPE. */
static tl_status broadcast_shape(const tl_tensor *a, const tl_tensor *b, int *rank,
                                 int64_t *shape) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int k = 0; k < r; k++) {
    int64_t ea = k < a->rank ? a->shape[k] : 1, eb = k < b->rank ? b->shape[k] : 1;
    if (ea == eb || eb == 1)
      shape[k] = ea;
    else if (ea == 1)
      shape[k] = eb;
    else
      return tl__fail(TL_E_SHAPE, "a axis %d has extent %lld and b's has %lld: neither is 1", k,
                      (long long)ea, (long long)eb);
  }
  *rank = r;
  return TL_OK;
}

static tl_status binary_fresh_impl(tl_exec *exec, tl_binary_op op, const tl_tensor *a,
                                   const tl_tensor *b, tl_tensor *out) {
  tl_status status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return status;
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return status;
  int rank = 0;
  int64_t shape[TL_MAX_RANK];
  if ((status = broadcast_shape(a, b, &rank, shape)) != TL_OK) return status;
  if (b->dtype != a->dtype)
    return tl__fail(TL_E_DTYPE, "b has dtype %s, a has %s", tl_dtype_name(b->dtype),
                    tl_dtype_name(a->dtype));
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, a->dtype, rank, shape, &fresh)) != TL_OK) return status;
  status = binary_into_impl(exec, op, a, b, &fresh);
  if (status != TL_OK) {
    tl_tensor_release(&fresh);
    return status;
  }
  *out = fresh;
  return TL_OK;
}

tl_status tl_binary_into(tl_exec *exec, tl_binary_op op, const tl_tensor *a, const tl_tensor *b,
                         tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_binary_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, binary_into_impl(exec, op, a, b, out));
}

tl_status tl_binary(tl_exec *exec, tl_binary_op op, const tl_tensor *a, const tl_tensor *b,
                    tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_binary");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, binary_fresh_impl(exec, op, a, b, out));
}

#define TL__BINARY_ROUTES(NAME, OP)                                                            \
  tl_status tl_##NAME##_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b,            \
                             tl_tensor *out) {                                                 \
    tl_status status = tl__exec_begin(exec, "tl_" #NAME "_into");                              \
    if (status != TL_OK) return status;                                                        \
    return tl__exec_end(exec, binary_into_impl(exec, OP, a, b, out));                          \
  }                                                                                            \
  tl_status tl_##NAME(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out) { \
    tl_status status = tl__exec_begin(exec, "tl_" #NAME);                                      \
    if (status != TL_OK) return status;                                                        \
    return tl__exec_end(exec, binary_fresh_impl(exec, OP, a, b, out));                         \
  }

TL__BINARY_ROUTES(add, TL_OP_ADD)
TL__BINARY_ROUTES(sub, TL_OP_SUB)
TL__BINARY_ROUTES(mul, TL_OP_MUL)
TL__BINARY_ROUTES(div, TL_OP_DIV)

/* ---- unary -------------------------------------------------------------------------- */

static tl_dtype unary_out_dtype(tl_unary_op op, tl_dtype dtype) {
  return op == TL_OP_ABS ? tl_dtype_real(dtype) : dtype;
}

static tl_status unary_into_impl(tl_exec *exec, tl_unary_op op, const tl_tensor *x,
                                 tl_tensor *out) {
  tl_status status;
  if ((unsigned)op > TL_OP_COPY)
    return tl__fail(TL_E_INVALID, "op %d is not a tl_unary_op", (int)op);
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if ((status = tl__check_dtype(out, "out", unary_out_dtype(op, x->dtype))) != TL_OK) return status;
  tl_tensor xv;
  if ((status = tl__broadcast_to(x, "x", out, &xv)) != TL_OK) return status;
  if ((status = tl__check_no_overlap(out, "out", x, "x")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  if (op == TL_OP_COPY || (op == TL_OP_CONJ && !tl_dtype_is_complex(x->dtype)))
    return tl__copy_execute(exec, team, out, &xv); /* cache-blocked when layouts differ */
  const tl_tensor *ts[2] = {out, &xv};
  tl__loop loop;
  tl__loop_plan(&loop, 2, ts);
  return tl__loop_execute(exec, team, &loop, tl__ew_unary_kernel(op, x->dtype), NULL);
}

static tl_status unary_fresh_impl(tl_exec *exec, tl_unary_op op, const tl_tensor *x,
                                  tl_tensor *out) {
  tl_status status;
  if (out == NULL) return tl__fail(TL_E_INVALID, "out is NULL");
  if ((unsigned)op > TL_OP_COPY)
    return tl__fail(TL_E_INVALID, "op %d is not a tl_unary_op", (int)op);
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  tl_tensor fresh;
  status = tl__exec_fresh(exec, unary_out_dtype(op, x->dtype), x->rank, x->shape, &fresh);
  if (status != TL_OK) return status;
  status = unary_into_impl(exec, op, x, &fresh);
  if (status != TL_OK) {
    tl_tensor_release(&fresh);
    return status;
  }
  *out = fresh;
  return TL_OK;
}

tl_status tl_unary_into(tl_exec *exec, tl_unary_op op, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_unary_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, unary_into_impl(exec, op, x, out));
}

tl_status tl_unary(tl_exec *exec, tl_unary_op op, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_unary");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, unary_fresh_impl(exec, op, x, out));
}

#define TL__UNARY_ROUTES(NAME, OP)                                                \
  tl_status tl_##NAME##_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out) { \
    tl_status status = tl__exec_begin(exec, "tl_" #NAME "_into");                 \
    if (status != TL_OK) return status;                                           \
    return tl__exec_end(exec, unary_into_impl(exec, OP, x, out));                 \
  }                                                                               \
  tl_status tl_##NAME(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {        \
    tl_status status = tl__exec_begin(exec, "tl_" #NAME);                         \
    if (status != TL_OK) return status;                                           \
    return tl__exec_end(exec, unary_fresh_impl(exec, OP, x, out));                \
  }

TL__UNARY_ROUTES(neg, TL_OP_NEG)
TL__UNARY_ROUTES(conj, TL_OP_CONJ)
TL__UNARY_ROUTES(abs, TL_OP_ABS)
TL__UNARY_ROUTES(exp, TL_OP_EXP)
TL__UNARY_ROUTES(log, TL_OP_LOG)
TL__UNARY_ROUTES(sqrt, TL_OP_SQRT)

tl_status tl_copy_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_copy_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, unary_into_impl(exec, TL_OP_COPY, x, out));
}

/* ---- fill, scale, axpby ------------------------------------------------------------- */

static tl_status fill_impl(tl_exec *exec, tl_tensor *out, tl_scalar value) {
  tl_status status;
  if ((status = tl__check_output(out, "out")) != TL_OK) return status;
  if ((status = tl__check_scalar("value", value, out->dtype)) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  const tl_tensor *ts[1] = {out};
  tl__loop loop;
  tl__loop_plan(&loop, 1, ts);
  tl__ew_params params = {value, value};
  return tl__loop_execute(exec, team, &loop, tl__ew_fill_kernel(out->dtype), &params);
}

tl_status tl_fill_into(tl_exec *exec, tl_scalar value, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_fill_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, fill_impl(exec, out, value));
}

/* out = alpha x + beta y; y NULL means beta = 0 and y unread. in_place: y is out. */
static tl_status axpby_impl(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_scalar beta,
                            const tl_tensor *y, tl_tensor *out, int in_place) {
  tl_status status;
  const char *out_name = in_place ? "y" : "out";
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return status;
  if (!in_place && y != NULL && (status = tl__check_tensor(y, "y")) != TL_OK) return status;
  if ((status = tl__check_output(out, out_name)) != TL_OK) return status;
  if ((status = tl__check_dtype(out, out_name, x->dtype)) != TL_OK) return status;
  if (!in_place && y != NULL && (status = tl__check_dtype(y, "y", x->dtype)) != TL_OK)
    return status;
  if ((status = tl__check_scalar("alpha", alpha, x->dtype)) != TL_OK) return status;
  if ((status = tl__check_scalar("beta", beta, x->dtype)) != TL_OK) return status;
  tl_tensor xv, yv;
  if ((status = tl__broadcast_to(x, "x", out, &xv)) != TL_OK) return status;
  if (!in_place && y != NULL && (status = tl__broadcast_to(y, "y", out, &yv)) != TL_OK)
    return status;
  if ((status = tl__check_no_overlap(out, out_name, x, "x")) != TL_OK) return status;
  if (!in_place && y != NULL && (status = tl__check_no_overlap(out, "out", y, "y")) != TL_OK)
    return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  int beta_zero = y == NULL || (beta.re == 0.0 && beta.im == 0.0);
  const tl_tensor *ts[3] = {out, &xv, in_place ? out : &yv};
  tl__loop loop;
  tl__loop_plan(&loop, beta_zero ? 2 : 3, ts);
  tl__ew_params params = {alpha, beta};
  return tl__loop_execute(exec, team, &loop, tl__ew_axpby_kernel(x->dtype, beta_zero), &params);
}

tl_status tl_scale_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_scale_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, axpby_impl(exec, alpha, x, tl_scalar_real(0), NULL, out, 0));
}

tl_status tl_scale(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_scale");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "out is NULL"));
  if ((status = tl__check_tensor(x, "x")) != TL_OK) return tl__exec_end(exec, status);
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, x->dtype, x->rank, x->shape, &fresh)) != TL_OK)
    return tl__exec_end(exec, status);
  status = axpby_impl(exec, alpha, x, tl_scalar_real(0), NULL, &fresh, 0);
  if (status != TL_OK)
    tl_tensor_release(&fresh);
  else
    *out = fresh;
  return tl__exec_end(exec, status);
}

tl_status tl_axpby(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_scalar beta,
                   tl_tensor *y) {
  tl_status status = tl__exec_begin(exec, "tl_axpby");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, axpby_impl(exec, alpha, x, beta, y, y, 1));
}

tl_status tl_axpby_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_scalar beta,
                        const tl_tensor *y, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_axpby_into");
  if (status != TL_OK) return status;
  if (y == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "y is NULL"));
  return tl__exec_end(exec, axpby_impl(exec, alpha, x, beta, y, out, 0));
}
