/* src/linalg/svd.c: the thin SVD, truncated by rank and by tolerance.
 *
 * Divide and conquer (gesdd) first; if it does not converge, the QR-iteration driver
 * (gesvd) on a fresh copy of the input, whose workspace is taken only then. Invariant: the
 * outputs are written only after one of them succeeded, and only the kept part of each
 * factor is copied (the rest of an `_into` output is zeroed). */
#include <string.h>

#include "base/base.h"
#include "linalg_int.h"

typedef struct svd_buffers {
  char *a, *s, *u, *vt;
  lapack_int lda, ldu, ldvt;
} svd_buffers;

static tl_status run_gesvd(tl_exec *exec, const char *route, const tl_tensor *a, char jobz,
                           int64_t m, int64_t n, svd_buffers *b) {
  tl_dtype dtype = a->dtype;
  tl__la_work sizes;
  lapack_int info = tl__lapack_gesvd_query(dtype, jobz, (lapack_int)m, (lapack_int)n, &sizes);
  if (info != 0) return tl__la_provider_fail(route, "gesvd (query)", info);
  if (sizes.work > INT32_MAX) return tl__fail(TL_E_SHAPE, "%s: LAPACK workspace too large", route);
  void *work, *rwork;
  tl_status status;
  if ((status = tl__la_scratch(exec, sizes.work, tl_dtype_size(dtype), &work)) != TL_OK ||
      (status = tl__la_scratch(exec, sizes.rwork, tl_dtype_size(tl_dtype_real(dtype)), &rwork)) !=
          TL_OK) {
    return status;
  }
  tl__la_gather(a, b->a, b->lda);
  info = tl__lapack_gesvd(dtype, jobz, (lapack_int)m, (lapack_int)n, b->a, b->lda, b->s, b->u,
                          b->ldu, b->vt, b->ldvt, work, (lapack_int)sizes.work, rwork);
  if ((status = tl__la_cancelled(exec, route, "gesvd")) != TL_OK) return status;
  if (info != 0) return tl__la_provider_fail(route, "gesvd (after gesdd failed)", info);
  return TL_OK;
}

/* The `_into` outputs' shapes and overlaps, and the rank's overlap with every tensor. */
static tl_status check_outputs(const char *route, const tl_tensor *a, const tl_tensor *u,
                               const tl_tensor *s, const tl_tensor *vt, const int64_t *rank_out,
                               int64_t m, int64_t n, int64_t cap, int fresh) {
  tl_status status;
  tl_dtype real = tl_dtype_real(a->dtype);
  int vectors = u != NULL;
  if (!fresh) {
    if ((status = tl__la_output(s, "s", real, 1, cap, 0)) != TL_OK) return status;
    if ((status = tl__la_disjoint(s, "s", a, "a")) != TL_OK) return status;
    if (vectors) {
      if ((status = tl__la_output(u, "u", a->dtype, 2, m, cap)) != TL_OK) return status;
      if ((status = tl__la_output(vt, "vt", a->dtype, 2, cap, n)) != TL_OK) return status;
      if ((status = tl__la_disjoint(u, "u", a, "a")) != TL_OK) return status;
      if ((status = tl__la_disjoint(vt, "vt", a, "a")) != TL_OK) return status;
      if ((status = tl__la_disjoint(u, "u", vt, "vt")) != TL_OK) return status;
      if ((status = tl__la_disjoint(u, "u", s, "s")) != TL_OK) return status;
      if ((status = tl__la_disjoint(vt, "vt", s, "s")) != TL_OK) return status;
    }
  }
  const tl_tensor *seen[4] = {a, fresh ? NULL : s, fresh ? NULL : u, fresh ? NULL : vt};
  const char *seen_names[4] = {"a", "s", "u", "vt"};
  for (int t = 0; t < 4; t++) {
    status = tl__la_disjoint_ints(route, rank_out, 1, "rank", seen[t], seen_names[t]);
    if (status != TL_OK) return status;
  }
  return TL_OK;
}

static tl_status svd_impl(tl_exec *exec, const char *route, const tl_tensor *a,
                          const tl_truncation *truncation, tl_tensor *u, tl_tensor *s,
                          tl_tensor *vt, int64_t *rank_out, tl_truncation_report *report,
                          int fresh) {
  int64_t m, n;
  tl_status status = tl__la_matrix(a, "a", 0, &m, &n);
  if (status != TL_OK) return status;
  if (s == NULL) return tl__fail(TL_E_INVALID, "%s: s is NULL", route);
  if ((u == NULL) != (vt == NULL)) {
    return tl__fail(TL_E_INVALID, "%s: u (%p) and vt (%p) must both be given or both be NULL",
                    route, (void *)u, (void *)vt);
  }
  if ((status = tl__la_check_truncation(truncation, route)) != TL_OK) return status;
  int vectors = u != NULL;
  int64_t k = m < n ? m : n;
  int64_t cap = k;
  if (truncation != NULL && truncation->max_rank > 0 && truncation->max_rank < cap) {
    cap = truncation->max_rank;
  }
  tl_dtype dtype = a->dtype, real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  if ((status = check_outputs(route, a, u, s, vt, rank_out, m, n, cap, fresh)) != TL_OK)
    return status;
  char jobz = vectors ? 'S' : 'N';
  svd_buffers b;
  b.lda = tl__la_ld(m);
  b.ldu = tl__la_ld(m);
  b.ldvt = tl__la_ld(k);
  b.u = b.vt = NULL;
  if ((status = tl__la_scratch(exec, (int64_t)b.lda * n, esize, (void **)&b.a)) != TL_OK ||
      (status = tl__la_scratch(exec, k, rsize, (void **)&b.s)) != TL_OK) {
    return status;
  }
  if (vectors &&
      ((status = tl__la_scratch(exec, (int64_t)b.ldu * k, esize, (void **)&b.u)) != TL_OK ||
       (status = tl__la_scratch(exec, (int64_t)b.ldvt * n, esize, (void **)&b.vt)) != TL_OK)) {
    return status;
  }
  if (k > 0) {
    tl__la_work sizes;
    lapack_int info = tl__lapack_gesdd_query(dtype, jobz, (lapack_int)m, (lapack_int)n, &sizes);
    if (info != 0) return tl__la_provider_fail(route, "gesdd (query)", info);
    if (sizes.work > INT32_MAX)
      return tl__fail(TL_E_SHAPE, "%s: LAPACK workspace too large", route);
    void *work, *rwork, *iwork;
    status = tl__la_workspace(exec, &sizes, esize, rsize, &work, &rwork, &iwork);
    if (status != TL_OK) return status;
    if ((status = tl__la_gather_finite(route, "a", a, b.a, b.lda)) != TL_OK) return status;
    info = tl__lapack_gesdd(dtype, jobz, (lapack_int)m, (lapack_int)n, b.a, b.lda, b.s, b.u, b.ldu,
                            b.vt, b.ldvt, work, (lapack_int)sizes.work, rwork, iwork);
    /* Checked before the fallback: a cancelled gesdd may not converge on its zeros. */
    if ((status = tl__la_cancelled(exec, route, "gesdd")) != TL_OK) return status;
    if (info < 0) return tl__la_provider_fail(route, "gesdd", info);
    if (info > 0 && (status = run_gesvd(exec, route, a, jobz, m, n, &b)) != TL_OK) return status;
  }
  int64_t rank = tl__la_truncate(real, b.s, k, truncation);
  if (rank > cap) rank = cap;
  tl_tensor u_new, s_new, vt_new;
  if (fresh) {
    int64_t u_shape[2] = {m, rank}, vt_shape[2] = {rank, n};
    status = tl__exec_fresh(exec, real, 1, &rank, &s_new);
    if (status == TL_OK && vectors) {
      status = tl__exec_fresh(exec, dtype, 2, u_shape, &u_new);
      if (status == TL_OK) {
        status = tl__exec_fresh(exec, dtype, 2, vt_shape, &vt_new);
        if (status != TL_OK) tl_tensor_release(&u_new);
      }
      if (status != TL_OK) tl_tensor_release(&s_new);
    }
    if (status != TL_OK) return status;
  } else {
    s_new = *s;
    if (vectors) {
      u_new = *u;
      vt_new = *vt;
    }
  }
  tl__la_scatter(b.s, k > 0 ? k : 1, rank, 1, &s_new);
  if (vectors) {
    tl__la_scatter(b.u, b.ldu, m, rank, &u_new);
    tl__la_scatter(b.vt, b.ldvt, rank, n, &vt_new);
  }
  if (rank_out != NULL) *rank_out = rank;
  if (report != NULL) {
    report->rank = rank;
    report->total_weight = tl__la_sum_squares(real, b.s, k, k, 1);
    report->discarded_weight =
        tl__la_sum_squares(real, (const char *)b.s + (size_t)rank * rsize, k, k - rank, 1);
  }
  if (fresh) {
    *s = s_new;
    if (vectors) {
      *u = u_new;
      *vt = vt_new;
    }
  }
  return TL_OK;
}

tl_status tl_svd_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                      tl_tensor *u, tl_tensor *s, tl_tensor *vt, int64_t *rank) {
  tl_status status = tl__la_begin(exec, "tl_svd_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, svd_impl(exec, "tl_svd_into", a, truncation, u, s, vt, rank, NULL, 0));
}

tl_status tl_svd(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a, tl_tensor *u,
                 tl_tensor *s, tl_tensor *vt, int64_t *rank) {
  tl_status status = tl__la_begin(exec, "tl_svd");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, svd_impl(exec, "tl_svd", a, truncation, u, s, vt, rank, NULL, 1));
}

tl_status tl_svd_reported_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                               tl_tensor *u, tl_tensor *s, tl_tensor *vt,
                               tl_truncation_report *report) {
  tl_status status = tl__la_begin(exec, "tl_svd_reported_into");
  if (status != TL_OK) return status;
  return tl__exec_end(
      exec, svd_impl(exec, "tl_svd_reported_into", a, truncation, u, s, vt, NULL, report, 0));
}

tl_status tl_svd_reported(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                          tl_tensor *u, tl_tensor *s, tl_tensor *vt, tl_truncation_report *report) {
  tl_status status = tl__la_begin(exec, "tl_svd_reported");
  if (status != TL_OK) return status;
  return tl__exec_end(exec,
                      svd_impl(exec, "tl_svd_reported", a, truncation, u, s, vt, NULL, report, 1));
}
