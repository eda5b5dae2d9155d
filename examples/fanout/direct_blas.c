/* examples/fanout/direct_blas.c: the direct backend's BLAS-level calls (direct.h): GEMM
 * through libxsmm or BLIS with the context tenlane selected, trsm and the column norm
 * through BLIS's BLAS interface. Apart from direct.c because BLIS's header and LAPACKE's
 * declare some of the same Fortran symbols differently. Nothing here allocates. */
#if TL_PROVIDER_BLIS
#include "kernels/providers.h"
#else
#include <complex.h>
#include <stddef.h>

#include "kernels/kernels.h"
/* The Fortran BLAS routines used here (gfortran's interface: hidden lengths last). */
typedef int f77_int;
typedef double complex dcomplex;
void dtrsm_(const char *side, const char *uplo, const char *trans, const char *diag,
            const f77_int *m, const f77_int *n, const double *alpha, const void *a,
            const f77_int *lda, void *b, const f77_int *ldb, size_t, size_t, size_t, size_t);
void ztrsm_(const char *side, const char *uplo, const char *trans, const char *diag,
            const f77_int *m, const f77_int *n, const dcomplex *alpha, const void *a,
            const f77_int *lda, void *b, const f77_int *ldb, size_t, size_t, size_t, size_t);
double dnrm2_(const f77_int *n, const double *x, const f77_int *incx);
#define TL_FORTRAN_LENGTHS , 1, 1, 1, 1
#endif
#ifndef TL_FORTRAN_LENGTHS
#define TL_FORTRAN_LENGTHS
#endif
/* libxsmm (an anchor here, never a provider of the library): its header is not warning-clean. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <libxsmm.h>
#pragma GCC diagnostic pop

#include "direct.h"

void fan_direct_init(void) {
  libxsmm_init();
#if TL_PROVIDER_BLIS
  (void)tl__blis_context();
#else
  tl__providers_init();
#endif
}

/* BLIS keeps its enabled induced methods per thread: a thread that computes in complex
 * with the 1m context tenlane chose enables 1m for itself (LAPACK's complex BLAS calls
 * then take it too), as tenlane's own threads do. */
void fan_direct_thread_init(void) {
#if TL_PROVIDER_BLIS
  if (tl__blis_context_complex() != tl__blis_context()) {
    bli_ind_enable_dt(BLIS_1M, BLIS_SCOMPLEX);
    bli_ind_enable_dt(BLIS_1M, BLIS_DCOMPLEX);
  }
#endif
}

/* ---- GEMM ------------------------------------------------------------------------------ */

int fan_direct_gemm(fan_call *call, int m, int n, int k, const void *a, int lda, const void *b,
                    int ldb, void *c, int ldc) {
  if (call->dtype == FAN_F64 && (long long)m * n * k <= 64LL * 64 * 64 && m <= 256 && n <= 256 &&
      k <= 256) {
    const double alpha = 1.0, beta = 0.0;
    const int flags = LIBXSMM_GEMM_FLAG_BETA_0;
    const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    const libxsmm_blasint xlda = lda, xldb = ldb, xldc = ldc;
    libxsmm_dmmfunction kernel =
        libxsmm_dmmdispatch(m, n, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, &prefetch);
    if (kernel) {
      kernel(a, b, c);
      return 0;
    }
  }
#if !TL_PROVIDER_BLIS
  /* Another provider: its GEMM through tenlane's boundary. */
  tl__prov_gemm(call->dtype == FAN_F64 ? TL_F64 : TL_C128, m, n, k, tl_scalar_real(1.0), a, 1, lda,
                b, 1, ldb, tl_scalar_real(0.0), c, 1, ldc);
#else
  rntm_t rntm = tl__blis_runtime();
  if (call->dtype == FAN_F64) {
    cntx_t *cntx = tl__blis_context();
    double alpha = 1.0, beta = 0.0;
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &alpha, (double *)a, 1, lda,
                 (double *)b, 1, ldb, &beta, (double *)c, 1, ldc, cntx, &rntm);
  } else {
    cntx_t *cntx = tl__blis_context_complex();
    dcomplex alpha = {1.0, 0.0}, beta = {0.0, 0.0};
    bli_zgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &alpha, (dcomplex *)a, 1, lda,
                 (dcomplex *)b, 1, ldb, &beta, (dcomplex *)c, 1, ldc, cntx, &rntm);
  }
#endif
  return 0;
}

/* ---- The rest ------------------------------------------------------------------------- */

void fan_direct_trsm_right(fan_dtype dtype, int lower, int unit, int m, int n, const void *t,
                           int ldt, void *x, int ldx) {
  const char side = 'R', uplo = lower ? 'L' : 'U', trans = 'N', diag = unit ? 'U' : 'N';
  const f77_int lm = m, ln = n, lt = ldt, lx = ldx;
  if (dtype == FAN_F64) {
    const double one = 1.0;
    dtrsm_(&side, &uplo, &trans, &diag, &lm, &ln, &one, t, &lt, x, &lx TL_FORTRAN_LENGTHS);
  } else {
#if TL_PROVIDER_BLIS
    const dcomplex one = {1.0, 0.0};
#else
    const dcomplex one = 1.0;
#endif
    ztrsm_(&side, &uplo, &trans, &diag, &lm, &ln, &one, t, &lt, x, &lx TL_FORTRAN_LENGTHS);
  }
}

double fan_direct_norm(int m, const double *x) {
  const f77_int n = m, one = 1;
  return dnrm2_(&n, x, &one);
}
