/* examples/fanout/direct.c: the patch kernels as a user calls the providers directly.
 *
 * GEMM goes to a libxsmm JIT kernel when libxsmm has one for the shape (the small-matrix
 * path) and to BLIS (serial, through cblas) otherwise; QR with column pivoting is LAPACK's
 * dgeqp3 then dorgqr, LU is dgetrf, through LAPACKE; the triangular solves are cblas
 * dtrsm. These are the providers tenlane itself is built on, so the OpenMP variants and
 * the tenlane variants differ in how they run items, not in which kernels they call.
 *
 * Invariant: in the per-call style every factorization mallocs its scratch and goes
 * through LAPACKE's allocating drivers (they malloc a work array on every call: the way
 * most code calls them); in the workspace style nothing here allocates. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>
#include <libxsmm.h>

#include "fanout.h"

void fan_direct_init(void) { libxsmm_init(); }

/* libxsmm for the shapes it is best at (the same bound tenlane's GEMM route uses: at most
 * 64^3 multiply-adds and no extent above 256), BLIS otherwise. */
static int direct_gemm(fan_call *call, int m, int n, int k, const double *a, int lda,
                       const double *b, int ldb, double *c, int ldc) {
  const double alpha = 1.0, beta = 0.0;
  (void)call;
  if ((long long)m * n * k <= 64LL * 64 * 64 && m <= 256 && n <= 256 && k <= 256) {
    const int flags = LIBXSMM_GEMM_FLAG_NONE;
    const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    const libxsmm_blasint xlda = lda, xldb = ldb, xldc = ldc;
    libxsmm_dmmfunction kernel =
        libxsmm_dmmdispatch(m, n, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, &prefetch);
    if (kernel) {
      kernel(a, b, c);
      return 0;
    }
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
  return 0;
}

/* Scratch of one factorization: the thread's (workspace style) or fresh (per-call style). */
static int scratch_get(fan_direct *self, int m, int n, double **factor, double **tau, int **ipiv) {
  if (!self->per_call) {
    *factor = self->factor;
    *tau = self->tau;
    *ipiv = self->ipiv;
    return 0;
  }
  int k = m < n ? m : n;
  *factor = malloc(sizeof(double) * (size_t)m * (size_t)n);
  *tau = malloc(sizeof(double) * (size_t)(k > 0 ? k : 1));
  *ipiv = malloc(sizeof(int) * (size_t)(n > m ? n : m));
  if (*factor && *tau && *ipiv) return 0;
  free(*factor);
  free(*tau);
  free(*ipiv);
  return -1;
}

static void scratch_put(fan_direct *self, double *factor, double *tau, int *ipiv) {
  if (!self->per_call) return;
  free(factor);
  free(tau);
  free(ipiv);
}

static int direct_qrcp(fan_call *call, int m, int n, const double *a, int lda, double rtol,
                       double *q, int ldq, double *r, int ldr, int64_t *perm, int *rank_out) {
  fan_direct *self = call->backend;
  double *factor, *tau;
  int *jpvt;
  if (scratch_get(self, m, n, &factor, &tau, &jpvt) != 0) {
    snprintf(call->why, sizeof call->why, "out of memory for a %d x %d QR", m, n);
    return 1;
  }
  int k = m < n ? m : n;
  for (int j = 0; j < n; j++) {
    memcpy(factor + (size_t)m * j, a + (size_t)lda * j, sizeof(double) * (size_t)m);
    jpvt[j] = 0; /* every column free to move */
  }
  lapack_int info = self->per_call
                        ? LAPACKE_dgeqp3(LAPACK_COL_MAJOR, m, n, factor, m, jpvt, tau)
                        : LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, n, factor, m, jpvt, tau,
                                              self->lapack_work, self->lapack_lwork);
  int rank = 0;
  if (info == 0) {
    double largest = k > 0 ? fabs(factor[0]) : 0.0;
    while (rank < k && fabs(factor[rank + (size_t)m * rank]) > rtol * largest) rank++;
    for (int j = 0; j < n; j++)
      for (int i = 0; i < k; i++)
        r[i + (size_t)ldr * j] = i < rank && i <= j ? factor[i + (size_t)m * j] : 0.0;
    for (int j = 0; j < k; j++) {
      if (j < rank)
        memcpy(q + (size_t)ldq * j, factor + (size_t)m * j, sizeof(double) * (size_t)m);
      else
        memset(q + (size_t)ldq * j, 0, sizeof(double) * (size_t)m);
    }
    if (rank > 0)
      info = self->per_call ? LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, tau)
                            : LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, tau,
                                                  self->lapack_work, self->lapack_lwork);
    for (int j = 0; j < n; j++) perm[j] = jpvt[j] - 1; /* LAPACK counts from 1 */
  }
  scratch_put(self, factor, tau, jpvt);
  if (info != 0) {
    snprintf(call->why, sizeof call->why, "LAPACKE dgeqp3/dorgqr (m=%d, n=%d) returned info=%d", m,
             n, (int)info);
    return 1;
  }
  *rank_out = rank;
  return 0;
}

static int direct_lu(fan_call *call, int m, int n, const double *a, int lda, double *lu, int ldlu,
                     int64_t *pivots) {
  fan_direct *self = call->backend;
  double *factor, *tau;
  int *ipiv;
  if (scratch_get(self, m, n, &factor, &tau, &ipiv) != 0) {
    snprintf(call->why, sizeof call->why, "out of memory for a %d x %d LU", m, n);
    return 1;
  }
  for (int j = 0; j < n; j++)
    memcpy(lu + (size_t)ldlu * j, a + (size_t)lda * j, sizeof(double) * (size_t)m);
  lapack_int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, m, n, lu, ldlu, ipiv);
  int k = m < n ? m : n;
  for (int i = 0; i < k; i++) pivots[i] = ipiv[i] - 1;
  scratch_put(self, factor, tau, ipiv);
  if (info < 0) { /* info > 0: U is singular, which the solves report */
    snprintf(call->why, sizeof call->why, "LAPACKE_dgetrf(m=%d, n=%d) returned info=%d", m, n,
             (int)info);
    return 1;
  }
  return 0;
}

static int direct_solve_right(fan_call *call, int lower, int unit, int m, int n, const double *t,
                              int ldt, const double *b, int ldb, double *x, int ldx) {
  if (!unit)
    for (int i = 0; i < n; i++)
      if (t[i + (size_t)ldt * i] == 0.0) {
        snprintf(call->why, sizeof call->why,
                 "triangular solve: diagonal entry %d of the %d x %d triangle is zero", i, n, n);
        return 1;
      }
  for (int j = 0; j < n; j++)
    memcpy(x + (size_t)ldx * j, b + (size_t)ldb * j, sizeof(double) * (size_t)m);
  cblas_dtrsm(CblasColMajor, CblasRight, lower ? CblasLower : CblasUpper, CblasNoTrans,
              unit ? CblasUnit : CblasNonUnit, m, n, 1.0, t, ldt, x, ldx);
  return 0;
}

const fan_ops fan_direct_ops = {"direct", direct_gemm, direct_qrcp, direct_lu, direct_solve_right};

int fan_direct_make(fan_direct *d, const fan_problem *pb) {
  int m = fan_grid_side(pb);
  memset(d, 0, sizeof *d);
  double query_qp3 = 0.0, query_orgqr = 0.0, dummy = 0.0;
  int jpvt_dummy = 0;
  lapack_int info_qp3 =
      LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, m, &dummy, m, &jpvt_dummy, &dummy, &query_qp3, -1);
  lapack_int info_orgqr =
      LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, m, m, &dummy, m, &dummy, &query_orgqr, -1);
  double need = query_qp3 > query_orgqr ? query_qp3 : query_orgqr;
  if (info_qp3 != 0 || info_orgqr != 0 || need < 1.0) need = 3.0 * m + 1 + 64.0 * (m + 1);
  d->lapack_lwork = (int)need;
  d->lapack_work = malloc(sizeof(double) * (size_t)d->lapack_lwork);
  d->factor = malloc(sizeof(double) * (size_t)m * (size_t)m);
  d->tau = malloc(sizeof(double) * (size_t)m);
  d->ipiv = malloc(sizeof(int) * (size_t)m);
  if (d->lapack_work && d->factor && d->tau && d->ipiv) return 0;
  fan_direct_free(d);
  return -1;
}

void fan_direct_free(fan_direct *d) {
  free(d->lapack_work);
  free(d->factor);
  free(d->tau);
  free(d->ipiv);
  memset(d, 0, sizeof *d);
}
