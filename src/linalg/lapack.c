/* src/linalg/lapack.c: the linear algebra cores: LAPACK (through LAPACKE's _work entries,
 * column-major, so LAPACKE neither transposes nor allocates) and BLAS trsm, dispatched on
 * the dtype, on raw column-major buffers.
 *
 * Invariant: these functions allocate nothing and start no thread: every buffer is the
 * caller's, workspace sizes come from the *_query functions (LAPACK's lwork = -1 query),
 * and the providers linked are single-threaded. A query is its compute twin called with no
 * buffers and lwork = -1 (through the twin's static *_call where the public twin arms the
 * injected argument fault), so the dtype dispatch is written once per routine.
 *
 * Every call into the provider's LAPACK or BLAS here holds the provider's lock
 * (tl__prov_lock: OpenBLAS's serial build, whose buffer pool concurrent callers could share;
 * nothing elsewhere): each LAPACKE call through checked(), the Fortran calls by hand. */
#include <complex.h>
#include <float.h>
#include <math.h>

#include "base/fault.h"
#include "kernels/kernels.h"
#include "linalg_int.h"

/* LAPACK's info, unless xerbla_ fired on this thread during a call that reported success
 * (an inner routine rejected an argument): then a failure (TL__LA_XERBLA_INFO), so that
 * no route takes a result LAPACK computed past an argument error. */
static lapack_int checked_info(lapack_int info) {
  return info >= 0 && tl__xerbla_pending() ? TL__LA_XERBLA_INFO : info;
}

/* The provider's lock, taken before `call` (an expression giving LAPACK's info) is evaluated
 * and dropped after it, then checked_info. */
static lapack_int unlock_with(lapack_int info) {
  tl__prov_unlock();
  return checked_info(info);
}
#define checked(call) (tl__prov_lock(), unlock_with(call))

/* The injected fault TL__FAULT_LAPACK_ARGUMENT: a leading dimension of 0, which LAPACK
 * rejects through xerbla_ (the tests use it to reach the real handler). */
static lapack_int fault_ld(lapack_int ld) {
  return tl__fault_hit(TL__FAULT_LAPACK_ARGUMENT) ? 0 : ld;
}

/* BLAS trsm (Fortran interface of the linked BLAS; 32-bit integers). */
void strsm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const lapack_int *m, const lapack_int *n, const float *alpha, const float *a,
            const lapack_int *lda, float *b, const lapack_int *ldb);
void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const lapack_int *m, const lapack_int *n, const double *alpha, const double *a,
            const lapack_int *lda, double *b, const lapack_int *ldb);
void ctrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const lapack_int *m, const lapack_int *n, const float complex *alpha,
            const float complex *a, const lapack_int *lda, float complex *b, const lapack_int *ldb);
void ztrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
            const lapack_int *m, const lapack_int *n, const double complex *alpha,
            const double complex *a, const lapack_int *lda, double complex *b,
            const lapack_int *ldb);

/* A queried size (LAPACK returns it as a floating-point value, rounded in single
 * precision for f32/c64), rounded up with a margin. */
static int64_t size_from(tl_dtype dtype, const void *q) {
  double value =
      (dtype == TL_F32 || dtype == TL_C64) ? (double)*(const float *)q : *(const double *)q;
  if (!(value >= 1.0)) return 1;
  return (int64_t)(value * (1.0 + 1e-6)) + 1;
}

/* The end of every *_query: record the sizes and pass LAPACK's info through. */
static lapack_int queried(tl__la_work *sizes, int64_t work, int64_t rwork, int64_t iwork,
                          lapack_int info) {
  sizes->work = work;
  sizes->rwork = rwork;
  sizes->iwork = iwork;
  return info;
}

static lapack_int geqrf_call(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                             void *tau, void *work, lapack_int lwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork));
    case TL_F64:
      return checked(LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork));
    case TL_C64:
      return checked(LAPACKE_cgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork));
    case TL_C128:
      return checked(LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork));
  }
  return -1;
}

lapack_int tl__lapack_geqrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            void *tau, void *work, lapack_int lwork) {
  return geqrf_call(dtype, m, n, a, fault_ld(lda), tau, work, lwork);
}

lapack_int tl__lapack_geqrf_query(tl_dtype dtype, lapack_int m, lapack_int n, tl__la_work *sizes) {
  double complex q = 0;
  lapack_int info = geqrf_call(dtype, m, n, NULL, tl__la_ld(m), NULL, &q, -1);
  return queried(sizes, size_from(dtype, &q), 0, 0, info);
}

lapack_int tl__lapack_ungqr(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k, void *a,
                            lapack_int lda, const void *tau, void *work, lapack_int lwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork));
    case TL_F64:
      return checked(LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork));
    case TL_C64:
      return checked(LAPACKE_cungqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork));
    case TL_C128:
      return checked(LAPACKE_zungqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork));
  }
  return -1;
}

lapack_int tl__lapack_ungqr_query(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k,
                                  tl__la_work *sizes) {
  double complex q = 0;
  lapack_int info = tl__lapack_ungqr(dtype, m, n, k, NULL, tl__la_ld(m), NULL, &q, -1);
  return queried(sizes, size_from(dtype, &q), 0, 0, info);
}

lapack_int tl__lapack_geqp3(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            lapack_int *jpvt, void *tau, void *work, lapack_int lwork,
                            void *rwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgeqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork));
    case TL_F64:
      return checked(LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork));
    case TL_C64:
      return checked(
          LAPACKE_cgeqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork, rwork));
    case TL_C128:
      return checked(
          LAPACKE_zgeqp3_work(LAPACK_COL_MAJOR, m, n, a, lda, jpvt, tau, work, lwork, rwork));
  }
  return -1;
}

lapack_int tl__lapack_geqp3_query(tl_dtype dtype, lapack_int m, lapack_int n, tl__la_work *sizes) {
  double complex q = 0;
  lapack_int info = tl__lapack_geqp3(dtype, m, n, NULL, tl__la_ld(m), NULL, NULL, &q, -1, NULL);
  return queried(sizes, size_from(dtype, &q), tl_dtype_is_complex(dtype) ? 2 * (int64_t)n + 1 : 0,
                 0, info);
}

/* LAPACK's blocked step of QR with column pivoting (the step geqp3 loops over) and the
 * column norms it starts from; LAPACKE wraps neither. */
extern void dlaqps_(const lapack_int *m, const lapack_int *n, const lapack_int *offset,
                    const lapack_int *nb, lapack_int *kb, double *a, const lapack_int *lda,
                    lapack_int *jpvt, double *tau, double *vn1, double *vn2, double *auxv,
                    double *f, const lapack_int *ldf);
extern void slaqps_(const lapack_int *m, const lapack_int *n, const lapack_int *offset,
                    const lapack_int *nb, lapack_int *kb, float *a, const lapack_int *lda,
                    lapack_int *jpvt, float *tau, float *vn1, float *vn2, float *auxv, float *f,
                    const lapack_int *ldf);
/* The provider's Euclidean norms through the kernels' boundary (tl__prov_nrm2), in the
 * argument form of BLAS's nrm2 that the pivoted steps below take; n < 1 gives 0. */
static double nrm2_d(const lapack_int *n, const double *x, const lapack_int *incx) {
  return *n > 0 ? tl__prov_nrm2(TL_F64, *n, x, *incx) : 0.0;
}
static float nrm2_s(const lapack_int *n, const float *x, const lapack_int *incx) {
  return *n > 0 ? (float)tl__prov_nrm2(TL_F32, *n, x, *incx) : 0.0f;
}
static double nrm2_z(const lapack_int *n, const double complex *x, const lapack_int *incx) {
  return *n > 0 ? tl__prov_nrm2(TL_C128, *n, x, *incx) : 0.0;
}

lapack_int tl__lapack_laqps(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int offset,
                            lapack_int nb, void *a, lapack_int lda, lapack_int *jpvt, void *tau,
                            void *vn1, void *vn2, void *auxv, void *f, lapack_int ldf) {
  lapack_int kb = 0;
  tl__prov_lock();
  if (dtype == TL_F64) {
    dlaqps_(&m, &n, &offset, &nb, &kb, a, &lda, jpvt, tau, vn1, vn2, auxv, f, &ldf);
  } else {
    slaqps_(&m, &n, &offset, &nb, &kb, a, &lda, jpvt, tau, vn1, vn2, auxv, f, &ldf);
  }
  tl__prov_unlock();
  return kb;
}

/* LAPACK's Householder reflector, generated (larfg) and applied from the left (larf), both
 * with level-2 BLAS only; lapack.h declares them (LAPACK_dlarf passes the hidden length of
 * its character argument). */
static void larf_d(const lapack_int *m, const lapack_int *n, const double *v,
                   const lapack_int *incv, const double *tau, double *c, const lapack_int *ldc,
                   double *work) {
  LAPACK_dlarf("L", m, n, v, incv, tau, c, ldc, work);
}
static void larf_s(const lapack_int *m, const lapack_int *n, const float *v, const lapack_int *incv,
                   const float *tau, float *c, const lapack_int *ldc, float *work) {
  LAPACK_slarf("L", m, n, v, incv, tau, c, ldc, work);
}

/* One step of the unblocked pivoted QR, for T = double or float (the step of LAPACK's
 * laqp2, at row and column i of the whole matrix). */
#define TL__QP_STEP(NAME, T, LARFG, LARF, NRM2, EPS)                                  \
  static void NAME(lapack_int m, lapack_int n, lapack_int i, T *a, lapack_int lda,    \
                   lapack_int *jpvt, T *tau, T *vn1, T *vn2, T *work) {               \
    const lapack_int one = 1;                                                         \
    lapack_int pvt = i;                                                               \
    for (lapack_int j = i + 1; j < n; j++)                                            \
      if (vn1[j] > vn1[pvt]) pvt = j;                                                 \
    if (pvt != i) {                                                                   \
      for (lapack_int r = 0; r < m; r++) {                                            \
        T keep = a[r + (int64_t)lda * pvt];                                           \
        a[r + (int64_t)lda * pvt] = a[r + (int64_t)lda * i];                          \
        a[r + (int64_t)lda * i] = keep;                                               \
      }                                                                               \
      lapack_int keep = jpvt[pvt];                                                    \
      jpvt[pvt] = jpvt[i];                                                            \
      jpvt[i] = keep;                                                                 \
      vn1[pvt] = vn1[i];                                                              \
      vn2[pvt] = vn2[i];                                                              \
    }                                                                                 \
    T *aii = a + i + (int64_t)lda * i;                                                \
    lapack_int len = m - i;                                                           \
    LARFG(&len, aii, len > 1 ? aii + 1 : aii, &one, &tau[i]);                         \
    if (i + 1 < n) {                                                                  \
      T saved = *aii;                                                                 \
      lapack_int cols = n - i - 1;                                                    \
      *aii = (T)1;                                                                    \
      LARF(&len, &cols, aii, &one, &tau[i], aii + lda, &lda, work);                   \
      *aii = saved;                                                                   \
    }                                                                                 \
    const T tol3z = (T)sqrt((double)(EPS));                                           \
    for (lapack_int j = i + 1; j < n; j++) {                                          \
      if (vn1[j] == (T)0) continue;                                                   \
      T ratio = (T)fabs((double)a[i + (int64_t)lda * j]) / vn1[j];                    \
      T temp = (T)1 - ratio * ratio;                                                  \
      if (temp < (T)0) temp = (T)0;                                                   \
      T scale = vn1[j] / vn2[j];                                                      \
      if (temp * scale * scale <= tol3z) {                                            \
        lapack_int below = m - i - 1;                                                 \
        vn1[j] = below > 0 ? NRM2(&below, a + i + 1 + (int64_t)lda * j, &one) : (T)0; \
        vn2[j] = vn1[j];                                                              \
      } else {                                                                        \
        vn1[j] *= (T)sqrt((double)temp);                                              \
      }                                                                               \
    }                                                                                 \
  }

TL__QP_STEP(qp_step_d, double, LAPACK_dlarfg, larf_d, nrm2_d, DBL_EPSILON * 0.5)
TL__QP_STEP(qp_step_s, float, LAPACK_slarfg, larf_s, nrm2_s, FLT_EPSILON * 0.5f)

/* The same step for c128 (zlaqp2's): the reflector is applied as H^H (conj(tau)); the
 * norms are real. */
static void qp_step_z(lapack_int m, lapack_int n, lapack_int i, double complex *a, lapack_int lda,
                      lapack_int *jpvt, double complex *tau, double *vn1, double *vn2,
                      double complex *work) {
  const lapack_int one = 1;
  lapack_int pvt = i;
  for (lapack_int j = i + 1; j < n; j++)
    if (vn1[j] > vn1[pvt]) pvt = j;
  if (pvt != i) {
    for (lapack_int r = 0; r < m; r++) {
      double complex keep = a[r + (int64_t)lda * pvt];
      a[r + (int64_t)lda * pvt] = a[r + (int64_t)lda * i];
      a[r + (int64_t)lda * i] = keep;
    }
    lapack_int keep = jpvt[pvt];
    jpvt[pvt] = jpvt[i];
    jpvt[i] = keep;
    vn1[pvt] = vn1[i];
    vn2[pvt] = vn2[i];
  }
  double complex *aii = a + i + (int64_t)lda * i;
  lapack_int len = m - i;
  LAPACK_zlarfg(&len, aii, len > 1 ? aii + 1 : aii, &one, &tau[i]);
  if (i + 1 < n) {
    double complex saved = *aii, ctau = conj(tau[i]);
    lapack_int cols = n - i - 1;
    *aii = 1.0;
    LAPACK_zlarf("L", &len, &cols, aii, &one, &ctau, aii + lda, &lda, work);
    *aii = saved;
  }
  const double tol3z = sqrt(DBL_EPSILON * 0.5);
  for (lapack_int j = i + 1; j < n; j++) {
    if (vn1[j] == 0.0) continue;
    double ratio = cabs(a[i + (int64_t)lda * j]) / vn1[j];
    double temp = 1.0 - ratio * ratio;
    if (temp < 0.0) temp = 0.0;
    double scale = vn1[j] / vn2[j];
    if (temp * scale * scale <= tol3z) {
      lapack_int below = m - i - 1;
      vn1[j] = below > 0 ? nrm2_z(&below, a + i + 1 + (int64_t)lda * j, &one) : 0.0;
      vn2[j] = vn1[j];
    } else {
      vn1[j] *= sqrt(temp);
    }
  }
}

void tl__lapack_qp_step(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int i, void *a,
                        lapack_int lda, lapack_int *jpvt, void *tau, void *vn1, void *vn2,
                        void *work) {
  tl__prov_lock(); /* larfg, larf: the provider's LAPACK */
  if (dtype == TL_F64)
    qp_step_d(m, n, i, a, lda, jpvt, tau, vn1, vn2, work);
  else if (dtype == TL_C128)
    qp_step_z(m, n, i, a, lda, jpvt, tau, vn1, vn2, work);
  else
    qp_step_s(m, n, i, a, lda, jpvt, tau, vn1, vn2, work);
  tl__prov_unlock();
}

/* The sum of squares of x (m reals), in four running sums. */
static double sum_squares(const double *x, lapack_int m) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  lapack_int i = 0;
  for (; i + 4 <= m; i += 4) {
    s0 += x[i] * x[i];
    s1 += x[i + 1] * x[i + 1];
    s2 += x[i + 2] * x[i + 2];
    s3 += x[i + 3] * x[i + 3];
  }
  for (; i < m; i++) s0 += x[i] * x[i];
  return (s0 + s1) + (s2 + s3);
}

void tl__lapack_column_norms(tl_dtype dtype, lapack_int m, lapack_int n, const void *a,
                             lapack_int lda, void *norms) {
  const lapack_int one = 1;
  for (lapack_int j = 0; j < n; j++) {
    if (dtype == TL_F64 || dtype == TL_C128) {
      /* The plain sum of squares where it can neither overflow nor lose digits to underflow
       * (BLAS nrm2 scales every element, which costs several times as much: these are the
       * n norms every truncated pivoted QR starts from); nrm2 otherwise. A c128 column is
       * 2m reals. */
      int parts = dtype == TL_C128 ? 2 : 1;
      const double *x = (const double *)a + (int64_t)j * lda * parts;
      lapack_int reals = m * parts;
      double sum = sum_squares(x, reals);
      ((double *)norms)[j] = sum > 1e-280 && sum < 1e280 ? sqrt(sum) : nrm2_d(&reals, x, &one);
    } else {
      ((float *)norms)[j] = nrm2_s(&m, (const float *)a + (int64_t)j * lda, &one);
    }
  }
}

static lapack_int gesdd_call(tl_dtype dtype, char jobz, lapack_int m, lapack_int n, void *a,
                             lapack_int lda, void *s, void *u, lapack_int ldu, void *vt,
                             lapack_int ldvt, void *work, lapack_int lwork, void *rwork,
                             lapack_int *iwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt,
                                         work, lwork, iwork));
    case TL_F64:
      return checked(LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt,
                                         work, lwork, iwork));
    case TL_C64:
      return checked(LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt,
                                         work, lwork, rwork, iwork));
    case TL_C128:
      return checked(LAPACKE_zgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt,
                                         work, lwork, rwork, iwork));
  }
  return -1;
}

lapack_int tl__lapack_gesdd(tl_dtype dtype, char jobz, lapack_int m, lapack_int n, void *a,
                            lapack_int lda, void *s, void *u, lapack_int ldu, void *vt,
                            lapack_int ldvt, void *work, lapack_int lwork, void *rwork,
                            lapack_int *iwork) {
  return gesdd_call(dtype, jobz, m, n, a, fault_ld(lda), s, u, ldu, vt, ldvt, work, lwork, rwork,
                    iwork);
}

lapack_int tl__lapack_gesdd_query(tl_dtype dtype, char jobz, lapack_int m, lapack_int n,
                                  tl__la_work *sizes) {
  double complex q = 0;
  lapack_int lda = tl__la_ld(m), info;
  lapack_int mn = m < n ? m : n, mx = m < n ? n : m;
  lapack_int ldu = lda, ldvt = tl__la_ld(mn);
  info = gesdd_call(dtype, jobz, m, n, NULL, lda, NULL, NULL, ldu, NULL, ldvt, &q, -1, NULL, NULL);
  /* LAPACK 3.7+ bounds for the complex rwork (not returned by the query). */
  int64_t a5 = 5 * (int64_t)mn + 7, b2 = 2 * (int64_t)mx + 2 * (int64_t)mn + 1;
  int64_t rwork = !tl_dtype_is_complex(dtype) ? 0
                  : jobz == 'N'               ? 7 * (int64_t)mn + 1
                                              : (int64_t)mn * (a5 > b2 ? a5 : b2) + 1;
  return queried(sizes, size_from(dtype, &q), rwork, 8 * (int64_t)mn + 1, info);
}

lapack_int tl__lapack_gesvd(tl_dtype dtype, char jobz, lapack_int m, lapack_int n, void *a,
                            lapack_int lda, void *s, void *u, lapack_int ldu, void *vt,
                            lapack_int ldvt, void *work, lapack_int lwork, void *rwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgesvd_work(LAPACK_COL_MAJOR, jobz, jobz, m, n, a, lda, s, u, ldu, vt,
                                         ldvt, work, lwork));
    case TL_F64:
      return checked(LAPACKE_dgesvd_work(LAPACK_COL_MAJOR, jobz, jobz, m, n, a, lda, s, u, ldu, vt,
                                         ldvt, work, lwork));
    case TL_C64:
      return checked(LAPACKE_cgesvd_work(LAPACK_COL_MAJOR, jobz, jobz, m, n, a, lda, s, u, ldu, vt,
                                         ldvt, work, lwork, rwork));
    case TL_C128:
      return checked(LAPACKE_zgesvd_work(LAPACK_COL_MAJOR, jobz, jobz, m, n, a, lda, s, u, ldu, vt,
                                         ldvt, work, lwork, rwork));
  }
  return -1;
}

lapack_int tl__lapack_gesvd_query(tl_dtype dtype, char jobz, lapack_int m, lapack_int n,
                                  tl__la_work *sizes) {
  double complex q = 0;
  lapack_int lda = tl__la_ld(m);
  lapack_int mn = m < n ? m : n;
  lapack_int ldu = lda, ldvt = tl__la_ld(mn);
  lapack_int info =
      tl__lapack_gesvd(dtype, jobz, m, n, NULL, lda, NULL, NULL, ldu, NULL, ldvt, &q, -1, NULL);
  return queried(sizes, size_from(dtype, &q), tl_dtype_is_complex(dtype) ? 5 * (int64_t)mn + 1 : 0,
                 0, info);
}

lapack_int tl__lapack_getrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            lapack_int *ipiv, void *pack) {
  lda = fault_ld(lda);
  /* tenlane's own recursive LU (getrf.c); LAPACK only sees a malformed call (the injected
   * fault), so that its argument check and xerbla_ still answer it. */
  if (lda >= (m > 1 ? m : 1) && m >= 0 && n >= 0) return tl__getrf(dtype, m, n, a, lda, ipiv, pack);
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv));
    case TL_F64:
      return checked(LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv));
    case TL_C64:
      return checked(LAPACKE_cgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv));
    case TL_C128:
      return checked(LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv));
  }
  return -1;
}

lapack_int tl__lapack_getrs(tl_dtype dtype, char trans, lapack_int n, lapack_int nrhs,
                            const void *a, lapack_int lda, const lapack_int *ipiv, void *b,
                            lapack_int ldb) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb));
    case TL_F64:
      return checked(LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb));
    case TL_C64:
      return checked(LAPACKE_cgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb));
    case TL_C128:
      return checked(LAPACKE_zgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb));
  }
  return -1;
}

void tl__blas_trsm(tl_dtype dtype, char side, char uplo, char trans, char diag, lapack_int m,
                   lapack_int n, const void *a, lapack_int lda, void *b, lapack_int ldb) {
  if ((side == 'L' ? m : n) <= TL__TRSM_SMALL_MAX) {
    tl__trsm_small(dtype, side, uplo, trans, diag, m, n, a, lda, b, ldb);
    return;
  }
  tl__prov_lock();
  switch (dtype) {
    case TL_F32: {
      const float one = 1.0f;
      strsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb);
      break;
    }
    case TL_F64: {
      const double one = 1.0;
      dtrsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb);
      break;
    }
    case TL_C64: {
      const float complex one = 1.0f;
      ctrsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb);
      break;
    }
    case TL_C128: {
      const double complex one = 1.0;
      ztrsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb);
      break;
    }
  }
  tl__prov_unlock();
}

/* ---- The pieces of syevd / heevd that tl_eigh drives itself (eigh.c), lower triangle
 * only: the tridiagonal reduction one panel at a time (latrd + a rank-2k update, what
 * sytrd / hetrd loop over), the tridiagonal solvers (sterf, stedc) and the back-
 * transformation (larft + larfb per block of reflectors). latrd has no LAPACKE entry: it is called
 * under its Fortran name (hidden string lengths last), as are BLAS syr2k / her2k. */

extern void slatrd_(const char *uplo, const lapack_int *n, const lapack_int *nb, float *a,
                    const lapack_int *lda, float *e, float *tau, float *w, const lapack_int *ldw,
                    size_t uplo_len);
extern void dlatrd_(const char *uplo, const lapack_int *n, const lapack_int *nb, double *a,
                    const lapack_int *lda, double *e, double *tau, double *w, const lapack_int *ldw,
                    size_t uplo_len);
extern void clatrd_(const char *uplo, const lapack_int *n, const lapack_int *nb, float complex *a,
                    const lapack_int *lda, float *e, float complex *tau, float complex *w,
                    const lapack_int *ldw, size_t uplo_len);
extern void zlatrd_(const char *uplo, const lapack_int *n, const lapack_int *nb, double complex *a,
                    const lapack_int *lda, double *e, double complex *tau, double complex *w,
                    const lapack_int *ldw, size_t uplo_len);
extern void ssyr2k_(const char *uplo, const char *trans, const lapack_int *n, const lapack_int *k,
                    const float *alpha, const float *a, const lapack_int *lda, const float *b,
                    const lapack_int *ldb, const float *beta, float *c, const lapack_int *ldc,
                    size_t uplo_len, size_t trans_len);
extern void dsyr2k_(const char *uplo, const char *trans, const lapack_int *n, const lapack_int *k,
                    const double *alpha, const double *a, const lapack_int *lda, const double *b,
                    const lapack_int *ldb, const double *beta, double *c, const lapack_int *ldc,
                    size_t uplo_len, size_t trans_len);
extern void cher2k_(const char *uplo, const char *trans, const lapack_int *n, const lapack_int *k,
                    const float complex *alpha, const float complex *a, const lapack_int *lda,
                    const float complex *b, const lapack_int *ldb, const float *beta,
                    float complex *c, const lapack_int *ldc, size_t uplo_len, size_t trans_len);
extern void zher2k_(const char *uplo, const char *trans, const lapack_int *n, const lapack_int *k,
                    const double complex *alpha, const double complex *a, const lapack_int *lda,
                    const double complex *b, const lapack_int *ldb, const double *beta,
                    double complex *c, const lapack_int *ldc, size_t uplo_len, size_t trans_len);

void tl__lapack_latrd_lower(tl_dtype dtype, lapack_int n, lapack_int nb, void *a, lapack_int lda,
                            void *e, void *tau, void *w, lapack_int ldw) {
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      slatrd_("L", &n, &nb, a, &lda, e, tau, w, &ldw, 1);
      break;
    case TL_F64:
      dlatrd_("L", &n, &nb, a, &lda, e, tau, w, &ldw, 1);
      break;
    case TL_C64:
      clatrd_("L", &n, &nb, a, &lda, e, tau, w, &ldw, 1);
      break;
    case TL_C128:
      zlatrd_("L", &n, &nb, a, &lda, e, tau, w, &ldw, 1);
      break;
  }
  tl__prov_unlock();
}

void tl__blas_rank2k_lower(tl_dtype dtype, lapack_int n, lapack_int k, const void *a,
                           lapack_int lda, const void *b, lapack_int ldb, void *c, lapack_int ldc) {
  tl__prov_lock();
  switch (dtype) {
    case TL_F32: {
      const float minus = -1.0f, one = 1.0f;
      ssyr2k_("L", "N", &n, &k, &minus, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
      break;
    }
    case TL_F64: {
      const double minus = -1.0, one = 1.0;
      dsyr2k_("L", "N", &n, &k, &minus, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
      break;
    }
    case TL_C64: {
      const float complex minus = -1.0f;
      const float one = 1.0f;
      cher2k_("L", "N", &n, &k, &minus, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
      break;
    }
    case TL_C128: {
      const double complex minus = -1.0;
      const double one = 1.0;
      zher2k_("L", "N", &n, &k, &minus, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
      break;
    }
  }
  tl__prov_unlock();
}

lapack_int tl__lapack_sytrd_lower(tl_dtype dtype, lapack_int n, void *a, lapack_int lda, void *d,
                                  void *e, void *tau, void *work, lapack_int lwork) {
  lda = fault_ld(lda);
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_ssytrd_work(LAPACK_COL_MAJOR, 'L', n, a, lda, d, e, tau, work, lwork));
    case TL_F64:
      return checked(LAPACKE_dsytrd_work(LAPACK_COL_MAJOR, 'L', n, a, lda, d, e, tau, work, lwork));
    case TL_C64:
      return checked(LAPACKE_chetrd_work(LAPACK_COL_MAJOR, 'L', n, a, lda, d, e, tau, work, lwork));
    case TL_C128:
      return checked(LAPACKE_zhetrd_work(LAPACK_COL_MAJOR, 'L', n, a, lda, d, e, tau, work, lwork));
  }
  return -1;
}

lapack_int tl__lapack_sterf(tl_dtype real, lapack_int n, void *d, void *e) {
  if (real == TL_F32) return checked(LAPACKE_ssterf_work(n, d, e));
  return checked(LAPACKE_dsterf_work(n, d, e));
}

/* The pieces of stedc that tridiag.c drives itself: steqr (compz 'I') for a leaf, laed1 for
 * one merge of two solved halves. laed1 has no LAPACKE entry and no string argument. */
extern void slaed1_(const lapack_int *n, float *d, float *q, const lapack_int *ldq,
                    lapack_int *indxq, float *rho, const lapack_int *cutpnt, float *work,
                    lapack_int *iwork, lapack_int *info);
extern void dlaed1_(const lapack_int *n, double *d, double *q, const lapack_int *ldq,
                    lapack_int *indxq, double *rho, const lapack_int *cutpnt, double *work,
                    lapack_int *iwork, lapack_int *info);

lapack_int tl__lapack_steqr(tl_dtype real, lapack_int n, void *d, void *e, void *z, lapack_int ldz,
                            void *work) {
  if (real == TL_F32)
    return checked(LAPACKE_ssteqr_work(LAPACK_COL_MAJOR, 'I', n, d, e, z, ldz, work));
  return checked(LAPACKE_dsteqr_work(LAPACK_COL_MAJOR, 'I', n, d, e, z, ldz, work));
}

lapack_int tl__lapack_laed1(tl_dtype real, lapack_int n, void *d, void *q, lapack_int ldq,
                            lapack_int *indxq, double rho, lapack_int cutpnt, void *work,
                            lapack_int *iwork) {
  lapack_int info = 0;
  tl__prov_lock();
  if (real == TL_F32) {
    float r = (float)rho; /* laed1 may change its rho: a copy */
    slaed1_(&n, d, q, &ldq, indxq, &r, &cutpnt, work, iwork, &info);
  } else {
    double r = rho;
    dlaed1_(&n, d, q, &ldq, indxq, &r, &cutpnt, work, iwork, &info);
  }
  tl__prov_unlock();
  return checked_info(info);
}

/* The pieces of laed1 that tridiag.c runs itself when it drives a merge (tl__tridiag_merge):
 * laed2's deflation, laed4's secular equation for a range of roots, the matrix product and
 * the norm laed3 would call. laed2 and laed4 have no LAPACKE entry and no string argument. */
extern void slaed2_(lapack_int *k, const lapack_int *n, const lapack_int *n1, float *d, float *q,
                    const lapack_int *ldq, lapack_int *indxq, float *rho, float *z, float *dlamda,
                    float *w, float *q2, lapack_int *indx, lapack_int *indxc, lapack_int *indxp,
                    lapack_int *coltyp, lapack_int *info);
extern void dlaed2_(lapack_int *k, const lapack_int *n, const lapack_int *n1, double *d, double *q,
                    const lapack_int *ldq, lapack_int *indxq, double *rho, double *z,
                    double *dlamda, double *w, double *q2, lapack_int *indx, lapack_int *indxc,
                    lapack_int *indxp, lapack_int *coltyp, lapack_int *info);
extern void slaed4_(const lapack_int *n, const lapack_int *i, const float *d, const float *z,
                    float *delta, const float *rho, float *dlam, lapack_int *info);
extern void dlaed4_(const lapack_int *n, const lapack_int *i, const double *d, const double *z,
                    double *delta, const double *rho, double *dlam, lapack_int *info);
extern void TL__BLAS_ENTRY(sgemm_)(const char *transa, const char *transb, const int *m,
                                   const int *n, const int *k, const float *alpha, const float *a,
                                   const int *lda, const float *b, const int *ldb,
                                   const float *beta, float *c, const int *ldc,
                                   size_t transa_length, size_t transb_length);
extern void TL__BLAS_ENTRY(dgemm_)(const char *transa, const char *transb, const int *m,
                                   const int *n, const int *k, const double *alpha, const double *a,
                                   const int *lda, const double *b, const int *ldb,
                                   const double *beta, double *c, const int *ldc,
                                   size_t transa_length, size_t transb_length);

lapack_int tl__lapack_laed2(tl_dtype real, lapack_int *k, lapack_int n, lapack_int n1, void *d,
                            void *q, lapack_int ldq, lapack_int *indxq, double *rho, void *z,
                            void *dlamda, void *w, void *q2, lapack_int *iwork) {
  lapack_int info = 0;
  lapack_int *indx = iwork, *indxc = iwork + n, *coltyp = iwork + 2 * (int64_t)n,
             *indxp = iwork + 3 * (int64_t)n;
  tl__prov_lock();
  if (real == TL_F32) {
    float r = (float)*rho;
    slaed2_(k, &n, &n1, d, q, &ldq, indxq, &r, z, dlamda, w, q2, indx, indxc, indxp, coltyp, &info);
    *rho = (double)r;
  } else {
    dlaed2_(k, &n, &n1, d, q, &ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp,
            &info);
  }
  tl__prov_unlock();
  return checked_info(info);
}

lapack_int tl__lapack_laed4(tl_dtype real, lapack_int k, lapack_int from, lapack_int to,
                            const void *dlamda, const void *w, void *q, lapack_int ldq, double rho,
                            void *d) {
  lapack_int info = 0;
  tl__prov_lock();
  for (lapack_int j = from; j < to && info == 0; j++) {
    lapack_int root = j + 1;
    size_t column = (size_t)j * (size_t)ldq;
    if (real == TL_F32) {
      float r = (float)rho;
      slaed4_(&k, &root, dlamda, w, (float *)q + column, &r, (float *)d + j, &info);
    } else {
      dlaed4_(&k, &root, dlamda, w, (double *)q + column, &rho, (double *)d + j, &info);
    }
  }
  tl__prov_unlock();
  return checked_info(info);
}

void tl__blas_gemm_real(tl_dtype real, lapack_int m, lapack_int n, lapack_int k, const void *a,
                        lapack_int lda, const void *b, lapack_int ldb, void *c, lapack_int ldc) {
  tl__prov_lock();
  if (real == TL_F32) {
    const float one = 1.0f, zero = 0.0f;
    TL__BLAS_ENTRY(sgemm_)("N", "N", &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc, 1, 1);
  } else {
    const double one = 1.0, zero = 0.0;
    TL__BLAS_ENTRY(dgemm_)("N", "N", &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc, 1, 1);
  }
  tl__prov_unlock();
}

double tl__blas_nrm2_real(tl_dtype real, lapack_int n, const void *x) {
  const lapack_int one = 1;
  if (real == TL_F32) return (double)nrm2_s(&n, x, &one);
  return nrm2_d(&n, x, &one);
}

/* LAPACK's unblocked application of a QR factor's reflectors (what ormqr / unmqr fall back
 * to), under its Fortran name: LAPACKE has no entry for it. */
extern void sorm2r_(const char *side, const char *trans, const lapack_int *m, const lapack_int *n,
                    const lapack_int *k, float *a, const lapack_int *lda, const float *tau,
                    float *c, const lapack_int *ldc, float *work, lapack_int *info, size_t side_len,
                    size_t trans_len);
extern void dorm2r_(const char *side, const char *trans, const lapack_int *m, const lapack_int *n,
                    const lapack_int *k, double *a, const lapack_int *lda, const double *tau,
                    double *c, const lapack_int *ldc, double *work, lapack_int *info,
                    size_t side_len, size_t trans_len);
extern void cunm2r_(const char *side, const char *trans, const lapack_int *m, const lapack_int *n,
                    const lapack_int *k, float complex *a, const lapack_int *lda,
                    const float complex *tau, float complex *c, const lapack_int *ldc,
                    float complex *work, lapack_int *info, size_t side_len, size_t trans_len);
extern void zunm2r_(const char *side, const char *trans, const lapack_int *m, const lapack_int *n,
                    const lapack_int *k, double complex *a, const lapack_int *lda,
                    const double complex *tau, double complex *c, const lapack_int *ldc,
                    double complex *work, lapack_int *info, size_t side_len, size_t trans_len);

lapack_int tl__lapack_orm2r_left(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k, void *a,
                                 lapack_int lda, const void *tau, void *c, lapack_int ldc,
                                 void *work) {
  lapack_int info = 0;
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      sorm2r_("L", "N", &m, &n, &k, a, &lda, tau, c, &ldc, work, &info, 1, 1);
      break;
    case TL_F64:
      dorm2r_("L", "N", &m, &n, &k, a, &lda, tau, c, &ldc, work, &info, 1, 1);
      break;
    case TL_C64:
      cunm2r_("L", "N", &m, &n, &k, a, &lda, tau, c, &ldc, work, &info, 1, 1);
      break;
    case TL_C128:
      zunm2r_("L", "N", &m, &n, &k, a, &lda, tau, c, &ldc, work, &info, 1, 1);
      break;
  }
  return unlock_with(info);
}

/* One block of sytrd's reflectors (storage 'C', direction 'F'): its triangular factor t
 * (larft), then the block applied from the left to c (larfb 'L', 'N'). */
lapack_int tl__lapack_larft_forward(tl_dtype dtype, lapack_int m, lapack_int k, const void *v,
                                    lapack_int ldv, const void *tau, void *t, lapack_int ldt) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_slarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, k, v, ldv, tau, t, ldt));
    case TL_F64:
      return checked(LAPACKE_dlarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, k, v, ldv, tau, t, ldt));
    case TL_C64:
      return checked(LAPACKE_clarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, k, v, ldv, tau, t, ldt));
    case TL_C128:
      return checked(LAPACKE_zlarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, k, v, ldv, tau, t, ldt));
  }
  return -1;
}

lapack_int tl__lapack_larfb_left(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k,
                                 const void *v, lapack_int ldv, const void *t, lapack_int ldt,
                                 void *c, lapack_int ldc, void *work, lapack_int ldwork) {
  switch (dtype) {
    case TL_F32:
      return checked(LAPACKE_slarfb_work(LAPACK_COL_MAJOR, 'L', 'N', 'F', 'C', m, n, k, v, ldv, t,
                                         ldt, c, ldc, work, ldwork));
    case TL_F64:
      return checked(LAPACKE_dlarfb_work(LAPACK_COL_MAJOR, 'L', 'N', 'F', 'C', m, n, k, v, ldv, t,
                                         ldt, c, ldc, work, ldwork));
    case TL_C64:
      return checked(LAPACKE_clarfb_work(LAPACK_COL_MAJOR, 'L', 'N', 'F', 'C', m, n, k, v, ldv, t,
                                         ldt, c, ldc, work, ldwork));
    case TL_C128:
      return checked(LAPACKE_zlarfb_work(LAPACK_COL_MAJOR, 'L', 'N', 'F', 'C', m, n, k, v, ldv, t,
                                         ldt, c, ldc, work, ldwork));
  }
  return -1;
}
