/* src/linalg/lu.c: LU with partial pivoting (getrf), solves from a factorization (getrs),
 * and the one-call solve.
 *
 * Invariants: pivots cross the API 0-based and as int64_t, and are checked before they
 * reach LAPACK (an out-of-range pivot would make getrs read out of bounds); an exactly zero
 * diagonal of U is reported before any solve, so a solve never divides by zero; outputs and
 * pivots are written last. */
#include <complex.h>
#include <string.h>

#include "base/base.h"
#include "linalg_int.h"

/* Index of the first exact zero on the diagonal of the n x n column-major u, or -1. */
static int64_t zero_diagonal(tl_dtype dtype, const void *u, int64_t ld, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    size_t at = (size_t)(i + i * ld);
    int zero = 0;
    switch (dtype) {
      case TL_F32:
        zero = ((const float *)u)[at] == 0.0f;
        break;
      case TL_F64:
        zero = ((const double *)u)[at] == 0.0;
        break;
      case TL_C64:
        zero = ((const float complex *)u)[at] == 0.0f;
        break;
      case TL_C128:
        zero = ((const double complex *)u)[at] == 0.0;
        break;
    }
    if (zero) return i;
  }
  return -1;
}

/* Scratch for a factorization of `cols` columns with leading dimension ld (in *buf) and its
 * `count` pivots (in *ipiv). */
static tl_status factor_scratch(tl_exec *exec, tl_dtype dtype, lapack_int ld, int64_t cols,
                                int64_t count, char **buf, lapack_int **ipiv) {
  tl_status status = tl__la_scratch(exec, (int64_t)ld * cols, tl_dtype_size(dtype), (void **)buf);
  if (status != TL_OK) return status;
  return tl__la_scratch(exec, count, sizeof(lapack_int), (void **)ipiv);
}

/* The LU's packing scratch for its complex trailing updates (NULL when they cannot use
 * any), taken with the rest before anything is written. */
static tl_status getrf_pack(tl_exec *exec, tl_dtype dtype, int64_t m, int64_t n, void **pack) {
  *pack = NULL;
  const size_t bytes = tl__getrf_pack_bytes(dtype, (lapack_int)m, (lapack_int)n);
  return bytes > 0 ? tl__exec_scratch(exec, bytes, 64, pack) : TL_OK;
}

static tl_status lu_impl(tl_exec *exec, const char *route, const tl_tensor *a, tl_tensor *lu,
                         int64_t *pivots, int fresh) {
  int64_t m, n;
  tl_status status = tl__la_matrix(a, "a", 0, &m, &n);
  if (status != TL_OK) return status;
  if (lu == NULL || pivots == NULL) {
    return tl__fail(TL_E_INVALID, "%s: lu (%p) and pivots (%p) must not be NULL", route, (void *)lu,
                    (void *)pivots);
  }
  tl_dtype dtype = a->dtype;
  if (!fresh) {
    if ((status = tl__la_output(lu, "lu", dtype, 2, m, n)) != TL_OK) return status;
    if ((status = tl__la_disjoint(lu, "lu", a, "a")) != TL_OK) return status;
  }
  int64_t k = m < n ? m : n;
  if ((status = tl__la_disjoint_ints(route, pivots, k, "pivots", a, "a")) != TL_OK ||
      (!fresh && (status = tl__la_disjoint_ints(route, pivots, k, "pivots", lu, "lu")) != TL_OK))
    return status;
  lapack_int lda = tl__la_ld(m);
  if (!fresh && k > 0 && tl__la_in_place(a, m, lu, m, NULL, 0)) {
    /* In place in lu: a checked where it lies, copied once into lu and factored there,
     * without a scratch copy and a copy back (nothing fails once lu is written). */
    lapack_int *ipiv;
    char *lu_base;
    void *pack;
    if ((status = tl__la_scratch(exec, k, sizeof(lapack_int), (void **)&ipiv)) != TL_OK ||
        (status = getrf_pack(exec, dtype, m, n, &pack)) != TL_OK ||
        (status = tl__la_copy_finite(route, "a", a, lu, &lu_base)) != TL_OK)
      return status;
    lapack_int info =
        tl__lapack_getrf(dtype, (lapack_int)m, (lapack_int)n, lu_base, lda, ipiv, pack);
    if ((status = tl__la_cancelled(exec, route, "getrf")) != TL_OK) return status;
    if (info < 0) return tl__la_provider_fail(route, "getrf", info);
    for (int64_t i = 0; i < k; i++) pivots[i] = (int64_t)ipiv[i] - 1;
    return TL_OK;
  }
  char *work_a;
  lapack_int *ipiv;
  void *pack;
  if ((status = factor_scratch(exec, dtype, lda, n, k, &work_a, &ipiv)) != TL_OK ||
      (status = getrf_pack(exec, dtype, m, n, &pack)) != TL_OK)
    return status;
  if (k > 0) {
    if ((status = tl__la_gather_finite(route, "a", a, work_a, lda)) != TL_OK) return status;
    lapack_int info =
        tl__lapack_getrf(dtype, (lapack_int)m, (lapack_int)n, work_a, lda, ipiv, pack);
    if ((status = tl__la_cancelled(exec, route, "getrf")) != TL_OK) return status;
    if (info < 0) return tl__la_provider_fail(route, "getrf", info);
    /* info > 0: an exact zero pivot; the factorization is complete and is returned. */
  }
  tl_tensor lu_new;
  if (fresh) {
    int64_t shape[2] = {m, n};
    if ((status = tl__exec_fresh(exec, dtype, 2, shape, &lu_new)) != TL_OK) return status;
  } else {
    lu_new = *lu;
  }
  tl__la_scatter(work_a, lda, m, n, &lu_new);
  for (int64_t i = 0; i < k; i++) pivots[i] = (int64_t)ipiv[i] - 1;
  if (fresh) *lu = lu_new;
  return TL_OK;
}

tl_status tl_lu_into(tl_exec *exec, const tl_tensor *a, tl_tensor *lu, int64_t *pivots) {
  tl_status status = tl__la_begin(exec, "tl_lu_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, lu_impl(exec, "tl_lu_into", a, lu, pivots, 0));
}

tl_status tl_lu(tl_exec *exec, const tl_tensor *a, tl_tensor *lu, int64_t *pivots) {
  tl_status status = tl__la_begin(exec, "tl_lu");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, lu_impl(exec, "tl_lu", a, lu, pivots, 1));
}

/* Check b (n x r or n) against a square n and x against b (when x is an `_into` output). */
static tl_status check_rhs(const char *route, const tl_tensor *b, int64_t n, tl_dtype dtype,
                           const tl_tensor *x, int64_t *rhs) {
  int64_t rows, cols;
  tl_status status = tl__la_matrix(b, "b", 1, &rows, &cols);
  if (status != TL_OK) return status;
  if (b->dtype != dtype) {
    return tl__fail(TL_E_DTYPE, "%s: b is %s but the matrix is %s", route, tl_dtype_name(b->dtype),
                    tl_dtype_name(dtype));
  }
  if (rows != n) {
    return tl__fail(TL_E_SHAPE, "%s: b has %lld rows, the matrix is %lld x %lld", route,
                    (long long)rows, (long long)n, (long long)n);
  }
  *rhs = cols;
  if (x == NULL) return TL_OK;
  return tl__la_output(x, "x", dtype, b->rank, rows, cols);
}

/* Solve with the factorization in (lu_buf, ipiv) of order n: b gathered, getrs, x written. */
static tl_status solve_with(tl_exec *exec, const char *route, tl_dtype dtype, char trans, int64_t n,
                            const char *lu_buf, lapack_int ld, const lapack_int *ipiv,
                            const tl_tensor *b, int64_t rhs, tl_tensor *x, int fresh) {
  lapack_int ldb = tl__la_ld(n);
  char *work_b;
  tl_status status =
      tl__la_scratch(exec, (int64_t)ldb * rhs, tl_dtype_size(dtype), (void **)&work_b);
  if (status != TL_OK) return status;
  if (n > 0 && rhs > 0) {
    if ((status = tl__la_gather_finite(route, "b", b, work_b, ldb)) != TL_OK) return status;
    lapack_int info = tl__lapack_getrs(dtype, trans, (lapack_int)n, (lapack_int)rhs, lu_buf, ld,
                                       ipiv, work_b, ldb);
    if ((status = tl__la_cancelled(exec, route, "getrs")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "getrs", info);
  }
  tl_tensor x_new;
  if (fresh) {
    int64_t shape[2] = {n, rhs};
    if ((status = tl__exec_fresh(exec, dtype, b->rank, shape, &x_new)) != TL_OK) return status;
  } else {
    x_new = *x;
  }
  tl__la_scatter(work_b, ldb, n, rhs, &x_new);
  if (fresh) *x = x_new;
  return TL_OK;
}

static tl_status lu_solve_impl(tl_exec *exec, const char *route, const tl_tensor *lu,
                               const int64_t *pivots, tl_trans trans, const tl_tensor *b,
                               tl_tensor *x) {
  int64_t m, n, rhs;
  tl_status status = tl__la_matrix(lu, "lu", 0, &m, &n);
  if (status != TL_OK) return status;
  if (m != n) {
    return tl__fail(TL_E_SHAPE, "%s: lu is %lld x %lld, expected a square factorization", route,
                    (long long)m, (long long)n);
  }
  if (pivots == NULL) return tl__fail(TL_E_INVALID, "%s: pivots is NULL", route);
  if (trans != TL_NO_TRANS && trans != TL_TRANS && trans != TL_CONJ_TRANS) {
    return tl__fail(TL_E_INVALID, "%s: trans is %d, not a tl_trans", route, (int)trans);
  }
  if (x == NULL) return tl__fail(TL_E_INVALID, "%s: x is NULL", route);
  if ((status = check_rhs(route, b, n, lu->dtype, x, &rhs)) != TL_OK) return status;
  if ((status = tl__la_disjoint(x, "x", lu, "lu")) != TL_OK) return status;
  if ((status = tl__la_disjoint(x, "x", b, "b")) != TL_OK) return status;
  for (int64_t i = 0; i < n; i++) {
    if (pivots[i] < 0 || pivots[i] >= n) {
      return tl__fail(TL_E_INVALID, "%s: pivots[%lld] is %lld, expected 0..%lld", route,
                      (long long)i, (long long)pivots[i], (long long)(n - 1));
    }
  }
  tl_dtype dtype = lu->dtype;
  lapack_int ld = tl__la_ld(n);
  char *lu_buf;
  lapack_int *ipiv;
  if ((status = factor_scratch(exec, dtype, ld, n, n, &lu_buf, &ipiv)) != TL_OK) return status;
  if ((status = tl__la_gather_finite(route, "lu", lu, lu_buf, ld)) != TL_OK) return status;
  int64_t zero = zero_diagonal(dtype, lu_buf, ld, n);
  if (zero >= 0) {
    return tl__fail(TL_E_INVALID, "%s: lu(%lld,%lld) is exactly zero: the matrix is singular",
                    route, (long long)zero, (long long)zero);
  }
  for (int64_t i = 0; i < n; i++) ipiv[i] = (lapack_int)(pivots[i] + 1);
  char trans_char = trans == TL_NO_TRANS ? 'N' : trans == TL_TRANS ? 'T' : 'C';
  return solve_with(exec, route, dtype, trans_char, n, lu_buf, ld, ipiv, b, rhs, x, 0);
}

tl_status tl_lu_solve_into(tl_exec *exec, tl_trans trans, const tl_tensor *lu,
                           const int64_t *pivots, const tl_tensor *b, tl_tensor *x) {
  tl_status status = tl__la_begin(exec, "tl_lu_solve_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, lu_solve_impl(exec, "tl_lu_solve_into", lu, pivots, trans, b, x));
}

static tl_status solve_impl(tl_exec *exec, const char *route, const tl_tensor *a,
                            const tl_tensor *b, tl_tensor *x, int fresh) {
  int64_t m, n, rhs;
  tl_status status = tl__la_matrix(a, "a", 0, &m, &n);
  if (status != TL_OK) return status;
  if (m != n) {
    return tl__fail(TL_E_SHAPE, "%s: a is %lld x %lld, expected a square matrix", route,
                    (long long)m, (long long)n);
  }
  if (x == NULL) return tl__fail(TL_E_INVALID, "%s: x is NULL", route);
  if ((status = check_rhs(route, b, n, a->dtype, fresh ? NULL : x, &rhs)) != TL_OK) return status;
  if (!fresh) {
    if ((status = tl__la_disjoint(x, "x", a, "a")) != TL_OK) return status;
    if ((status = tl__la_disjoint(x, "x", b, "b")) != TL_OK) return status;
  }
  tl_dtype dtype = a->dtype;
  lapack_int ld = tl__la_ld(n);
  char *lu_buf;
  lapack_int *ipiv;
  void *pack;
  if ((status = factor_scratch(exec, dtype, ld, n, n, &lu_buf, &ipiv)) != TL_OK ||
      (status = getrf_pack(exec, dtype, n, n, &pack)) != TL_OK)
    return status;
  if (n > 0) {
    if ((status = tl__la_gather_finite(route, "a", a, lu_buf, ld)) != TL_OK) return status;
    lapack_int info = tl__lapack_getrf(dtype, (lapack_int)n, (lapack_int)n, lu_buf, ld, ipiv, pack);
    if ((status = tl__la_cancelled(exec, route, "getrf")) != TL_OK) return status;
    if (info < 0) return tl__la_provider_fail(route, "getrf", info);
    if (info > 0) {
      return tl__fail(TL_E_INVALID, "%s: a is singular (U(%d,%d) is exactly zero after pivoting)",
                      route, (int)info - 1, (int)info - 1);
    }
  }
  return solve_with(exec, route, dtype, 'N', n, lu_buf, ld, ipiv, b, rhs, x, fresh);
}

tl_status tl_solve_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *x) {
  tl_status status = tl__la_begin(exec, "tl_solve_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, solve_impl(exec, "tl_solve_into", a, b, x, 0));
}

tl_status tl_solve(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *x) {
  tl_status status = tl__la_begin(exec, "tl_solve");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, solve_impl(exec, "tl_solve", a, b, x, 1));
}
