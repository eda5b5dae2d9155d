/* src/linalg/eigh.c: the symmetric / Hermitian eigenproblem (syevd / heevd, divide and
 * conquer).
 *
 * Invariant: only the triangle `uplo` of a is read, eigenvalues come out ascending in the
 * real dtype, and w and v are written only after LAPACK succeeded. */
#include "base/base.h"
#include "linalg_int.h"

static tl_status eigh_impl(tl_exec *exec, const char *route, const tl_tensor *a, tl_uplo uplo,
                           tl_tensor *w, tl_tensor *v, int fresh) {
  int64_t n, n2;
  tl_status status = tl__la_matrix(a, "a", 0, &n, &n2);
  if (status != TL_OK) return status;
  if (n != n2) {
    return tl__fail(TL_E_SHAPE, "%s: a is %lld x %lld, expected square", route, (long long)n,
                    (long long)n2);
  }
  if (uplo != TL_UPPER && uplo != TL_LOWER) {
    return tl__fail(TL_E_INVALID, "%s: uplo is %d, not a tl_uplo", route, (int)uplo);
  }
  if (w == NULL) return tl__fail(TL_E_INVALID, "%s: w is NULL", route);
  tl_dtype dtype = a->dtype, real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  int vectors = v != NULL;
  if (!fresh) {
    if ((status = tl__la_output(w, "w", real, 1, n, 0)) != TL_OK) return status;
    if ((status = tl__la_disjoint(w, "w", a, "a")) != TL_OK) return status;
    if (vectors) {
      if ((status = tl__la_output(v, "v", dtype, 2, n, n)) != TL_OK) return status;
      if ((status = tl__la_disjoint(v, "v", a, "a")) != TL_OK) return status;
      if ((status = tl__la_disjoint(v, "v", w, "w")) != TL_OK) return status;
    }
  }
  char jobz = vectors ? 'V' : 'N', uplo_char = uplo == TL_UPPER ? 'U' : 'L';
  lapack_int lda = tl__la_ld(n);
  char *work_a, *w_buf;
  if ((status = tl__la_scratch(exec, (int64_t)lda * n, esize, (void **)&work_a)) != TL_OK ||
      (status = tl__la_scratch(exec, n, rsize, (void **)&w_buf)) != TL_OK) {
    return status;
  }
  if (n > 0) {
    tl__la_work sizes;
    lapack_int info = tl__lapack_heevd_query(dtype, jobz, uplo_char, (lapack_int)n, &sizes);
    if (info != 0) return tl__la_provider_fail(route, "heevd (query)", info);
    if (sizes.work > INT32_MAX || sizes.rwork > INT32_MAX || sizes.iwork > INT32_MAX) {
      return tl__fail(TL_E_SHAPE, "%s: LAPACK workspace too large", route);
    }
    void *work, *rwork, *iwork;
    status = tl__la_workspace(exec, &sizes, esize, rsize, &work, &rwork, &iwork);
    if (status != TL_OK) return status;
    tl__la_gather(a, work_a, lda);
    status = tl__la_finite(route, "a", dtype, work_a, lda, n, n, uplo_char, 0, 0);
    if (status != TL_OK) return status;
    info = tl__lapack_heevd(dtype, jobz, uplo_char, (lapack_int)n, work_a, lda, w_buf, work,
                            (lapack_int)sizes.work, rwork, (lapack_int)sizes.rwork, iwork,
                            (lapack_int)sizes.iwork);
    if ((status = tl__la_cancelled(exec, route, "heevd")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "heevd", info);
  }
  tl_tensor w_new, v_new;
  if (fresh) {
    int64_t shape[2] = {n, n};
    if ((status = tl__exec_fresh(exec, real, 1, shape, &w_new)) != TL_OK) return status;
    if (vectors && (status = tl__exec_fresh(exec, dtype, 2, shape, &v_new)) != TL_OK) {
      tl_tensor_release(&w_new);
      return status;
    }
  } else {
    w_new = *w;
    if (vectors) v_new = *v;
  }
  tl__la_scatter(w_buf, lda, n, 1, &w_new);
  if (vectors) tl__la_scatter(work_a, lda, n, n, &v_new);
  if (fresh) {
    *w = w_new;
    if (vectors) *v = v_new;
  }
  return TL_OK;
}

tl_status tl_eigh_into(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w,
                       tl_tensor *v) {
  tl_status status = tl__la_begin(exec, "tl_eigh_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, eigh_impl(exec, "tl_eigh_into", a, uplo, w, v, 0));
}

tl_status tl_eigh(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w, tl_tensor *v) {
  tl_status status = tl__la_begin(exec, "tl_eigh");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, eigh_impl(exec, "tl_eigh", a, uplo, w, v, 1));
}
