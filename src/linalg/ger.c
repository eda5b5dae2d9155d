/* src/linalg/ger.c: the rank-1 updates LAPACK asks the BLAS for (sger_, dger_, cgerc_,
 * cgeru_, zgerc_, zgeru_), defined by tenlane in place of BLIS's.
 *
 * Why: every Householder reflector of an unblocked panel (dlarf, zlarf under geqr2, org2r,
 * the bidiagonal panels) ends in A += alpha x y^T over the panel's remaining columns. BLIS
 * runs it as one axpy per column, which loads x again for each column; perf put these
 * axpys at 13-16% of zgeqrf + zungqr and dgeqrf + dorgqr at n = 256 on Zen 4.
 *
 * How (f64 and c128 on AVX-512 CPUs): four columns at a time, x loaded once for the four;
 * the four columns' vectors are all loaded before any is stored, since a store to one
 * column followed by a load from the next at the same offset modulo 4 KiB (a leading
 * dimension of 256 complex or 512 real numbers) stalls on Zen 4. A complex update keeps x
 * and x with its parts swapped and takes two multiply-adds per vector. Measured against
 * OpenBLAS 0.3.21 serial (probe, medians of 51, A in a 256-row array): f64 0.53-0.87x its
 * time from 32 x 32 to 256 x 32, c128 0.66-1.02x; against BLIS 0.60-0.92x and 0.68-0.79x.
 * The kernels copy the four column pointers into locals first: an intrinsic store may alias
 * anything, so with col[q] read in the loop the compiler loaded the pointers again after
 * every store, and the c128 update took 1.2-1.3x the time of the same loop without those
 * loads (17 x 7 to 256 x 31 panels; 0.53-0.96x OpenBLAS's zgerc after, in one probe).
 * A strided x is gathered a chunk at a time onto the stack. f32, c64 and CPUs without
 * AVX-512 (or tl__blas_isa_cap 0) go to the provider's ger (tl__prov_ger; with BLIS, its
 * typed ger with the context tenlane chose), called on the runs of columns whose y element
 * is not 0 so that every provider keeps the contract below.
 *
 * Contract: the reference BLAS's. An illegal argument calls xerbla_ with its position
 * (1 m, 2 n, 5 incx, 7 incy, 9 lda) and returns; m or n 0, or alpha 0, return at once; a
 * column whose y element is 0 is left as it is (so a NaN in x does not reach it, as in the
 * reference loops); a negative increment walks its vector from the end. Results can differ
 * from BLIS's in the last bit (the complex product is rounded in another order). Linking:
 * as gemv.c's (tl__ger_linked). Pure, no allocation, thread-safe. */
#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "linalg_int.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define TL_AVX512 __attribute__((target("avx512f")))

int tl__ger_linked(void) { return 1; }

/* Rows of a strided x copied to the stack at a time. */
#define CHUNK 512

#if TL_X86_KERNELS
/* ---- f64 ----------------------------------------------------------------------------- */

/* col[q][i] += x[i] c[q], i < m, q < NC (1 or 4). x contiguous. */
TL_AVX512 static inline __attribute__((always_inline)) void update_d(const int NC, int64_t m,
                                                                     const double *x,
                                                                     const double *c,
                                                                     double *const *col) {
  const int64_t mv = m & ~(int64_t)7;
  const __mmask8 tail = (__mmask8)((1u << (m & 7)) - 1u);
  __m512d cv[4];
  double *p[4]; /* the column pointers in registers: the stores below may alias col[] */
  for (int q = 0; q < NC; q++) cv[q] = _mm512_set1_pd(c[q]), p[q] = col[q];
  for (int64_t i = 0; i < mv; i += 8) {
    const __m512d xv = _mm512_loadu_pd(x + i);
    __m512d v[4];
    for (int q = 0; q < NC; q++) v[q] = _mm512_loadu_pd(p[q] + i);
    for (int q = 0; q < NC; q++) _mm512_storeu_pd(p[q] + i, _mm512_fmadd_pd(xv, cv[q], v[q]));
  }
  if (tail) {
    const __m512d xv = _mm512_maskz_loadu_pd(tail, x + mv);
    __m512d v[4];
    for (int q = 0; q < NC; q++) v[q] = _mm512_maskz_loadu_pd(tail, p[q] + mv);
    for (int q = 0; q < NC; q++)
      _mm512_mask_storeu_pd(p[q] + mv, tail, _mm512_fmadd_pd(xv, cv[q], v[q]));
  }
}

TL_AVX512 static void update4_d(int64_t m, const double *x, const double *c, double *const *col) {
  update_d(4, m, x, c, col);
}
TL_AVX512 static void update1_d(int64_t m, const double *x, const double *c, double *const *col) {
  update_d(1, m, x, c, col);
}

/* ---- c128 (interleaved) ------------------------------------------------------------- */

/* col[q][i] += x[i] c[q], i < m, q < NC (1 or 4), c[q] as (re, im). x contiguous. */
TL_AVX512 static inline __attribute__((always_inline)) void update_z(const int NC, int64_t m,
                                                                     const double *x,
                                                                     const double *c,
                                                                     double *const *col) {
  const int64_t mv = m & ~(int64_t)3;
  const __mmask8 tail = (__mmask8)((1u << (2 * (m & 3))) - 1u);
  /* x c = x Re c + swap(x) (-Im c, +Im c). */
  const __m512d sign = _mm512_set_pd(1, -1, 1, -1, 1, -1, 1, -1);
  __m512d cr[4], ci[4];
  double *p[4]; /* the column pointers in registers: the stores below may alias col[] */
  for (int q = 0; q < NC; q++) {
    cr[q] = _mm512_set1_pd(c[2 * q]);
    ci[q] = _mm512_mul_pd(sign, _mm512_set1_pd(c[2 * q + 1]));
    p[q] = col[q];
  }
  for (int64_t i = 0; i < mv; i += 4) {
    const __m512d xv = _mm512_loadu_pd(x + 2 * i), xs = _mm512_permute_pd(xv, 0x55);
    __m512d v[4];
    for (int q = 0; q < NC; q++) v[q] = _mm512_loadu_pd(p[q] + 2 * i);
    for (int q = 0; q < NC; q++)
      _mm512_storeu_pd(p[q] + 2 * i, _mm512_fmadd_pd(xs, ci[q], _mm512_fmadd_pd(xv, cr[q], v[q])));
  }
  if (tail) {
    const __m512d xv = _mm512_maskz_loadu_pd(tail, x + 2 * mv), xs = _mm512_permute_pd(xv, 0x55);
    __m512d v[4];
    for (int q = 0; q < NC; q++) v[q] = _mm512_maskz_loadu_pd(tail, p[q] + 2 * mv);
    for (int q = 0; q < NC; q++)
      _mm512_mask_storeu_pd(p[q] + 2 * mv, tail,
                            _mm512_fmadd_pd(xs, ci[q], _mm512_fmadd_pd(xv, cr[q], v[q])));
  }
}

TL_AVX512 static void update4_z(int64_t m, const double *x, const double *c, double *const *col) {
  update_z(4, m, x, c, col);
}
TL_AVX512 static void update1_z(int64_t m, const double *x, const double *c, double *const *col) {
  update_z(1, m, x, c, col);
}

/* ---- drivers: columns with a nonzero y element, four at a time ----------------------- */

/* A[0:m, j] += x alpha y[j incy] (conj(y) when conj_y) over the columns whose y element is
 * not 0, for rows r0..r0 + m of A (x those rows, contiguous). */
static void rows_d(int64_t m, int64_t n, double alpha, const double *x, const double *y,
                   int64_t incy, double *a, int64_t lda) {
  double c[4];
  double *col[4];
  int held = 0;
  for (int64_t j = 0; j < n; j++) {
    const double yj = y[j * incy];
    if (yj == 0) continue;
    c[held] = alpha * yj;
    col[held++] = a + j * lda;
    if (held == 4) update4_d(m, x, c, col), held = 0;
  }
  for (int q = 0; q < held; q++) update1_d(m, x, c + q, col + q);
}

static void rows_z(int64_t m, int64_t n, double complex alpha, const double complex *x,
                   const double complex *y, int64_t incy, int conj_y, double complex *a,
                   int64_t lda) {
  double complex c[4];
  double *col[4];
  int held = 0;
  for (int64_t j = 0; j < n; j++) {
    const double complex yj = y[j * incy];
    if (yj == 0) continue;
    c[held] = alpha * (conj_y ? conj(yj) : yj);
    col[held++] = (double *)(a + j * lda);
    if (held == 4) update4_z(m, (const double *)x, (const double *)c, col), held = 0;
  }
  for (int q = 0; q < held; q++) update1_z(m, (const double *)x, (const double *)(c + q), col + q);
}

/* The whole update: x contiguous in place, or gathered CHUNK rows at a time. */
#define TL__GER_DRIVER(NAME, T, ROWS, ...)                                              \
  static void NAME(int64_t m, int64_t n, T alpha, const T *x, int64_t incx, const T *y, \
                   int64_t incy, T *a, int64_t lda, int conj_y) {                       \
    (void)conj_y;                                                                       \
    if (incx == 1) {                                                                    \
      ROWS(m, n, alpha, x, y, incy, __VA_ARGS__ a, lda);                                \
      return;                                                                           \
    }                                                                                   \
    T buf[CHUNK];                                                                       \
    for (int64_t r0 = 0; r0 < m; r0 += CHUNK) {                                         \
      const int64_t rows = m - r0 < CHUNK ? m - r0 : CHUNK;                             \
      for (int64_t i = 0; i < rows; i++) buf[i] = x[(r0 + i) * incx];                   \
      ROWS(rows, n, alpha, buf, y, incy, __VA_ARGS__ a + r0, lda);                      \
    }                                                                                   \
  }
TL__GER_DRIVER(ger_d, double, rows_d, )
TL__GER_DRIVER(ger_z, double complex, rows_z, conj_y, )

#else
/* No AVX-512 kernels in this build: every update goes to BLIS's typed ger. */
#define ger_d NULL
#define ger_z NULL
#endif /* TL_X86_KERNELS */

/* ---- the BLAS interface ------------------------------------------------------------- */

/* The reference BLAS's checks: the position of the first bad argument, 0 if none. */
static int check(int m, int n, int incx, int incy, int lda) {
  if (m < 0) return 1;
  if (n < 0) return 2;
  if (incx == 0) return 5;
  if (incy == 0) return 7;
  if (lda < (m > 1 ? m : 1)) return 9;
  return 0;
}

/* 1 when the element at p (of dtype dt) is 0 (both parts for a complex dtype). */
static int is_zero(tl_dtype dt, const char *p) {
  switch (dt) {
    case TL_F32:
      return *(const float *)p == 0;
    case TL_F64:
      return *(const double *)p == 0;
    case TL_C64:
      return ((const float *)p)[0] == 0 && ((const float *)p)[1] == 0;
    default:
      return ((const double *)p)[0] == 0 && ((const double *)p)[1] == 0;
  }
}

/* The provider's ger over the columns whose y element is not 0, one call per run of such
 * columns (a y without zeros: one call). The contract above leaves a zero y element's
 * column as it is, NaN or Inf in x notwithstanding, as the reference BLAS's loops do; not
 * every provider does (OpenBLAS 0.3.21's ger multiplies through, turning those columns
 * NaN), so the zeros are skipped here rather than left to the provider. x0, y0 as
 * tl__prov_ger takes them (each vector's first element). */
static void prov_ger_nonzero(tl_dtype dt, int conj_y, int64_t m, int64_t n, const void *alpha,
                             const void *x0, int64_t incx, const void *y0, int64_t incy, void *a,
                             int64_t lda) {
  const int64_t es = (int64_t)tl_dtype_size(dt);
  const char *y = y0;
  char *col = a;
  int64_t j = 0;
  while (j < n) {
    while (j < n && is_zero(dt, y + j * incy * es)) j++;
    const int64_t start = j;
    while (j < n && !is_zero(dt, y + j * incy * es)) j++;
    if (j > start)
      tl__prov_ger(dt, conj_y, m, j - start, alpha, x0, incx, y + start * incy * es, incy,
                   col + start * lda * es, lda);
  }
}

/* One routine: checks, quick returns, then tenlane's kernels (OWN, or 0 for none) or the
 * provider's ger over the nonzero y elements' columns, x0 and y0 each vector's first
 * element. */
#define TL__GER_ENTRY(NAME, NAME_UPPER, T, DTYPE, CONJ, OWN)                                      \
  void TL__BLAS_ENTRY(NAME)(const int *m, const int *n, const T *alpha, const T *x,               \
                            const int *incx, const T *y, const int *incy, T *a, const int *lda);  \
  void TL__BLAS_ENTRY(NAME)(const int *m, const int *n, const T *alpha, const T *x,               \
                            const int *incx, const T *y, const int *incy, T *a, const int *lda) { \
    const int bad = check(*m, *n, *incx, *incy, *lda);                                            \
    if (bad != 0) {                                                                               \
      xerbla_(NAME_UPPER, &bad, 6);                                                               \
      return;                                                                                     \
    }                                                                                             \
    if (*m == 0 || *n == 0 || *alpha == 0) return;                                                \
    const T *x0 = TL__BLAS_FIRST(x, *m, *incx), *y0 = TL__BLAS_FIRST(y, *n, *incy);               \
    void (*own)(int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T *, int64_t, int) = \
        OWN;                                                                                      \
    if (own != NULL && tl__blas_own_kernels(TL__BLAS_OWN_GER))                                    \
      own(*m, *n, *alpha, x0, *incx, y0, *incy, a, *lda, CONJ);                                   \
    else                                                                                          \
      prov_ger_nonzero(DTYPE, CONJ, *m, *n, alpha, x0, *incx, y0, *incy, a, *lda);                \
  }

TL__GER_ENTRY(sger_, "SGER  ", float, TL_F32, 0, NULL)
TL__GER_ENTRY(dger_, "DGER  ", double, TL_F64, 0, ger_d)
TL__GER_ENTRY(cgeru_, "CGERU ", float complex, TL_C64, 0, NULL)
TL__GER_ENTRY(cgerc_, "CGERC ", float complex, TL_C64, 1, NULL)
TL__GER_ENTRY(zgeru_, "ZGERU ", double complex, TL_C128, 0, ger_z)
TL__GER_ENTRY(zgerc_, "ZGERC ", double complex, TL_C128, 1, ger_z)
