/* src/linalg/gemm_blas.c: the matrix products LAPACK asks the BLAS for (sgemm_, dgemm_,
 * cgemm_, zgemm_), defined by tenlane in place of BLIS's.
 *
 * Why: the blocked QR, its Q, and the bidiagonal reduction of the SVD spend their BLAS-3
 * time in two narrow shapes, a tall matrix against a 32-column block and a rank-32 update
 * (gemm_narrow.c says where BLIS loses on them). On Zen 4 they kept tl_qr at 1.08-1.15x
 * OpenBLAS serial's time at n = 256, in f64 and c128.
 *
 * How: f64 and c128 calls on a CPU with AVX-512F whose shape gemm_narrow.c takes
 * (tl__gemm_narrow_fits: op(A) = A with k <= 128, or with n <= 128 and a small C; op(A) =
 * A^T or A^H against a plain B with n <= 128 and k, C bounded) run there. Every other call, f32 and
 * c64, and CPUs without AVX-512 (or tl__blas_isa_cap 0) go to BLIS's typed gemm with the
 * context tenlane chose, as BLIS's own BLAS layer would send them.
 *
 * Contract: the reference BLAS's. An illegal argument calls xerbla_ (tenlane's, xerbla.c)
 * with its position (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc) and returns
 * with C untouched; m or n 0, or alpha or k 0 with beta 1, return at once; alpha or k 0
 * scale C by beta without reading A or B; beta 0 sets C without reading it. For real types
 * 'C' is 'T'.
 *
 * Linking: as gemv.c's. LAPACK's gemm calls bind to these definitions, and BLIS's archive
 * member (it defines these four and nothing else) is never pulled in; tl__gemm_blas_linked
 * is called by tl__la_begin so that a static link takes this object in before LAPACK's
 * archive is searched. BLIS was initialised by tl__providers_init before any LAPACK call.
 * No allocation of its own, thread-safe.
 *
 * Cancellation: while the route that called LAPACK runs on a cancelled surface
 * (tl__exec_current_cancelled), a product sets C to zero instead of computing it (gemv.c
 * likewise sets y to zero), so that the factorization runs out quickly; the route sees the
 * flag once LAPACK returns, reports TL_E_CANCELLED and writes none of LAPACK's results. */
#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "linalg_int.h"

int tl__gemm_blas_linked(void) { return 1; }

/* The reference BLAS's checks: the position of the first bad argument, 0 if none. */
static int check(int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
  const int rows_a = ta == 0 ? m : k, rows_b = tb == 0 ? k : n;
  if (ta < 0) return 1;
  if (tb < 0) return 2;
  if (m < 0) return 3;
  if (n < 0) return 4;
  if (k < 0) return 5;
  if (lda < (rows_a > 1 ? rows_a : 1)) return 8;
  if (ldb < (rows_b > 1 ? rows_b : 1)) return 10;
  if (ldc < (m > 1 ? m : 1)) return 13;
  return 0;
}

/* f64 and c128 take gemm_narrow.c's kernels where the CPU has AVX-512F and tests have not
 * capped them, for the shapes they take. */
static int narrow(int ta, int tb, int m, int n, int k, int esize) {
  return tl__blas_own_kernels(TL__BLAS_OWN_GEMM) && tl__gemm_narrow_fits(ta, tb, m, n, k, esize);
}

/* C = beta C over m x n (beta 0: set, not read). */
#define TL__GEMM_SCALE(NAME, T)                           \
  static void NAME(int m, int n, T beta, T *c, int ldc) { \
    for (int j = 0; j < n; j++)                           \
      for (int i = 0; i < m; i++) {                       \
        T *cij = c + i + (int64_t)j * ldc;                \
        *cij = beta == 0 ? 0 : beta * *cij;               \
      }                                                   \
  }
TL__GEMM_SCALE(scale_s, float)
TL__GEMM_SCALE(scale_d, double)
TL__GEMM_SCALE(scale_c, float complex)
TL__GEMM_SCALE(scale_z, double complex)

/* Where each type's products run, arguments checked, alpha != 0, m, n, k > 0. */
static void run_s(int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                  const float *b, int ldb, const float *beta, float *c, int ldc) {
  tl__prov_gemm_blas(TL_F32, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void run_c(int ta, int tb, int m, int n, int k, const float complex *alpha,
                  const float complex *a, int lda, const float complex *b, int ldb,
                  const float complex *beta, float complex *c, int ldc) {
  tl__prov_gemm_blas(TL_C64, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void run_d(int ta, int tb, int m, int n, int k, const double *alpha, const double *a,
                  int lda, const double *b, int ldb, const double *beta, double *c, int ldc) {
  const int ra = ta == 2 ? 1 : ta; /* real: 'C' is 'T' */
  const int rb = tb == 2 ? 1 : tb;
  if (narrow(ra, rb, m, n, k, 8))
    tl__gemm_narrow_d(ra, rb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
  else
    tl__prov_gemm_blas(TL_F64, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void run_z(int ta, int tb, int m, int n, int k, const double complex *alpha,
                  const double complex *a, int lda, const double complex *b, int ldb,
                  const double complex *beta, double complex *c, int ldc) {
  if (narrow(ta, tb, m, n, k, 16))
    tl__gemm_narrow_z(ta, tb, m, n, k, (const double *)alpha, (const double *)a, lda,
                      (const double *)b, ldb, (const double *)beta, (double *)c, ldc);
  else
    tl__prov_gemm_blas(TL_C128, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* One type's entry: the checks and quick returns, then RUN. */
#define TL__GEMM_ENTRY(NAME, NAME_UPPER, T, SCALE, RUN)                                           \
  void TL__BLAS_ENTRY(NAME)(const char *transa, const char *transb, const int *m, const int *n,   \
                            const int *k, const T *alpha, const T *a, const int *lda, const T *b, \
                            const int *ldb, const T *beta, T *c, const int *ldc,                  \
                            size_t transa_length, size_t transb_length);                          \
  void TL__BLAS_ENTRY(NAME)(const char *transa, const char *transb, const int *m, const int *n,   \
                            const int *k, const T *alpha, const T *a, const int *lda, const T *b, \
                            const int *ldb, const T *beta, T *c, const int *ldc,                  \
                            size_t transa_length, size_t transb_length) {                         \
    (void)transa_length, (void)transb_length;                                                     \
    const int ta = tl__blas_trans(transa), tb = tl__blas_trans(transb);                           \
    const int bad = check(ta, tb, *m, *n, *k, *lda, *ldb, *ldc);                                  \
    if (bad != 0) {                                                                               \
      xerbla_(NAME_UPPER, &bad, 6);                                                               \
      return;                                                                                     \
    }                                                                                             \
    if (*m == 0 || *n == 0 || ((*alpha == 0 || *k == 0) && *beta == 1)) return;                   \
    if (*alpha == 0 || *k == 0) {                                                                 \
      SCALE(*m, *n, *beta, c, *ldc);                                                              \
      return;                                                                                     \
    }                                                                                             \
    if (tl__exec_current_cancelled()) { /* C = 0: LAPACK ends fast, the route reports it */       \
      SCALE(*m, *n, 0, c, *ldc);                                                                  \
      return;                                                                                     \
    }                                                                                             \
    RUN(ta, tb, *m, *n, *k, alpha, a, *lda, b, *ldb, beta, c, *ldc);                              \
  }

TL__GEMM_ENTRY(sgemm_, "SGEMM ", float, scale_s, run_s)
TL__GEMM_ENTRY(dgemm_, "DGEMM ", double, scale_d, run_d)
TL__GEMM_ENTRY(cgemm_, "CGEMM ", float complex, scale_c, run_c)
TL__GEMM_ENTRY(zgemm_, "ZGEMM ", double complex, scale_z, run_z)
