/* src/kernels/blis_level1.c: level-1 kernels tenlane hands to BLIS's skx context where that
 * context only has BLIS's reference (plain C) ones.
 *
 * Why: BLIS 0.9's skx configuration gives optimised level-1 kernels for real types only;
 * complex axpyv runs the reference loop. LAPACK's complex routines spend much of their
 * time there through level-2 BLAS (zgemv in the bidiagonal reduction of zgesdd): measured
 * here, bli_zaxpyv_skx_ref was a third of zgesdd's time at n = 256.
 *
 * The kernels follow BLIS's kernel signatures (the context calls them for every zaxpyv,
 * including those inside its own level-2 operations). Pure, no allocation, never fail. */
#include <immintrin.h>

#include "kernels.h"
#include "providers.h"

TL__HOT_FILE

/* y += alpha * conjx(x), n complex doubles. AVX-512F. */
__attribute__((target("avx512f"))) static void zaxpyv_avx512(conj_t conjx, dim_t n,
                                                             dcomplex *restrict alpha,
                                                             dcomplex *restrict x, inc_t incx,
                                                             dcomplex *restrict y, inc_t incy,
                                                             cntx_t *cntx) {
  (void)cntx;
  if (n <= 0) return;
  const double ar = alpha->real, ai = alpha->imag;
  if (ar == 0.0 && ai == 0.0) return;
  const int conj = bli_is_conj(conjx);
  if (incx != 1 || incy != 1) {
    for (dim_t i = 0; i < n; i++) {
      const dcomplex *xi = x + i * incx;
      dcomplex *yi = y + i * incy;
      double xr = xi->real, xm = conj ? -xi->imag : xi->imag;
      yi->real += ar * xr - ai * xm;
      yi->imag += ar * xm + ai * xr;
    }
    return;
  }
  /* (xr, xi) * ar + (xi, xr) * (-ai, ai) = alpha x; for conj(x) first flip xi's sign. */
  const __m512d var = _mm512_set1_pd(ar);
  const __m512d vai = _mm512_set_pd(ai, -ai, ai, -ai, ai, -ai, ai, -ai);
  const __m512d flip = _mm512_set_pd(-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0);
  double *xd = (double *)x, *yd = (double *)y;
  dim_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m512d xv = _mm512_loadu_pd(xd + 2 * i);
    if (conj) xv = _mm512_mul_pd(xv, flip);
    __m512d yv = _mm512_loadu_pd(yd + 2 * i);
    yv = _mm512_fmadd_pd(xv, var, yv);
    yv = _mm512_fmadd_pd(_mm512_permute_pd(xv, 0x55), vai, yv);
    _mm512_storeu_pd(yd + 2 * i, yv);
  }
  if (i < n) {
    __mmask8 mask = (__mmask8)((1u << (2 * (n - i))) - 1u);
    __m512d xv = _mm512_maskz_loadu_pd(mask, xd + 2 * i);
    if (conj) xv = _mm512_mul_pd(xv, flip);
    __m512d yv = _mm512_maskz_loadu_pd(mask, yd + 2 * i);
    yv = _mm512_fmadd_pd(xv, var, yv);
    yv = _mm512_fmadd_pd(_mm512_permute_pd(xv, 0x55), vai, yv);
    _mm512_mask_storeu_pd(yd + 2 * i, mask, yv);
  }
}

void tl__blis_add_level1(cntx_t *cntx) {
  cntx->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX] = (void_fp)zaxpyv_avx512;
}
