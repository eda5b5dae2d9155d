/* src/linalg/qr.c: thin QR (geqrf + orgqr/ungqr) and QR with column pivoting truncated at
 * a tolerance (geqp3 + orgqr/ungqr), the rank-revealing factorization interpolation
 * schemes use.
 *
 * Invariant: R is copied out of the factored matrix into its own scratch before Q is formed
 * in place, and the outputs (q, r, perm, rank) are written only after both LAPACK calls
 * succeeded; the one exception, tl_qr_into into dense column-major outputs, factors in q
 * only after the last check that can fail. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "linalg_int.h"

/* Copy the upper trapezoid of the first `rows` rows of a (lda) into r (rows x n, ld rows),
 * zeros below the diagonal. */
static void take_r(size_t esize, const char *a, int64_t lda, int64_t rows, int64_t n, char *r) {
  for (int64_t j = 0; j < n; j++) {
    int64_t top = j + 1 < rows ? j + 1 : rows;
    memcpy(r + (size_t)(j * rows) * esize, a + (size_t)(j * lda) * esize, (size_t)top * esize);
    memset(r + (size_t)(j * rows + top) * esize, 0, (size_t)(rows - top) * esize);
  }
}

/* The workspace both steps need: the larger of the factorization's and Q's. */
static tl_status workspace(tl_exec *exec, const char *route, tl_dtype dtype, tl__la_work first,
                           lapack_int m, lapack_int q_cols, void **work, lapack_int *lwork) {
  tl__la_work second;
  lapack_int info = tl__lapack_ungqr_query(dtype, m, q_cols, q_cols, &second);
  if (info != 0) return tl__la_provider_fail(route, "ungqr (query)", info);
  int64_t size = first.work > second.work ? first.work : second.work;
  if (size > INT32_MAX) return tl__fail(TL_E_SHAPE, "%s: LAPACK workspace too large", route);
  *lwork = (lapack_int)size;
  return tl__la_scratch(exec, size, tl_dtype_size(dtype), work);
}

/* The `_into` outputs of both routes: q (m x width) and r (width x n) of the input's dtype,
 * apart from a and from each other. */
static tl_status check_outputs(const tl_tensor *a, const tl_tensor *q, const tl_tensor *r,
                               int64_t m, int64_t n, int64_t width) {
  tl_status status;
  if ((status = tl__la_output(q, "q", a->dtype, 2, m, width)) != TL_OK) return status;
  if ((status = tl__la_output(r, "r", a->dtype, 2, width, n)) != TL_OK) return status;
  if ((status = tl__la_disjoint(q, "q", a, "a")) != TL_OK) return status;
  if ((status = tl__la_disjoint(r, "r", a, "a")) != TL_OK) return status;
  return tl__la_disjoint(q, "q", r, "r");
}

/* Write Q (the first `width` columns of the factored matrix work_a) and R (width x n in r_buf)
 * into q and r, creating them first when fresh; nothing is written when a creation fails. */
static tl_status write_outputs(const tl_exec *exec, tl_dtype dtype, int64_t m, int64_t n,
                               int64_t width, const char *work_a, lapack_int lda, const char *r_buf,
                               tl_tensor *q, tl_tensor *r, int fresh) {
  tl_tensor q_new, r_new;
  if (fresh) {
    int64_t q_shape[2] = {m, width}, r_shape[2] = {width, n};
    tl_status status;
    if ((status = tl__exec_fresh(exec, dtype, 2, q_shape, &q_new)) != TL_OK) return status;
    if ((status = tl__exec_fresh(exec, dtype, 2, r_shape, &r_new)) != TL_OK) {
      tl_tensor_release(&q_new);
      return status;
    }
  } else {
    q_new = *q;
    r_new = *r;
  }
  tl__la_scatter(work_a, lda, m, width, &q_new);
  tl__la_scatter(r_buf, width > 0 ? width : 1, width, n, &r_new);
  if (fresh) {
    *q = q_new;
    *r = r_new;
  }
  return TL_OK;
}

static tl_status qr_impl(tl_exec *exec, const char *route, const tl_tensor *a, tl_tensor *q,
                         tl_tensor *r, int fresh) {
  int64_t m, n;
  tl_status status = tl__la_matrix(a, "a", 0, &m, &n);
  if (status != TL_OK) return status;
  if (q == NULL || r == NULL) {
    return tl__fail(TL_E_INVALID, "%s: q (%p) and r (%p) must not be NULL", route, (void *)q,
                    (void *)r);
  }
  int64_t k = m < n ? m : n;
  tl_dtype dtype = a->dtype;
  size_t esize = tl_dtype_size(dtype);
  if (!fresh && (status = check_outputs(a, q, r, m, n, k)) != TL_OK) return status;
  lapack_int lda = tl__la_ld(m);
  char *work_a = NULL, *tau = NULL, *r_buf = NULL;
  void *work = NULL;
  lapack_int lwork = 0;
  /* Q has a's shape when m >= n: then tl_qr_into may factor in q itself (two copies fewer). */
  const int in_place = !fresh && k > 0 && m >= n && tl__la_in_place(a, m, q, m, r, k);
  if ((status = tl__la_scratch(exec, k, esize, (void **)&tau)) != TL_OK ||
      (!in_place &&
       ((status = tl__la_scratch(exec, (int64_t)lda * n, esize, (void **)&work_a)) != TL_OK ||
        (status = tl__la_scratch(exec, k * n, esize, (void **)&r_buf)) != TL_OK))) {
    return status;
  }
  if (k > 0) {
    tl__la_work first;
    lapack_int info = tl__lapack_geqrf_query(dtype, (lapack_int)m, (lapack_int)n, &first);
    if (info != 0) return tl__la_provider_fail(route, "geqrf (query)", info);
    status = workspace(exec, route, dtype, first, (lapack_int)m, (lapack_int)k, &work, &lwork);
    if (status != TL_OK) return status;
    if (in_place) {
      /* a checked where it lies and copied into q, factored there, R copied out, Q formed
       * in place; nothing fails once q is written. */
      char *q_base;
      if ((status = tl__la_copy_finite(route, "a", a, q, &q_base)) != TL_OK) return status;
      info = tl__lapack_geqrf(dtype, (lapack_int)m, (lapack_int)n, q_base, lda, tau, work, lwork);
      if ((status = tl__la_cancelled(exec, route, "geqrf")) != TL_OK) return status;
      if (info != 0) return tl__la_provider_fail(route, "geqrf", info);
      take_r(esize, q_base, lda, k, n, (char *)r->data + r->offset * (int64_t)esize);
      info = tl__lapack_ungqr(dtype, (lapack_int)m, (lapack_int)k, (lapack_int)k, q_base, lda, tau,
                              work, lwork);
      if ((status = tl__la_cancelled(exec, route, "ungqr")) != TL_OK) return status;
      if (info != 0) return tl__la_provider_fail(route, "ungqr", info);
      return TL_OK;
    }
    if ((status = tl__la_gather_finite(route, "a", a, work_a, lda)) != TL_OK) return status;
    info = tl__lapack_geqrf(dtype, (lapack_int)m, (lapack_int)n, work_a, lda, tau, work, lwork);
    if ((status = tl__la_cancelled(exec, route, "geqrf")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "geqrf", info);
    take_r(esize, work_a, lda, k, n, r_buf);
    info = tl__lapack_ungqr(dtype, (lapack_int)m, (lapack_int)k, (lapack_int)k, work_a, lda, tau,
                            work, lwork);
    if ((status = tl__la_cancelled(exec, route, "ungqr")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "ungqr", info);
  }
  return write_outputs(exec, dtype, m, n, k, work_a, lda, r_buf, q, r, fresh);
}

tl_status tl_qr_into(tl_exec *exec, const tl_tensor *a, tl_tensor *q, tl_tensor *r) {
  tl_status status = tl__la_begin(exec, "tl_qr_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, qr_impl(exec, "tl_qr_into", a, q, r, 0));
}

tl_status tl_qr(tl_exec *exec, const tl_tensor *a, tl_tensor *q, tl_tensor *r) {
  tl_status status = tl__la_begin(exec, "tl_qr");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, qr_impl(exec, "tl_qr", a, q, r, 1));
}

/* |r(i,i)| of the factored matrix, as the real dtype, into diag. */
static void r_diagonal(tl_dtype dtype, const void *a, int64_t lda, int64_t k, void *diag) {
  for (int64_t i = 0; i < k; i++) {
    size_t at = (size_t)(i + i * lda);
    switch (dtype) {
      case TL_F32:
        ((float *)diag)[i] = fabsf(((const float *)a)[at]);
        break;
      case TL_F64:
        ((double *)diag)[i] = fabs(((const double *)a)[at]);
        break;
      case TL_C64:
        ((float *)diag)[i] = cabsf(((const float complex *)a)[at]);
        break;
      case TL_C128:
        ((double *)diag)[i] = cabs(((const double complex *)a)[at]);
        break;
    }
  }
}

/* |a[at]| for f32, f64 or c128. */
static double abs_at(tl_dtype dtype, const void *a, int64_t at) {
  if (dtype == TL_C128) return cabs(((const double complex *)a)[at]);
  return dtype == TL_F64 ? fabs(((const double *)a)[at]) : fabs(((const float *)a)[at]);
}

/* |a[at]|^2 for every dtype. */
static double abs2_at(tl_dtype dtype, const void *a, int64_t at) {
  switch (dtype) {
    case TL_C128: {
      double complex z = ((const double complex *)a)[at];
      return creal(z) * creal(z) + cimag(z) * cimag(z);
    }
    case TL_C64: {
      float complex z = ((const float complex *)a)[at];
      return (double)crealf(z) * crealf(z) + (double)cimagf(z) * cimagf(z);
    }
    case TL_F64:
      return ((const double *)a)[at] * ((const double *)a)[at];
    default:
      return (double)((const float *)a)[at] * ((const float *)a)[at];
  }
}

/* The weight the truncation drops, summed from the dropped part itself: after `done`
 * pivoted Householder steps on a (m x n, lda), the trailing block from row and column
 * `rank` on is R's rows rank..done-1 (on and right of the diagonal) over the not yet
 * factored rest (rows and columns from `done`). Later reflections and column swaps would
 * not change its Frobenius norm, so its sum of squares is what a full factorization would
 * drop, accurate to rounding in those entries, not in ||a||^2 (as ||a||^2 - ||r||^2 was). */
static double dropped_weight(tl_dtype dtype, const void *a, lapack_int lda, int64_t m, int64_t n,
                             int64_t done, int64_t rank) {
  double sum = 0.0;
  for (int64_t j = rank; j < n; j++) {
    int64_t rows = j < done ? j + 1 : m; /* below the diagonal of a done column: reflectors */
    for (int64_t i = rank; i < rows; i++) sum += abs2_at(dtype, a, i + j * (int64_t)lda);
  }
  return sum;
}

/* Columns one blocked step of the truncated factorization takes (what geqp3 loops over). */
#define TL__QRCP_BLOCK 8
/* Up to this many columns the truncated factorization takes unblocked steps. */
#define TL__QRCP_UNBLOCKED_MAX 128

/* Pivoted QR of a (m x n, lda; real dtypes) that stops as soon as the truncation is decided:
 * after each step (unblocked up to TL__QRCP_UNBLOCKED_MAX columns, else blocked) it looks
 * at the last diagonal entry, and once that has fallen to
 * the cut (or `cap` steps are done) the remaining steps could only be thrown away. With
 * column pivoting the diagonal does not grow down the factorization, so the entries kept
 * are the ones the full factorization would keep; a low-rank input costs rank/min(m, n) of
 * the full work. On return *steps columns are factored: their rows of R are final (the
 * blocked step updates the whole trailing block, those rows included), tau[0..steps) and
 * jpvt (1-based, every column) are set. */
static tl_status qrcp_until_cut(tl_exec *exec, const char *route, tl_dtype dtype, int64_t m,
                                int64_t n, void *a, lapack_int lda, lapack_int *jpvt, void *tau,
                                const tl_truncation *truncation, int64_t cap, int64_t *steps) {
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(tl_dtype_real(dtype));
  int64_t k = m < n ? m : n;
  void *vn1, *vn2, *auxv, *f;
  tl_status status;
  if ((status = tl__la_scratch(exec, n, rsize, &vn1)) != TL_OK ||
      (status = tl__la_scratch(exec, n, rsize, &vn2)) != TL_OK ||
      (status = tl__la_scratch(exec, TL__QRCP_BLOCK, esize, &auxv)) != TL_OK ||
      (status = tl__la_scratch(exec, n * TL__QRCP_BLOCK, esize, &f)) != TL_OK)
    return status;
  for (int64_t j = 0; j < n; j++) jpvt[j] = (lapack_int)(j + 1);
  tl__lapack_column_norms(dtype, (lapack_int)m, (lapack_int)n, a, lda, vn1);
  memcpy(vn2, vn1, (size_t)n * rsize);
  double cut = -1.0;
  int64_t done = 0;
  /* Up to TL__QRCP_UNBLOCKED_MAX columns: one unblocked step at a time (level-2 BLAS only),
   * checked against the cut after each. laqps's trailing update is a level-3 call into
   * BLIS, which takes BLIS's process-wide pool locks (seven lock operations a call, that
   * lanes contend on) and a microsecond or two of set-up: on a small matrix that costs more
   * than the update. */
  int unblocked = n <= TL__QRCP_UNBLOCKED_MAX;
  while (done < k && done < cap) {
    /* Cooperative cancellation between steps (tl_exec_cancel): a step is O(m n) work, the
     * whole loop up to O(m n k); once the flag is up the steps done are dropped. */
    if ((status = tl__la_cancelled(exec, route, "the pivoted QR steps (laqps)")) != TL_OK)
      return status;
    if (unblocked) {
      tl__lapack_qp_step(dtype, (lapack_int)m, (lapack_int)n, (lapack_int)done, a, lda, jpvt, tau,
                         vn1, vn2, f);
      done++;
    } else {
      int64_t block = k - done < TL__QRCP_BLOCK ? k - done : TL__QRCP_BLOCK;
      lapack_int taken = tl__lapack_laqps(
          dtype, (lapack_int)m, (lapack_int)(n - done), (lapack_int)done, (lapack_int)block,
          (char *)a + (size_t)done * (size_t)lda * esize, lda, jpvt + done,
          (char *)tau + (size_t)done * esize, (char *)vn1 + (size_t)done * esize,
          (char *)vn2 + (size_t)done * esize, auxv, f, (lapack_int)(n - done));
      if (taken <= 0) break; /* cannot happen with block >= 1; never loop forever */
      done += taken;
    }
    double first = abs_at(dtype, a, 0);
    if (cut < 0)
      cut =
          truncation->rtol * first > truncation->atol ? truncation->rtol * first : truncation->atol;
    int64_t last = done - 1;
    if (!(abs_at(dtype, a, last + last * (int64_t)lda) > cut)) break;
  }
  *steps = done;
  return TL_OK;
}

static tl_status qrcp_impl(tl_exec *exec, const char *route, const tl_tensor *a,
                           const tl_truncation *truncation, tl_tensor *q, tl_tensor *r,
                           int64_t *perm, int64_t *rank_out, tl_truncation_report *report,
                           int fresh) {
  int64_t m, n;
  tl_status status = tl__la_matrix(a, "a", 0, &m, &n);
  if (status != TL_OK) return status;
  if (q == NULL || r == NULL || perm == NULL || rank_out == NULL) {
    return tl__fail(TL_E_INVALID, "%s: q (%p), r (%p), perm (%p) and rank (%p) must not be NULL",
                    route, (void *)q, (void *)r, (void *)perm, (void *)rank_out);
  }
  if ((status = tl__la_check_truncation(truncation, route)) != TL_OK) return status;
  int64_t k = m < n ? m : n;
  int64_t cap = k;
  if (truncation != NULL && truncation->max_rank > 0 && truncation->max_rank < cap) {
    cap = truncation->max_rank;
  }
  tl_dtype dtype = a->dtype, real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype);
  if (!fresh && (status = check_outputs(a, q, r, m, n, cap)) != TL_OK) return status;
  const tl_tensor *seen[3] = {a, fresh ? NULL : q, fresh ? NULL : r};
  const char *seen_names[3] = {"a", "q", "r"};
  for (int t = 0; t < 3; t++) {
    if ((status = tl__la_disjoint_ints(route, perm, n, "perm", seen[t], seen_names[t])) != TL_OK ||
        (status = tl__la_disjoint_ints(route, rank_out, 1, "rank", seen[t], seen_names[t])) !=
            TL_OK)
      return status;
  }
  if (n > 0 && rank_out >= perm && rank_out < perm + n)
    return tl__fail(TL_E_ALIAS, "%s: rank (%p) lies inside perm (%lld int64_t at %p)", route,
                    (void *)rank_out, (long long)n, (void *)perm);
  lapack_int lda = tl__la_ld(m);
  char *work_a = NULL, *tau = NULL, *r_buf = NULL;
  void *work = NULL, *rwork = NULL, *diag = NULL;
  lapack_int *jpvt = NULL;
  lapack_int lwork = 0;
  tl__la_work first;
  lapack_int info = tl__lapack_geqp3_query(dtype, (lapack_int)m, (lapack_int)n, &first);
  if (info != 0) return tl__la_provider_fail(route, "geqp3 (query)", info);
  if ((status = tl__la_scratch(exec, (int64_t)lda * n, esize, (void **)&work_a)) != TL_OK ||
      (status = tl__la_scratch(exec, k, esize, (void **)&tau)) != TL_OK ||
      (status = tl__la_scratch(exec, k, tl_dtype_size(real), &diag)) != TL_OK ||
      (status = tl__la_scratch(exec, n, sizeof(lapack_int), (void **)&jpvt)) != TL_OK ||
      (status = tl__la_scratch(exec, first.rwork, tl_dtype_size(real), &rwork)) != TL_OK ||
      (status = workspace(exec, route, dtype, first, (lapack_int)m, (lapack_int)k, &work,
                          &lwork)) != TL_OK) {
    return status;
  }
  int64_t rank = 0, done = 0;
  double total = 0.0, dropped = 0.0;
  for (int64_t j = 0; j < n; j++) jpvt[j] = 0; /* every column free to move */
  if (k > 0) {
    if ((status = tl__la_gather_finite(route, "a", a, work_a, lda)) != TL_OK) return status;
    if (report != NULL) total = tl__la_sum_squares(dtype, work_a, lda, m, n);
  }
  /* Early stop: real dtypes at any width, c128 where the steps are unblocked (LAPACK's
   * blocked step exists for real types only here). */
  int until_cut =
      dtype == TL_F32 || dtype == TL_F64 || (dtype == TL_C128 && n <= TL__QRCP_UNBLOCKED_MAX);
  if (k > 0 && truncation != NULL && until_cut) {
    int64_t steps = 0;
    status =
        qrcp_until_cut(exec, route, dtype, m, n, work_a, lda, jpvt, tau, truncation, cap, &steps);
    if (status != TL_OK) return status;
    r_diagonal(dtype, work_a, lda, steps, diag);
    rank = tl__la_truncate(real, diag, steps, truncation);
    done = steps;
  } else if (k > 0) {
    info = tl__lapack_geqp3(dtype, (lapack_int)m, (lapack_int)n, work_a, lda, jpvt, tau, work,
                            lwork, rwork);
    if ((status = tl__la_cancelled(exec, route, "geqp3")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "geqp3", info);
    r_diagonal(dtype, work_a, lda, k, diag);
    rank = tl__la_truncate(real, diag, k, truncation);
    done = k;
  } else {
    for (int64_t j = 0; j < n; j++) jpvt[j] = (lapack_int)(j + 1);
  }
  if (report != NULL && k > 0) dropped = dropped_weight(dtype, work_a, lda, m, n, done, rank);
  if ((status = tl__la_scratch(exec, rank * n, esize, (void **)&r_buf)) != TL_OK) return status;
  if (rank > 0) {
    take_r(esize, work_a, lda, rank, n, r_buf);
    info = tl__lapack_ungqr(dtype, (lapack_int)m, (lapack_int)rank, (lapack_int)rank, work_a, lda,
                            tau, work, lwork);
    if ((status = tl__la_cancelled(exec, route, "ungqr")) != TL_OK) return status;
    if (info != 0) return tl__la_provider_fail(route, "ungqr", info);
  }
  status = write_outputs(exec, dtype, m, n, rank, work_a, lda, r_buf, q, r, fresh);
  if (status != TL_OK) return status;
  for (int64_t j = 0; j < n; j++) perm[j] = (int64_t)jpvt[j] - 1;
  *rank_out = rank;
  if (report != NULL) {
    report->rank = rank;
    report->total_weight = total;
    report->discarded_weight = dropped;
  }
  return TL_OK;
}

tl_status tl_qrcp_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                       tl_tensor *q, tl_tensor *r, int64_t *perm, int64_t *rank) {
  tl_status status = tl__la_begin(exec, "tl_qrcp_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec,
                      qrcp_impl(exec, "tl_qrcp_into", a, truncation, q, r, perm, rank, NULL, 0));
}

tl_status tl_qrcp(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a, tl_tensor *q,
                  tl_tensor *r, int64_t *perm, int64_t *rank) {
  tl_status status = tl__la_begin(exec, "tl_qrcp");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, qrcp_impl(exec, "tl_qrcp", a, truncation, q, r, perm, rank, NULL, 1));
}

tl_status tl_qrcp_reported_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                                tl_tensor *q, tl_tensor *r, int64_t *perm,
                                tl_truncation_report *report) {
  tl_status status = tl__la_begin(exec, "tl_qrcp_reported_into");
  if (status != TL_OK) return status;
  int64_t rank;
  return tl__exec_end(
      exec, qrcp_impl(exec, "tl_qrcp_reported_into", a, truncation, q, r, perm, &rank, report, 0));
}

tl_status tl_qrcp_reported(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                           tl_tensor *q, tl_tensor *r, int64_t *perm,
                           tl_truncation_report *report) {
  tl_status status = tl__la_begin(exec, "tl_qrcp_reported");
  if (status != TL_OK) return status;
  int64_t rank;
  return tl__exec_end(
      exec, qrcp_impl(exec, "tl_qrcp_reported", a, truncation, q, r, perm, &rank, report, 1));
}
