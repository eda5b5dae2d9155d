/* src/linalg/triangular.c: triangular solves (BLAS trsm), left and right, any op.
 *
 * Invariant: only the triangle `uplo` of t is read, and a non-unit diagonal is checked for
 * exact zeros before trsm runs (trsm itself would divide by them silently). */
#include <complex.h>

#include "base/base.h"
#include "linalg_int.h"

static int64_t zero_on_diagonal(const tl_tensor *t, int64_t n) {
  if (n == 0) return -1;
  size_t esize = tl_dtype_size(t->dtype);
  const char *base = (const char *)t->data + t->offset * (int64_t)esize;
  for (int64_t i = 0; i < n; i++) {
    const void *p = base + (i * (t->strides[0] + t->strides[1])) * (int64_t)esize;
    int zero = 0;
    switch (t->dtype) {
      case TL_F32:
        zero = *(const float *)p == 0.0f;
        break;
      case TL_F64:
        zero = *(const double *)p == 0.0;
        break;
      case TL_C64:
        zero = *(const float complex *)p == 0.0f;
        break;
      case TL_C128:
        zero = *(const double complex *)p == 0.0;
        break;
    }
    if (zero) return i;
  }
  return -1;
}

static tl_status trsolve_impl(tl_exec *exec, const char *route, tl_side side, tl_uplo uplo,
                              tl_trans trans, tl_diag diag, const tl_tensor *t, const tl_tensor *b,
                              tl_tensor *x, int fresh) {
  if ((side != TL_LEFT && side != TL_RIGHT) || (uplo != TL_UPPER && uplo != TL_LOWER) ||
      (trans != TL_NO_TRANS && trans != TL_TRANS && trans != TL_CONJ_TRANS) ||
      (diag != TL_NON_UNIT && diag != TL_UNIT)) {
    return tl__fail(TL_E_INVALID, "%s: side %d, uplo %d, trans %d, diag %d: an unknown value",
                    route, (int)side, (int)uplo, (int)trans, (int)diag);
  }
  int64_t n, n2, rows, cols;
  tl_status status = tl__la_matrix(t, "t", 0, &n, &n2);
  if (status != TL_OK) return status;
  if (n != n2) {
    return tl__fail(TL_E_SHAPE, "%s: t is %lld x %lld, expected square", route, (long long)n,
                    (long long)n2);
  }
  if ((status = tl__la_matrix(b, "b", side == TL_LEFT, &rows, &cols)) != TL_OK) return status;
  if (b->dtype != t->dtype) {
    return tl__fail(TL_E_DTYPE, "%s: b is %s but t is %s", route, tl_dtype_name(b->dtype),
                    tl_dtype_name(t->dtype));
  }
  if ((side == TL_LEFT ? rows : cols) != n) {
    return tl__fail(TL_E_SHAPE, "%s: b is %lld x %lld but t is %lld x %lld (side %s)", route,
                    (long long)rows, (long long)cols, (long long)n, (long long)n,
                    side == TL_LEFT ? "TL_LEFT" : "TL_RIGHT");
  }
  if (x == NULL) return tl__fail(TL_E_INVALID, "%s: x is NULL", route);
  if (!fresh) {
    if ((status = tl__la_output(x, "x", b->dtype, b->rank, rows, cols)) != TL_OK) return status;
    if ((status = tl__la_disjoint(x, "x", t, "t")) != TL_OK) return status;
    if ((status = tl__la_disjoint(x, "x", b, "b")) != TL_OK) return status;
  }
  if (diag == TL_NON_UNIT) {
    int64_t zero = zero_on_diagonal(t, n);
    if (zero >= 0) {
      return tl__fail(TL_E_INVALID, "%s: t(%lld,%lld) is exactly zero: t is singular", route,
                      (long long)zero, (long long)zero);
    }
  }
  tl_dtype dtype = t->dtype;
  size_t esize = tl_dtype_size(dtype);
  lapack_int ldt = tl__la_ld(n), ldb = tl__la_ld(rows);
  char *t_buf, *b_buf;
  if ((status = tl__la_scratch(exec, (int64_t)ldt * n, esize, (void **)&t_buf)) != TL_OK ||
      (status = tl__la_scratch(exec, (int64_t)ldb * cols, esize, (void **)&b_buf)) != TL_OK) {
    return status;
  }
  if (rows > 0 && cols > 0) {
    tl__la_gather(t, t_buf, ldt);
    status = tl__la_finite(route, "t", dtype, t_buf, ldt, n, n, uplo == TL_UPPER ? 'U' : 'L',
                           diag == TL_UNIT, 0);
    if (status != TL_OK) return status;
    if ((status = tl__la_gather_finite(route, "b", b, b_buf, ldb)) != TL_OK) return status;
    tl__blas_trsm(dtype, side == TL_LEFT ? 'L' : 'R', uplo == TL_UPPER ? 'U' : 'L',
                  trans == TL_NO_TRANS ? 'N'
                  : trans == TL_TRANS  ? 'T'
                                       : 'C',
                  diag == TL_UNIT ? 'U' : 'N', (lapack_int)rows, (lapack_int)cols, t_buf, ldt,
                  b_buf, ldb);
  }
  tl_tensor x_new;
  if (fresh) {
    int64_t shape[2] = {rows, cols};
    if ((status = tl__exec_fresh(exec, dtype, b->rank, shape, &x_new)) != TL_OK) return status;
  } else {
    x_new = *x;
  }
  tl__la_scatter(b_buf, ldb, rows, cols, &x_new);
  if (fresh) *x = x_new;
  return TL_OK;
}

tl_status tl_triangular_solve_into(tl_exec *exec, tl_side side, tl_uplo uplo, tl_trans trans,
                                   tl_diag diag, const tl_tensor *t, const tl_tensor *b,
                                   tl_tensor *x) {
  tl_status status = tl__la_begin(exec, "tl_triangular_solve_into");
  if (status != TL_OK) return status;
  return tl__exec_end(
      exec, trsolve_impl(exec, "tl_triangular_solve_into", side, uplo, trans, diag, t, b, x, 0));
}

tl_status tl_triangular_solve(tl_exec *exec, tl_side side, tl_uplo uplo, tl_trans trans,
                              tl_diag diag, const tl_tensor *t, const tl_tensor *b, tl_tensor *x) {
  tl_status status = tl__la_begin(exec, "tl_triangular_solve");
  if (status != TL_OK) return status;
  return tl__exec_end(
      exec, trsolve_impl(exec, "tl_triangular_solve", side, uplo, trans, diag, t, b, x, 1));
}
