/* examples/fanout/direct.c: the patch kernels as a user calls the providers directly.
 *
 * The providers are the ones tenlane itself is built on, called the way tenlane's routes
 * call them, so that a runner on this backend differs from tenlane's in how it runs items
 * and where scratch comes from, not in the numerical algorithm:
 *   - GEMM: a libxsmm JIT kernel for small real shapes (the same bound tenlane's GEMM route
 *     uses), otherwise BLIS with the context tenlane selected for the CPU;
 *   - QR with column pivoting, truncated: one Householder step at a time (LAPACK's larfg and
 *     larf, up to 128 columns) or LAPACK's blocked step laqps in blocks of 8 columns,
 *     stopping once the last diagonal entry falls to the cut, as tl_qrcp_into does (c128:
 *     the unblocked steps up to 128 columns, the full geqp3 above);
 *     then orgqr/ungqr for the kept columns;
 *   - LU: LAPACK's unblocked getf2 for panels up to 32 columns (no level-3 BLAS call, like
 *     tenlane's own LU), getrf otherwise;
 *     triangular solves: BLAS trsm (tenlane solves small triangles in its own loops, so
 *     the left cores of (a) and of this backend may differ in the last bits);
 * FAN_DIRECT_TYPICAL is the other common way: the full geqp3 for every type, truncated
 * afterwards, and LAPACKE's allocating drivers.
 *
 * Invariant: FAN_DIRECT_KEPT allocates nothing per call (its scratch is made once by
 * fan_direct_make); the other two styles malloc their scratch in every call. */
#define _GNU_SOURCE
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "direct.h"
#include "patch.h"

/* LAPACK and BLAS entries LAPACKE does not wrap (Fortran interface, 32-bit integers). */
extern void dlaqps_(const lapack_int *m, const lapack_int *n, const lapack_int *offset,
                    const lapack_int *nb, lapack_int *kb, double *a, const lapack_int *lda,
                    lapack_int *jpvt, double *tau, double *vn1, double *vn2, double *auxv,
                    double *f, const lapack_int *ldf);

extern void dgetf2_(const lapack_int *m, const lapack_int *n, double *a, const lapack_int *lda,
                    lapack_int *ipiv, lapack_int *info);
extern void zgetf2_(const lapack_int *m, const lapack_int *n, double complex *a,
                    const lapack_int *lda, lapack_int *ipiv, lapack_int *info);

/* Up to this many columns LU is LAPACK's unblocked getf2 (level-2 BLAS only). */
#define GETF2_MAX 32

/* Columns one blocked step of the truncated pivoted QR takes (tenlane's block), and the
 * width up to which it takes unblocked steps instead (as tenlane does). */
#define QRCP_BLOCK 8
#define UNBLOCKED_MAX 128

/* ---- Scratch of one factorization ------------------------------------------------------ */

typedef struct qr_scratch {
  void *factor, *tau, *norms, *aux, *work;
  double *rwork;
  int *jpvt;
  int lwork;
} qr_scratch;

/* Elements of LAPACK workspace the QR needs: the larger of geqp3's and orgqr's (for the
 * full k = min(m, n) columns), the way tenlane sizes it. */
static int qr_lwork(fan_dtype dtype, int m, int n) {
  int k = m < n ? m : n;
  double complex q1 = 0, q2 = 0;
  lapack_int i1, i2;
  if (dtype == FAN_F64) {
    i1 = LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, n, NULL, m, NULL, NULL, (double *)&q1, -1);
    i2 = LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, k, k, NULL, m, NULL, (double *)&q2, -1);
  } else {
    i1 = LAPACKE_zgeqp3_work(LAPACK_COL_MAJOR, m, n, NULL, m, NULL, NULL, &q1, -1, NULL);
    i2 = LAPACKE_zungqr_work(LAPACK_COL_MAJOR, m, k, k, NULL, m, NULL, &q2, -1);
  }
  double w1 = creal(q1), w2 = creal(q2);
  double need = w1 > w2 ? w1 : w2;
  if (i1 != 0 || i2 != 0 || !(need >= 1.0)) need = 64.0 * (n + 1) + 3.0 * n;
  return (int)(need * (1.0 + 1e-6)) + 1;
}

static void qr_scratch_free(qr_scratch *s) {
  free(s->factor);
  free(s->tau);
  free(s->norms);
  free(s->aux);
  free(s->work);
  free(s->rwork);
  free(s->jpvt);
}

/* The kept scratch, or fresh scratch for an m x n QR (per-call styles). */
static int qr_scratch_get(fan_direct *self, int m, int n, qr_scratch *s) {
  memset(s, 0, sizeof *s);
  if (self->style == FAN_DIRECT_KEPT) {
    s->factor = self->factor;
    s->tau = self->tau;
    s->norms = self->norms;
    s->aux = self->aux;
    s->work = self->lapack_work;
    s->lwork = self->lapack_lwork;
    s->rwork = self->rwork;
    s->jpvt = self->ipiv;
    return 0;
  }
  size_t e = fan_dtype_size(self->dtype);
  int k = m < n ? m : n;
  s->factor = malloc(e * (size_t)m * (size_t)n);
  s->tau = malloc(e * (size_t)(k > 0 ? k : 1));
  s->jpvt = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int ok = s->factor && s->tau && s->jpvt;
  if (self->style == FAN_DIRECT_MALLOC) {
    s->norms = malloc(sizeof(double) * 2 * (size_t)(n > 0 ? n : 1));
    s->aux = malloc(e * (size_t)QRCP_BLOCK * (size_t)(n + 1));
    s->rwork = malloc(sizeof(double) * 2 * (size_t)(n > 0 ? n : 1));
    ok = ok && s->norms && s->aux && s->rwork;
  }
  if (ok) return 0;
  qr_scratch_free(s);
  return -1;
}

static void qr_scratch_put(fan_direct *self, qr_scratch *s) {
  if (self->style != FAN_DIRECT_KEPT) qr_scratch_free(s);
}

/* ---- QR with column pivoting ----------------------------------------------------------- */

extern double dznrm2_(const lapack_int *n, const double complex *x, const lapack_int *incx);

/* One unblocked step of pivoted QR at row and column i (the step of LAPACK's laqp2 and
 * zlaqp2), through LAPACK's reflector routines and BLAS nrm2: pivot, reflect (as H^H for
 * c128), downdate the partial norms. a is m x n with leading dimension m. */
static void qp_step(fan_dtype dtype, int m, int n, int i, void *a, int *jpvt, void *tau,
                    double *vn1, double *vn2, void *work) {
  const lapack_int one = 1, ld = m;
  const size_t e = fan_dtype_size(dtype);
  char *bytes = a;
  int pvt = i;
  for (int j = i + 1; j < n; j++)
    if (vn1[j] > vn1[pvt]) pvt = j;
  if (pvt != i) {
    char keep[16];
    for (int r = 0; r < m; r++) {
      char *x = bytes + e * ((size_t)r + (size_t)m * pvt),
           *y = bytes + e * ((size_t)r + (size_t)m * i);
      memcpy(keep, x, e);
      memcpy(x, y, e);
      memcpy(y, keep, e);
    }
    int keep_pivot = jpvt[pvt];
    jpvt[pvt] = jpvt[i];
    jpvt[i] = keep_pivot;
    vn1[pvt] = vn1[i];
    vn2[pvt] = vn2[i];
  }
  lapack_int len = m - i, cols = n - i - 1;
  if (dtype == FAN_F64) {
    double *aii = (double *)a + i + (size_t)m * i, *t = (double *)tau + i;
    LAPACK_dlarfg(&len, aii, len > 1 ? aii + 1 : aii, &one, t);
    if (cols > 0) {
      double saved = *aii;
      *aii = 1.0;
      LAPACK_dlarf("L", &len, &cols, aii, &one, t, aii + m, &ld, work);
      *aii = saved;
    }
  } else {
    double complex *aii = (double complex *)a + i + (size_t)m * i, *t = (double complex *)tau + i;
    LAPACK_zlarfg(&len, aii, len > 1 ? aii + 1 : aii, &one, t);
    if (cols > 0) {
      double complex saved = *aii, ctau = conj(*t);
      *aii = 1.0;
      LAPACK_zlarf("L", &len, &cols, aii, &one, &ctau, aii + m, &ld, work);
      *aii = saved;
    }
  }
  const double tol3z = sqrt(DBL_EPSILON * 0.5);
  for (int j = i + 1; j < n; j++) {
    if (vn1[j] == 0.0) continue;
    size_t at = (size_t)i + (size_t)m * j;
    double ratio =
        (dtype == FAN_F64 ? fabs(((double *)a)[at]) : cabs(((double complex *)a)[at])) / vn1[j];
    double temp = 1.0 - ratio * ratio;
    if (temp < 0.0) temp = 0.0;
    double scale = vn1[j] / vn2[j];
    if (temp * scale * scale <= tol3z) {
      lapack_int below = m - i - 1;
      vn1[j] = below <= 0         ? 0.0
               : dtype == FAN_F64 ? fan_direct_norm(below, (double *)a + at + 1)
                                  : dznrm2_(&below, (double complex *)a + at + 1, &one);
      vn2[j] = vn1[j];
    } else {
      vn1[j] *= sqrt(temp);
    }
  }
}

/* tenlane's truncated pivoted QR on a c128 matrix of up to UNBLOCKED_MAX columns: one
 * step at a time until the last diagonal entry reaches the cut. Returns the columns
 * factored. */
static int qrcp_until_cut_z(int m, int n, double complex *factor, int *jpvt, double complex *tau,
                            double *norms, double complex *work, double rtol) {
  const lapack_int one = 1, rows = m;
  int k = m < n ? m : n;
  double *vn1 = norms, *vn2 = norms + n;
  for (int j = 0; j < n; j++) jpvt[j] = j + 1;
  for (int j = 0; j < n; j++) vn1[j] = dznrm2_(&rows, factor + (size_t)m * j, &one);
  memcpy(vn2, vn1, sizeof(double) * (size_t)n);
  double cut = -1.0;
  int done = 0;
  while (done < k) {
    qp_step(FAN_C128, m, n, done, factor, jpvt, tau, vn1, vn2, work);
    done++;
    if (cut < 0) cut = rtol * cabs(factor[0]);
    if (!(cabs(factor[(size_t)(done - 1) * (m + 1)]) > cut)) break;
  }
  return done;
}

/* tenlane's truncated pivoted QR on a real matrix (factor, m x n, ld m): up to
 * UNBLOCKED_MAX columns one unblocked step at a time, else blocked laqps steps, until the
 * last diagonal entry reaches the cut. Returns the columns factored. */
static int qrcp_until_cut(int m, int n, double *factor, int *jpvt, double *tau, double *norms,
                          double *aux, double rtol) {
  int k = m < n ? m : n;
  double *vn1 = norms, *vn2 = norms + n, *auxv = aux, *f = aux + QRCP_BLOCK;
  for (int j = 0; j < n; j++) jpvt[j] = j + 1;
  for (int j = 0; j < n; j++) vn1[j] = fan_direct_norm(m, factor + (size_t)m * j);
  memcpy(vn2, vn1, sizeof(double) * (size_t)n);
  double cut = -1.0;
  int done = 0;
  while (done < k) {
    if (n <= UNBLOCKED_MAX) {
      qp_step(FAN_F64, m, n, done, factor, jpvt, tau, vn1, vn2, f);
      done++;
    } else {
      lapack_int rows = m, cols = n - done, offset = done, ld = m, ldf = n - done, kb = 0;
      lapack_int block = k - done < QRCP_BLOCK ? k - done : QRCP_BLOCK;
      dlaqps_(&rows, &cols, &offset, &block, &kb, factor + (size_t)done * m, &ld, jpvt + done,
              tau + done, vn1 + done, vn2 + done, auxv, f, &ldf);
      if (kb <= 0) break;
      done += kb;
    }
    if (cut < 0) {
      cut = rtol * fabs(factor[0]);
      if (cut < 0.0) cut = 0.0;
    }
    if (!(fabs(factor[(size_t)(done - 1) * (m + 1)]) > cut)) break;
  }
  return done;
}

/* |r(i,i)| for i < steps, and how many of them exceed rtol |r(0,0)|. */
static int kept_rank(fan_dtype dtype, const void *factor, int m, int steps, double rtol) {
  if (steps == 0) return 0;
  double first = 0.0, cut = 0.0;
  int rank = 0;
  for (int i = 0; i < steps; i++) {
    size_t at = (size_t)i * (size_t)(m + 1);
    double v = dtype == FAN_F64 ? fabs(((const double *)factor)[at])
                                : cabs(((const double complex *)factor)[at]);
    if (i == 0) {
      first = v;
      cut = rtol * first;
    }
    if (!(v > cut)) break;
    rank++;
  }
  return rank;
}

static int full_geqp3(fan_direct *self, int m, int n, qr_scratch *s) {
  for (int j = 0; j < n; j++) s->jpvt[j] = 0; /* every column free to move */
  int allocating = self->style != FAN_DIRECT_KEPT;
  if (self->dtype == FAN_F64)
    return allocating ? LAPACKE_dgeqp3(LAPACK_COL_MAJOR, m, n, s->factor, m, s->jpvt, s->tau)
                      : LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, n, s->factor, m, s->jpvt, s->tau,
                                            s->work, s->lwork);
  return allocating ? LAPACKE_zgeqp3(LAPACK_COL_MAJOR, m, n, s->factor, m, s->jpvt, s->tau)
                    : LAPACKE_zgeqp3_work(LAPACK_COL_MAJOR, m, n, s->factor, m, s->jpvt, s->tau,
                                          s->work, s->lwork, s->rwork);
}

/* Q of the first `rank` reflectors, in place in q (m x rank, ld ldq). */
static int form_q(fan_direct *self, int m, int rank, void *q, int ldq, qr_scratch *s) {
  int allocating = self->style != FAN_DIRECT_KEPT;
  if (self->dtype == FAN_F64)
    return allocating ? LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, s->tau)
                      : LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, s->tau,
                                            s->work, s->lwork);
  return allocating ? LAPACKE_zungqr(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, s->tau)
                    : LAPACKE_zungqr_work(LAPACK_COL_MAJOR, m, rank, rank, q, ldq, s->tau, s->work,
                                          s->lwork);
}

static int direct_qrcp(fan_call *call, int m, int n, const void *a, int lda, double rtol, void *q,
                       int ldq, void *r, int ldr, int64_t *perm, int *rank_out) {
  fan_direct *self = call->backend;
  const size_t e = fan_dtype_size(call->dtype);
  qr_scratch s;
  if (qr_scratch_get(self, m, n, &s) != 0) {
    snprintf(call->why, sizeof call->why, "out of memory for a %d x %d QR", m, n);
    return 1;
  }
  int k = m < n ? m : n;
  for (int j = 0; j < n; j++)
    memcpy((char *)s.factor + e * (size_t)m * j, (const char *)a + e * (size_t)lda * j,
           e * (size_t)m);
  lapack_int info = 0;
  int steps = k;
  if (call->dtype == FAN_F64 && self->style != FAN_DIRECT_TYPICAL)
    steps = qrcp_until_cut(m, n, s.factor, s.jpvt, s.tau, s.norms, s.aux, rtol);
  else if (self->style != FAN_DIRECT_TYPICAL && n <= UNBLOCKED_MAX)
    steps = qrcp_until_cut_z(m, n, s.factor, s.jpvt, s.tau, s.norms,
                             (double complex *)s.aux + QRCP_BLOCK, rtol);
  else
    info = full_geqp3(self, m, n, &s);
  int rank = info == 0 ? kept_rank(call->dtype, s.factor, m, steps, rtol) : 0;
  if (info == 0) {
    for (int j = 0; j < n; j++)
      for (int i = 0; i < k; i++) {
        char *to = (char *)r + e * ((size_t)i + (size_t)ldr * j);
        if (i < rank && i <= j)
          memcpy(to, (const char *)s.factor + e * ((size_t)i + (size_t)m * j), e);
        else
          memset(to, 0, e);
      }
    for (int j = 0; j < k; j++) {
      char *to = (char *)q + e * (size_t)ldq * j;
      if (j < rank)
        memcpy(to, (const char *)s.factor + e * (size_t)m * j, e * (size_t)m);
      else
        memset(to, 0, e * (size_t)m);
    }
    if (rank > 0) info = form_q(self, m, rank, q, ldq, &s);
    for (int j = 0; j < n; j++) perm[j] = s.jpvt[j] - 1; /* LAPACK counts from 1 */
  }
  qr_scratch_put(self, &s);
  if (info != 0) {
    snprintf(call->why, sizeof call->why, "LAPACK pivoted QR (m=%d, n=%d) returned info=%d", m, n,
             (int)info);
    return 1;
  }
  *rank_out = rank;
  return 0;
}

/* ---- LU and the triangular solves -------------------------------------------------------- */

static int direct_lu(fan_call *call, int m, int n, const void *a, int lda, void *lu, int ldlu,
                     int64_t *pivots) {
  fan_direct *self = call->backend;
  const size_t e = fan_dtype_size(call->dtype);
  int k = m < n ? m : n;
  int *ipiv =
      self->style == FAN_DIRECT_KEPT ? self->ipiv : malloc(sizeof(int) * (size_t)(k > 0 ? k : 1));
  if (!ipiv) {
    snprintf(call->why, sizeof call->why, "out of memory for a %d x %d LU", m, n);
    return 1;
  }
  for (int j = 0; j < n; j++)
    memcpy((char *)lu + e * (size_t)ldlu * j, (const char *)a + e * (size_t)lda * j, e * (size_t)m);
  lapack_int info = 0;
  if (k <= GETF2_MAX && self->style != FAN_DIRECT_TYPICAL) {
    lapack_int lm = m, ln = n, ld = ldlu;
    if (call->dtype == FAN_F64)
      dgetf2_(&lm, &ln, lu, &ld, ipiv, &info);
    else
      zgetf2_(&lm, &ln, lu, &ld, ipiv, &info);
  } else {
    info = call->dtype == FAN_F64 ? LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, lu, ldlu, ipiv)
                                  : LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, m, n, lu, ldlu, ipiv);
  }
  for (int i = 0; i < k; i++) pivots[i] = ipiv[i] - 1;
  if (self->style != FAN_DIRECT_KEPT) free(ipiv);
  if (info < 0) { /* info > 0: U is singular, which the solves report */
    snprintf(call->why, sizeof call->why, "LAPACK getrf (m=%d, n=%d) returned info=%d", m, n,
             (int)info);
    return 1;
  }
  return 0;
}

static int direct_solve_right(fan_call *call, int lower, int unit, int m, int n, const void *t,
                              int ldt, const void *b, int ldb, void *x, int ldx) {
  const size_t e = fan_dtype_size(call->dtype);
  if (!unit)
    for (int i = 0; i < n; i++) {
      const char *at = (const char *)t + e * ((size_t)i + (size_t)ldt * i);
      int zero =
          call->dtype == FAN_F64 ? *(const double *)at == 0.0 : *(const double complex *)at == 0.0;
      if (zero) {
        snprintf(call->why, sizeof call->why,
                 "triangular solve: diagonal entry %d of the %d x %d triangle is zero", i, n, n);
        return 1;
      }
    }
  for (int j = 0; j < n; j++)
    memcpy((char *)x + e * (size_t)ldx * j, (const char *)b + e * (size_t)ldb * j, e * (size_t)m);
  fan_direct_trsm_right(call->dtype, lower, unit, m, n, t, ldt, x, ldx);
  return 0;
}

const fan_ops fan_direct_ops = {"direct", fan_direct_gemm, direct_qrcp, direct_lu,
                                direct_solve_right};

/* ---- Per-thread scratch ---------------------------------------------------------------- */

int fan_direct_make(fan_direct *d, fan_direct_style style, const fan_problem *pb) {
  memset(d, 0, sizeof *d);
  d->style = style;
  d->dtype = pb->dtype;
  if (style != FAN_DIRECT_KEPT) return 0;
  int m = fan_grid_side_max(pb);
  size_t e = fan_dtype_size(pb->dtype);
  d->lapack_lwork = qr_lwork(pb->dtype, m, m);
  d->lapack_work = malloc(e * (size_t)d->lapack_lwork);
  d->factor = malloc(e * (size_t)m * (size_t)m);
  d->tau = malloc(e * (size_t)m);
  d->norms = malloc(sizeof(double) * 2 * (size_t)m);
  d->aux = malloc(e * (size_t)QRCP_BLOCK * (size_t)(m + 1));
  d->rwork = malloc(sizeof(double) * 2 * (size_t)m);
  d->ipiv = malloc(sizeof(int) * (size_t)m);
  if (d->lapack_work && d->factor && d->tau && d->norms && d->aux && d->rwork && d->ipiv) return 0;
  fan_direct_free(d);
  return -1;
}

void fan_direct_free(fan_direct *d) {
  free(d->lapack_work);
  free(d->factor);
  free(d->tau);
  free(d->norms);
  free(d->aux);
  free(d->rwork);
  free(d->ipiv);
  memset(d, 0, sizeof *d);
}
