/* examples/fanout/direct.c: the patch kernels as a user calls the providers directly.
 *
 * GEMM goes to a libxsmm JIT kernel when libxsmm has one for the shape (the small-matrix
 * path) and to BLIS (serial, through cblas) otherwise; QR with column pivoting is LAPACK's
 * dgeqp3 through LAPACKE; the triangular solves are cblas dtrsm. These are the providers
 * tenlane itself is built on, so the OpenMP variants and the tenlane variants differ in
 * how they run items, not in which kernels they call.
 *
 * Invariant: with a NULL workspace the QR goes through LAPACKE's allocating driver (it
 * mallocs its work array on every call, the way most code calls it); with a workspace it
 * calls the _work form and allocates nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>
#include <libxsmm.h>

#include "fanout.h"

void fan_direct_init(void) { libxsmm_init(); }

static int direct_gemm(fan_call *call, int m, int n, int k, const double *a, int lda,
                       const double *b, int ldb, double *c, int ldc) {
  const double alpha = 1.0, beta = 0.0;
  const int flags = LIBXSMM_GEMM_FLAG_NONE;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  const libxsmm_blasint xlda = lda, xldb = ldb, xldc = ldc;
  libxsmm_dmmfunction kernel =
      libxsmm_dmmdispatch(m, n, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, &prefetch);
  if (kernel) {
    kernel(a, b, c);
    return 0;
  }
  (void)call;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
  return 0;
}

static int direct_qrcp(fan_call *call, int m, int n, double *a, int lda, int *jpvt, double *tau) {
  fan_direct *self = call->backend;
  for (int j = 0; j < n; j++) jpvt[j] = 0; /* every column free to move */
  lapack_int info;
  if (self->lapack_work)
    info = LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, self->lapack_work,
                               self->lapack_lwork);
  else
    info = LAPACKE_dgeqp3(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau);
  if (info != 0) {
    snprintf(call->why, sizeof call->why, "LAPACKE_dgeqp3(m=%d, n=%d) returned info=%d", m, n,
             (int)info);
    return 1;
  }
  for (int j = 0; j < n; j++) jpvt[j] -= 1; /* LAPACK counts from 1 */
  return 0;
}

static int direct_solve_left_upper(fan_call *call, int r, int nrhs, const double *rmat, int ldr,
                                   double *b, int ldb) {
  (void)call;
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, r, nrhs, 1.0, rmat,
              ldr, b, ldb);
  return 0;
}

static int direct_solve_right_upper(fan_call *call, int m, int r, const double *rmat, int ldr,
                                    double *b, int ldb) {
  (void)call;
  cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, r, 1.0, rmat,
              ldr, b, ldb);
  return 0;
}

const fan_ops fan_direct_ops = {"direct", direct_gemm, direct_qrcp, direct_solve_left_upper,
                                direct_solve_right_upper};

int fan_direct_lwork(const fan_problem *pb) {
  int m = fan_grid_side(pb);
  double query = 0.0;
  int jpvt_dummy = 0;
  double dummy = 0.0;
  lapack_int info =
      LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, m, &dummy, m, &jpvt_dummy, &dummy, &query, -1);
  if (info != 0 || query < 1.0) return 3 * m + 1 + 64 * (m + 1);
  return (int)query;
}
