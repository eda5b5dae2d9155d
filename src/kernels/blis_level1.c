/* src/kernels/blis_level1.c: complex-double level-1v and level-1f kernels tenlane hands to
 * BLIS's contexts where those contexts only have BLIS's reference (plain C) ones.
 *
 * Why: BLIS 0.9 gives optimised level-1 kernels for real types only, in every x86 context
 * (skx, haswell, zen, zen2, zen3, ...); complex ones run the reference loops. LAPACK's
 * complex routines spend much of their time there through level-2 BLAS (zgemv in the
 * bidiagonal reduction of zgesdd and in zlarf, zgerc in the Householder updates). Measured
 * on a Zen 5 (skx context), bli_zaxpyv_skx_ref was a third of zgesdd's time at n = 256; on a
 * Zen 2 (zen2 context) zaxpyv, zdotxf, zdotxv, zaxpyf, zscal2v and zscalv references
 * together were over 40% of it.
 *
 * The kernels follow BLIS 0.9's kernel signatures and semantics (the context calls them for
 * every such operation, including those inside its own level-2 operations): beta == 0 means
 * the output's old value is not read, alpha == 0 means the inputs are not read. Unit strides
 * take the vector paths; other strides a scalar loop (dotxf gathers a strided x into a
 * contiguous chunk first, since LAPACK passes rows of a matrix as x there). Pure, no
 * allocation, never fail. */

#include "kernels.h"
#include "providers.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#if TL_X86_KERNELS
#define TL_AVX2 __attribute__((target("avx2,fma")))

/* ---- scalar helpers (inlined into the ISA-specific kernels) ----------------------------- */
static inline int z_is_zero(const dcomplex *a) { return a->real == 0.0 && a->imag == 0.0; }
static inline int z_is_one(const dcomplex *a) { return a->real == 1.0 && a->imag == 0.0; }

static inline dcomplex z_mul(dcomplex a, dcomplex b) {
  dcomplex r = {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
  return r;
}

static inline dcomplex z_conj_if(int conj, dcomplex a) {
  if (conj) a.imag = -a.imag;
  return a;
}

/* rho = beta * rho, where beta == 0 writes zero without reading rho (BLIS's rule, which lets
 * callers pass uninitialised outputs) and beta == 1 leaves rho alone. */
static inline void z_scale_by_beta(const dcomplex *beta, dcomplex *rho) {
  if (z_is_zero(beta)) {
    rho->real = 0.0, rho->imag = 0.0;
  } else if (!z_is_one(beta)) {
    *rho = z_mul(*beta, *rho);
  }
}

/* The four real sums a dot product of complex vectors is made of, for u against v:
 * s[0] = sum ur*vr, s[1] = sum ui*vi, s[2] = sum ur*vi, s[3] = sum ui*vr. Both u*v and
 * conj(u)*v follow from them by signs alone, so the inner loops never branch on conj. */
static inline dcomplex z_dot_from_sums(const double s[4], int conj_u, int conj_result) {
  dcomplex r;
  r.real = conj_u ? s[0] + s[1] : s[0] - s[1];
  r.imag = conj_u ? s[2] - s[3] : s[2] + s[3];
  if (conj_result) r.imag = -r.imag;
  return r;
}

/* ---- AVX-512F ------------------------------------------------------------------------- */
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

/* ---- AVX2 + FMA ------------------------------------------------------------------------
 * A __m256d holds two complex numbers (re0, im0, re1, im1). Conjugation is an exclusive or
 * with -0.0 in the imaginary lanes (exact, unlike a multiply it also keeps NaN payloads), and
 * (re, im) -> (im, re) within each complex is vpermilpd 0x5 (0x1 for one complex). */
TL_AVX2 static inline __m256d swap256(__m256d v) { return _mm256_permute_pd(v, 0x5); }
TL_AVX2 static inline __m128d swap128(__m128d v) { return _mm_permute_pd(v, 0x1); }
TL_AVX2 static inline __m256d imag_sign256(void) { return _mm256_set_pd(-0.0, 0.0, -0.0, 0.0); }
TL_AVX2 static inline __m256d real_sign256(void) { return _mm256_set_pd(0.0, -0.0, 0.0, -0.0); }

/* y += alpha * conjx(x), n complex doubles. */
TL_AVX2 static void zaxpyv_avx2(conj_t conjx, dim_t n, dcomplex *restrict alpha,
                                dcomplex *restrict x, inc_t incx, dcomplex *restrict y, inc_t incy,
                                cntx_t *cntx) {
  (void)cntx;
  if (n <= 0 || z_is_zero(alpha)) return;
  const int conj = bli_is_conj(conjx);
  if (incx != 1 || incy != 1) {
    const dcomplex a = *alpha;
    for (dim_t i = 0; i < n; i++) {
      dcomplex t = z_mul(a, z_conj_if(conj, x[i * incx]));
      y[i * incy].real += t.real;
      y[i * incy].imag += t.imag;
    }
    return;
  }
  const double *xd = (const double *)x;
  double *yd = (double *)y;
  const __m256d cm = conj ? imag_sign256() : _mm256_setzero_pd();
  dim_t i = 0;
  if (z_is_one(alpha)) {
    /* Plain addition, as BLIS's reference does (it hands alpha == 1 to addv): no products,
     * so an infinite x stays infinite instead of meeting a zero imaginary part. */
    for (; i + 4 <= n; i += 4) {
      __m256d x0 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i), cm);
      __m256d x1 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i + 4), cm);
      _mm256_storeu_pd(yd + 2 * i, _mm256_add_pd(_mm256_loadu_pd(yd + 2 * i), x0));
      _mm256_storeu_pd(yd + 2 * i + 4, _mm256_add_pd(_mm256_loadu_pd(yd + 2 * i + 4), x1));
    }
    for (; i < n; i++) {
      y[i].real += x[i].real;
      y[i].imag += conj ? -x[i].imag : x[i].imag;
    }
    return;
  }
  /* alpha x = x * ar + swap(x) * (-ai, ai). Iterations are independent (each writes its own
   * y), so out-of-order execution overlaps them; four vectors a step only cut loop overhead. */
  const __m256d var = _mm256_set1_pd(alpha->real);
  const __m256d vai = _mm256_set_pd(alpha->imag, -alpha->imag, alpha->imag, -alpha->imag);
  for (; i + 8 <= n; i += 8) {
    __m256d x0 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i), cm);
    __m256d x1 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i + 4), cm);
    __m256d x2 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i + 8), cm);
    __m256d x3 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i + 12), cm);
    __m256d y0 = _mm256_fmadd_pd(x0, var, _mm256_loadu_pd(yd + 2 * i));
    __m256d y1 = _mm256_fmadd_pd(x1, var, _mm256_loadu_pd(yd + 2 * i + 4));
    __m256d y2 = _mm256_fmadd_pd(x2, var, _mm256_loadu_pd(yd + 2 * i + 8));
    __m256d y3 = _mm256_fmadd_pd(x3, var, _mm256_loadu_pd(yd + 2 * i + 12));
    _mm256_storeu_pd(yd + 2 * i, _mm256_fmadd_pd(swap256(x0), vai, y0));
    _mm256_storeu_pd(yd + 2 * i + 4, _mm256_fmadd_pd(swap256(x1), vai, y1));
    _mm256_storeu_pd(yd + 2 * i + 8, _mm256_fmadd_pd(swap256(x2), vai, y2));
    _mm256_storeu_pd(yd + 2 * i + 12, _mm256_fmadd_pd(swap256(x3), vai, y3));
  }
  for (; i + 2 <= n; i += 2) {
    __m256d x0 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i), cm);
    __m256d y0 = _mm256_fmadd_pd(x0, var, _mm256_loadu_pd(yd + 2 * i));
    _mm256_storeu_pd(yd + 2 * i, _mm256_fmadd_pd(swap256(x0), vai, y0));
  }
  if (i < n) {
    __m128d x0 = _mm_xor_pd(_mm_loadu_pd(xd + 2 * i), _mm256_castpd256_pd128(cm));
    __m128d y0 = _mm_fmadd_pd(x0, _mm256_castpd256_pd128(var), _mm_loadu_pd(yd + 2 * i));
    _mm_storeu_pd(yd + 2 * i, _mm_fmadd_pd(swap128(x0), _mm256_castpd256_pd128(vai), y0));
  }
}

/* Add the lanes of (a, b) into s (see z_dot_from_sums): lanes 0 and 2 of a are
 * ur*vr, 1 and 3 ui*vi; of b ur*vi and ui*vr. Adds the products of one trailing complex
 * pair (tu, tv) when `tail`. */
TL_AVX2 static inline void reduce_dot_sums(__m256d a, __m256d b, int tail, const double *tu,
                                           const double *tv, double s[4]) {
  __m128d a2 = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  __m128d b2 = _mm_add_pd(_mm256_castpd256_pd128(b), _mm256_extractf128_pd(b, 1));
  if (tail) {
    __m128d u = _mm_loadu_pd(tu), v = _mm_loadu_pd(tv);
    a2 = _mm_fmadd_pd(u, v, a2);
    b2 = _mm_fmadd_pd(u, swap128(v), b2);
  }
  double t[4];
  _mm_storeu_pd(t, a2);
  _mm_storeu_pd(t + 2, b2);
  s[0] += t[0], s[1] += t[1], s[2] += t[2], s[3] += t[3];
}

/* The sums of z_dot_from_sums for n contiguous complex u against v, added into s. Dot
 * products carry their accumulator from step to step, so eight accumulators (four pairs)
 * keep enough FMAs in flight for the 4-5 cycle latency. */
TL_AVX2 static void dot_sums_unit(dim_t n, const double *u, const double *v, double s[4]) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  __m256d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  dim_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const double *up = u + 2 * i, *vp = v + 2 * i;
    __m256d u0 = _mm256_loadu_pd(up), u1 = _mm256_loadu_pd(up + 4);
    __m256d u2 = _mm256_loadu_pd(up + 8), u3 = _mm256_loadu_pd(up + 12);
    __m256d v0 = _mm256_loadu_pd(vp), v1 = _mm256_loadu_pd(vp + 4);
    __m256d v2 = _mm256_loadu_pd(vp + 8), v3 = _mm256_loadu_pd(vp + 12);
    a0 = _mm256_fmadd_pd(u0, v0, a0);
    a1 = _mm256_fmadd_pd(u1, v1, a1);
    a2 = _mm256_fmadd_pd(u2, v2, a2);
    a3 = _mm256_fmadd_pd(u3, v3, a3);
    b0 = _mm256_fmadd_pd(u0, swap256(v0), b0);
    b1 = _mm256_fmadd_pd(u1, swap256(v1), b1);
    b2 = _mm256_fmadd_pd(u2, swap256(v2), b2);
    b3 = _mm256_fmadd_pd(u3, swap256(v3), b3);
  }
  for (; i + 2 <= n; i += 2) {
    __m256d u0 = _mm256_loadu_pd(u + 2 * i), v0 = _mm256_loadu_pd(v + 2 * i);
    a0 = _mm256_fmadd_pd(u0, v0, a0);
    b0 = _mm256_fmadd_pd(u0, swap256(v0), b0);
  }
  a0 = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
  b0 = _mm256_add_pd(_mm256_add_pd(b0, b1), _mm256_add_pd(b2, b3));
  reduce_dot_sums(a0, b0, i < n, u + 2 * i, v + 2 * i, s);
}

/* The same sums for strided vectors, one element at a time. */
static inline void dot_sums_strided(dim_t n, const dcomplex *u, inc_t incu, const dcomplex *v,
                                    inc_t incv, double s[4]) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (dim_t i = 0; i < n; i++) {
    const dcomplex a = u[i * incu], b = v[i * incv];
    s0 += a.real * b.real, s1 += a.imag * b.imag;
    s2 += a.real * b.imag, s3 += a.imag * b.real;
  }
  s[0] += s0, s[1] += s1, s[2] += s2, s[3] += s3;
}

/* rho = beta * rho + alpha * sum conjx(x_i) * conjy(y_i). */
TL_AVX2 static void zdotxv_avx2(conj_t conjx, conj_t conjy, dim_t n, dcomplex *restrict alpha,
                                dcomplex *restrict x, inc_t incx, dcomplex *restrict y, inc_t incy,
                                dcomplex *restrict beta, dcomplex *restrict rho, cntx_t *cntx) {
  (void)cntx;
  z_scale_by_beta(beta, rho);
  if (n <= 0 || z_is_zero(alpha)) return;
  /* conjx(x) conjy(y) = conj(conj(conjx ^ conjy)(x) y) when conjy, else conj(conjx)(x) y. */
  const int cy = bli_is_conj(conjy), cx = bli_is_conj(conjx) ^ cy;
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  if (incx == 1 && incy == 1)
    dot_sums_unit(n, (const double *)x, (const double *)y, s);
  else
    dot_sums_strided(n, x, incx, y, incy, s);
  const dcomplex d = z_mul(*alpha, z_dot_from_sums(s, cx, cy));
  rho->real += d.real;
  rho->imag += d.imag;
}

/* Sums of z_dot_from_sums for nc (a constant after inlining) contiguous columns of u, lda
 * complex apart, against the contiguous v, m rows, added into s[j]. Each column keeps two
 * accumulators; with three columns or fewer, two row steps in flight double them so the FMA
 * latency stays covered. */
TL_AVX2 static inline __attribute__((always_inline)) void dot_cols_unit(const int nc, dim_t m,
                                                                        const double *u, inc_t lda,
                                                                        const double *v,
                                                                        double s[][4]) {
  enum { MAXC = 6 };
  const int twice = nc <= 3;
  __m256d a[2][MAXC], b[2][MAXC];
  for (int j = 0; j < nc; j++) a[0][j] = b[0][j] = a[1][j] = b[1][j] = _mm256_setzero_pd();
  dim_t i = 0;
  if (twice) {
    for (; i + 4 <= m; i += 4) {
      const __m256d v0 = _mm256_loadu_pd(v + 2 * i), v1 = _mm256_loadu_pd(v + 2 * i + 4);
      const __m256d w0 = swap256(v0), w1 = swap256(v1);
      for (int j = 0; j < nc; j++) {
        const double *col = u + 2 * (j * lda + i);
        const __m256d u0 = _mm256_loadu_pd(col), u1 = _mm256_loadu_pd(col + 4);
        a[0][j] = _mm256_fmadd_pd(u0, v0, a[0][j]);
        b[0][j] = _mm256_fmadd_pd(u0, w0, b[0][j]);
        a[1][j] = _mm256_fmadd_pd(u1, v1, a[1][j]);
        b[1][j] = _mm256_fmadd_pd(u1, w1, b[1][j]);
      }
    }
  }
  for (; i + 2 <= m; i += 2) {
    const __m256d v0 = _mm256_loadu_pd(v + 2 * i), w0 = swap256(v0);
    for (int j = 0; j < nc; j++) {
      const __m256d u0 = _mm256_loadu_pd(u + 2 * (j * lda + i));
      a[0][j] = _mm256_fmadd_pd(u0, v0, a[0][j]);
      b[0][j] = _mm256_fmadd_pd(u0, w0, b[0][j]);
    }
  }
  for (int j = 0; j < nc; j++) {
    __m256d aj = twice ? _mm256_add_pd(a[0][j], a[1][j]) : a[0][j];
    __m256d bj = twice ? _mm256_add_pd(b[0][j], b[1][j]) : b[0][j];
    reduce_dot_sums(aj, bj, i < m, u + 2 * (j * lda + i), v + 2 * i, s[j]);
  }
}

/* dot_cols_unit for 1..6 columns, each width with its own straight-line code. */
TL_AVX2 static void dot_cols_any(int nc, dim_t m, const double *u, inc_t lda, const double *v,
                                 double s[][4]) {
  switch (nc) {
    case 6:
      dot_cols_unit(6, m, u, lda, v, s);
      break;
    case 5:
      dot_cols_unit(5, m, u, lda, v, s);
      break;
    case 4:
      dot_cols_unit(4, m, u, lda, v, s);
      break;
    case 3:
      dot_cols_unit(3, m, u, lda, v, s);
      break;
    case 2:
      dot_cols_unit(2, m, u, lda, v, s);
      break;
    default:
      dot_cols_unit(1, m, u, lda, v, s);
      break;
  }
}

/* y[j] = beta y[j] + alpha sum_i conjat(a[i, j]) conjx(x[i]), j < b_n, i < m; a has row
 * stride inca and column stride lda. Columns go in blocks of up to six (the zen contexts'
 * fusing factor is 6, haswell's 8 = 4 + 4), so x is read once per block. */
TL_AVX2 static void zdotxf_avx2(conj_t conjat, conj_t conjx, dim_t m, dim_t b_n,
                                dcomplex *restrict alpha, dcomplex *restrict a, inc_t inca,
                                inc_t lda, dcomplex *restrict x, inc_t incx,
                                dcomplex *restrict beta, dcomplex *restrict y, inc_t incy,
                                cntx_t *cntx) {
  (void)cntx;
  if (b_n <= 0) return;
  for (dim_t j = 0; j < b_n; j++) z_scale_by_beta(beta, y + j * incy);
  if (m <= 0 || z_is_zero(alpha)) return;
  const int cx = bli_is_conj(conjx), ca = bli_is_conj(conjat) ^ cx;
  /* A strided x with contiguous columns (LAPACK passes matrix rows as x) is copied a chunk
   * at a time, so the vector code still runs. */
  enum { CHUNK = 256 };
  double xbuf[2 * CHUNK];
  for (dim_t j0 = 0; j0 < b_n;) {
    const dim_t left = b_n - j0;
    const int nc = (int)(left > 6 ? 4 : left);
    double s[6][4] = {{0.0}};
    const dcomplex *aj = a + j0 * lda;
    if (inca == 1 && incx == 1) {
      dot_cols_any(nc, m, (const double *)aj, lda, (const double *)x, s);
    } else if (inca == 1) {
      for (dim_t i0 = 0; i0 < m; i0 += CHUNK) {
        const dim_t len = m - i0 < CHUNK ? m - i0 : CHUNK;
        for (dim_t i = 0; i < len; i++) {
          xbuf[2 * i] = x[(i0 + i) * incx].real;
          xbuf[2 * i + 1] = x[(i0 + i) * incx].imag;
        }
        dot_cols_any(nc, len, (const double *)(aj + i0), lda, xbuf, s);
      }
    } else {
      for (int j = 0; j < nc; j++) dot_sums_strided(m, aj + j * lda, inca, x, incx, s[j]);
    }
    for (int j = 0; j < nc; j++) {
      const dcomplex d = z_mul(*alpha, z_dot_from_sums(s[j], ca, cx));
      dcomplex *yj = y + (j0 + j) * incy;
      yj->real += d.real;
      yj->imag += d.imag;
    }
    j0 += nc;
  }
}

/* y[i] += sum_j conja(a[i, j]) chi[j] for nc (a constant after inlining) contiguous columns,
 * contiguous y. With v1 = sum_j a_j Re(chi_j) and v2 = sum_j a_j Im(chi_j) taken lane-wise,
 * a chi = v1 + (-Im v2, Re v2) and conj(a) chi = (Re v1, -Im v1) + (Im v2, Re v2): one swap
 * per row pair whatever the column count, two FMAs per column. */
TL_AVX2 static inline __attribute__((always_inline)) void axpy_cols_unit(const int nc, dim_t m,
                                                                         const double *u, inc_t lda,
                                                                         const dcomplex *chi,
                                                                         int conja, double *y) {
  enum { MAXC = 4 };
  __m256d cr[MAXC], ci[MAXC];
  for (int j = 0; j < nc; j++) {
    cr[j] = _mm256_set1_pd(chi[j].real);
    ci[j] = _mm256_set1_pd(chi[j].imag);
  }
  const __m256d m1 = conja ? imag_sign256() : _mm256_setzero_pd();
  const __m256d m2 = conja ? _mm256_setzero_pd() : real_sign256();
  dim_t i = 0;
  for (; i + 2 <= m; i += 2) {
    __m256d u0 = _mm256_loadu_pd(u + 2 * i);
    __m256d v1 = _mm256_mul_pd(u0, cr[0]), v2 = _mm256_mul_pd(u0, ci[0]);
    for (int j = 1; j < nc; j++) {
      u0 = _mm256_loadu_pd(u + 2 * (j * lda + i));
      v1 = _mm256_fmadd_pd(u0, cr[j], v1);
      v2 = _mm256_fmadd_pd(u0, ci[j], v2);
    }
    const __m256d t = _mm256_add_pd(_mm256_xor_pd(v1, m1), _mm256_xor_pd(swap256(v2), m2));
    _mm256_storeu_pd(y + 2 * i, _mm256_add_pd(_mm256_loadu_pd(y + 2 * i), t));
  }
  if (i < m) {
    __m128d u0 = _mm_loadu_pd(u + 2 * i);
    __m128d v1 = _mm_mul_pd(u0, _mm256_castpd256_pd128(cr[0]));
    __m128d v2 = _mm_mul_pd(u0, _mm256_castpd256_pd128(ci[0]));
    for (int j = 1; j < nc; j++) {
      u0 = _mm_loadu_pd(u + 2 * (j * lda + i));
      v1 = _mm_fmadd_pd(u0, _mm256_castpd256_pd128(cr[j]), v1);
      v2 = _mm_fmadd_pd(u0, _mm256_castpd256_pd128(ci[j]), v2);
    }
    const __m128d t = _mm_add_pd(_mm_xor_pd(v1, _mm256_castpd256_pd128(m1)),
                                 _mm_xor_pd(swap128(v2), _mm256_castpd256_pd128(m2)));
    _mm_storeu_pd(y + 2 * i, _mm_add_pd(_mm_loadu_pd(y + 2 * i), t));
  }
}

/* y[i] += alpha sum_j conja(a[i, j]) conjx(x[j]), i < m, j < b_n. Columns in blocks of up
 * to four: the eight broadcast coefficients stay in registers (AVX2 has sixteen). */
TL_AVX2 static void zaxpyf_avx2(conj_t conja, conj_t conjx, dim_t m, dim_t b_n,
                                dcomplex *restrict alpha, dcomplex *restrict a, inc_t inca,
                                inc_t lda, dcomplex *restrict x, inc_t incx, dcomplex *restrict y,
                                inc_t incy, cntx_t *cntx) {
  (void)cntx;
  if (m <= 0 || b_n <= 0 || z_is_zero(alpha)) return;
  const int ca = bli_is_conj(conja), cx = bli_is_conj(conjx);
  for (dim_t j0 = 0; j0 < b_n;) {
    const int nc = (int)(b_n - j0 < 4 ? b_n - j0 : 4);
    dcomplex chi[4];
    for (int j = 0; j < nc; j++) chi[j] = z_mul(*alpha, z_conj_if(cx, x[(j0 + j) * incx]));
    const dcomplex *aj = a + j0 * lda;
    if (inca == 1 && incy == 1) {
      const double *u = (const double *)aj;
      double *yd = (double *)y;
      switch (nc) {
        case 4:
          axpy_cols_unit(4, m, u, lda, chi, ca, yd);
          break;
        case 3:
          axpy_cols_unit(3, m, u, lda, chi, ca, yd);
          break;
        case 2:
          axpy_cols_unit(2, m, u, lda, chi, ca, yd);
          break;
        default:
          axpy_cols_unit(1, m, u, lda, chi, ca, yd);
          break;
      }
    } else {
      for (dim_t i = 0; i < m; i++) {
        double sr = 0.0, si = 0.0;
        for (int j = 0; j < nc; j++) {
          const dcomplex t = z_mul(z_conj_if(ca, aj[i * inca + j * lda]), chi[j]);
          sr += t.real, si += t.imag;
        }
        y[i * incy].real += sr;
        y[i * incy].imag += si;
      }
    }
    j0 += nc;
  }
}

/* x = conjalpha(alpha) x; alpha == 0 writes zeros without reading x, alpha == 1 returns. */
TL_AVX2 static void zscalv_avx2(conj_t conjalpha, dim_t n, dcomplex *restrict alpha,
                                dcomplex *restrict x, inc_t incx, cntx_t *cntx) {
  (void)cntx;
  if (n <= 0 || z_is_one(alpha)) return;
  if (z_is_zero(alpha)) {
    for (dim_t i = 0; i < n; i++) x[i * incx].real = 0.0, x[i * incx].imag = 0.0;
    return;
  }
  const dcomplex al = z_conj_if(bli_is_conj(conjalpha), *alpha);
  dim_t i = 0;
  if (incx == 1) {
    double *xd = (double *)x;
    const __m256d var = _mm256_set1_pd(al.real);
    const __m256d vai = _mm256_set_pd(al.imag, -al.imag, al.imag, -al.imag);
    for (; i + 2 <= n; i += 2) {
      const __m256d x0 = _mm256_loadu_pd(xd + 2 * i);
      _mm256_storeu_pd(xd + 2 * i, _mm256_fmadd_pd(swap256(x0), vai, _mm256_mul_pd(x0, var)));
    }
  }
  for (; i < n; i++) x[i * incx] = z_mul(al, x[i * incx]);
}

/* y = alpha conjx(x); alpha == 0 writes zeros without reading x. */
TL_AVX2 static void zscal2v_avx2(conj_t conjx, dim_t n, dcomplex *restrict alpha,
                                 dcomplex *restrict x, inc_t incx, dcomplex *restrict y, inc_t incy,
                                 cntx_t *cntx) {
  (void)cntx;
  if (n <= 0) return;
  if (z_is_zero(alpha)) {
    for (dim_t i = 0; i < n; i++) y[i * incy].real = 0.0, y[i * incy].imag = 0.0;
    return;
  }
  const int conj = bli_is_conj(conjx);
  const dcomplex al = *alpha;
  dim_t i = 0;
  if (incx == 1 && incy == 1) {
    const double *xd = (const double *)x;
    double *yd = (double *)y;
    const __m256d cm = conj ? imag_sign256() : _mm256_setzero_pd();
    const __m256d var = _mm256_set1_pd(al.real);
    const __m256d vai = _mm256_set_pd(al.imag, -al.imag, al.imag, -al.imag);
    for (; i + 2 <= n; i += 2) {
      const __m256d x0 = _mm256_xor_pd(_mm256_loadu_pd(xd + 2 * i), cm);
      _mm256_storeu_pd(yd + 2 * i, _mm256_fmadd_pd(swap256(x0), vai, _mm256_mul_pd(x0, var)));
    }
  }
  for (; i < n; i++) y[i * incy] = z_mul(al, z_conj_if(conj, x[i * incx]));
}

/* ---- installation ------------------------------------------------------------------ */
tl__blis_level1_kernels tl__blis_level1(int avx512) {
  tl__blis_level1_kernels k;
  k.axpyv = avx512 ? zaxpyv_avx512 : zaxpyv_avx2;
  k.dotxv = zdotxv_avx2;
  k.scalv = zscalv_avx2;
  k.scal2v = zscal2v_avx2;
  k.dotxf = zdotxf_avx2;
  k.axpyf = zaxpyf_avx2;
  return k;
}

/* The function that fills a context of `arch` with BLIS's reference kernels (each x86
 * configuration Debian's BLIS 0.9 is built with), or NULL for an architecture not listed. */
typedef void (*ref_init_fn)(cntx_t *cntx);
static ref_init_fn reference_init(arch_t arch) {
  switch (arch) {
#ifdef BLIS_CONFIG_SKX
    case BLIS_ARCH_SKX:
      return bli_cntx_init_skx_ref;
#endif
#ifdef BLIS_CONFIG_KNL
    case BLIS_ARCH_KNL:
      return bli_cntx_init_knl_ref;
#endif
#ifdef BLIS_CONFIG_HASWELL
    case BLIS_ARCH_HASWELL:
      return bli_cntx_init_haswell_ref;
#endif
#ifdef BLIS_CONFIG_SANDYBRIDGE
    case BLIS_ARCH_SANDYBRIDGE:
      return bli_cntx_init_sandybridge_ref;
#endif
#ifdef BLIS_CONFIG_PENRYN
    case BLIS_ARCH_PENRYN:
      return bli_cntx_init_penryn_ref;
#endif
#ifdef BLIS_CONFIG_ZEN3
    case BLIS_ARCH_ZEN3:
      return bli_cntx_init_zen3_ref;
#endif
#ifdef BLIS_CONFIG_ZEN2
    case BLIS_ARCH_ZEN2:
      return bli_cntx_init_zen2_ref;
#endif
#ifdef BLIS_CONFIG_ZEN
    case BLIS_ARCH_ZEN:
      return bli_cntx_init_zen_ref;
#endif
#ifdef BLIS_CONFIG_EXCAVATOR
    case BLIS_ARCH_EXCAVATOR:
      return bli_cntx_init_excavator_ref;
#endif
#ifdef BLIS_CONFIG_STEAMROLLER
    case BLIS_ARCH_STEAMROLLER:
      return bli_cntx_init_steamroller_ref;
#endif
#ifdef BLIS_CONFIG_PILEDRIVER
    case BLIS_ARCH_PILEDRIVER:
      return bli_cntx_init_piledriver_ref;
#endif
#ifdef BLIS_CONFIG_BULLDOZER
    case BLIS_ARCH_BULLDOZER:
      return bli_cntx_init_bulldozer_ref;
#endif
#ifdef BLIS_CONFIG_GENERIC
    case BLIS_ARCH_GENERIC:
      return bli_cntx_init_generic_ref;
#endif
    default:
      return NULL;
  }
}

/* on: put `mine` in slot `at` only while it holds the same function as BLIS's reference
 * context for the architecture does (a later BLIS with a tuned complex kernel keeps its own).
 * Off: put the reference one back where `mine` is. */
static void swap_slot(func_t *at, const func_t *ref, void_fp mine, int on) {
  void_fp *slot = &at->ptr[BLIS_DCOMPLEX];
  if (on && *slot == ref->ptr[BLIS_DCOMPLEX])
    *slot = mine;
  else if (!on && *slot == mine)
    *slot = ref->ptr[BLIS_DCOMPLEX];
}

void tl__blis_set_level1(cntx_t *cntx, arch_t arch, int avx512, int on) {
  ref_init_fn init = reference_init(arch);
  if (cntx == NULL || init == NULL) return;
  /* Static: a context is about 5 KB, and this runs inside the providers' one-time
   * initialisation or while no BLAS call runs (tl__prov_own_level1), so no two calls
   * overlap. */
  static cntx_t ref;
  init(&ref);
  const tl__blis_level1_kernels k = tl__blis_level1(avx512);
  swap_slot(&cntx->l1v_kers[BLIS_AXPYV_KER], &ref.l1v_kers[BLIS_AXPYV_KER], (void_fp)k.axpyv, on);
  swap_slot(&cntx->l1v_kers[BLIS_DOTXV_KER], &ref.l1v_kers[BLIS_DOTXV_KER], (void_fp)k.dotxv, on);
  swap_slot(&cntx->l1v_kers[BLIS_SCALV_KER], &ref.l1v_kers[BLIS_SCALV_KER], (void_fp)k.scalv, on);
  swap_slot(&cntx->l1v_kers[BLIS_SCAL2V_KER], &ref.l1v_kers[BLIS_SCAL2V_KER], (void_fp)k.scal2v,
            on);
  swap_slot(&cntx->l1f_kers[BLIS_DOTXF_KER], &ref.l1f_kers[BLIS_DOTXF_KER], (void_fp)k.dotxf, on);
  swap_slot(&cntx->l1f_kers[BLIS_AXPYF_KER], &ref.l1f_kers[BLIS_AXPYF_KER], (void_fp)k.axpyf, on);
}

void tl__blis_add_level1(cntx_t *cntx, arch_t arch, int avx512) {
  tl__blis_set_level1(cntx, arch, avx512, 1);
}
#else
/* No x86 kernels in this build: BLIS's contexts keep their own level-1 kernels. */
void tl__blis_add_level1(cntx_t *cntx, arch_t arch, int avx512) {
  (void)cntx, (void)arch, (void)avx512;
}
void tl__blis_set_level1(cntx_t *cntx, arch_t arch, int avx512, int on) {
  (void)cntx, (void)arch, (void)avx512, (void)on;
}
#endif /* TL_X86_KERNELS */
