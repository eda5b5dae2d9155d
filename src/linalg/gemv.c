/* src/linalg/gemv.c: the matrix-vector products LAPACK asks the BLAS for (sgemv_, dgemv_,
 * cgemv_, zgemv_), defined by tenlane in place of BLIS's.
 *
 * Why: the bidiagonal reduction of every SVD (dlabrd: two products with the whole trailing
 * matrix per column) and each Householder reflector of QR's panels (dlarf) run through
 * dgemv. On Zen 4 BLIS 0.9 answers it with its AVX2 zen kernels (ddotxf, daxpyf: 8 columns
 * per call, one dotxv per column for the rest) after a per-call set-up, at 1.15-1.5x
 * OpenBLAS serial's time from 64^2 to 512^2; perf put them at a fifth of tl_svd f64 n = 256
 * and most of the gap to OpenBLAS there.
 *
 * How (f64 and c128 on AVX-512 CPUs): y = beta y + alpha A^T x takes four columns at a time, two
 * 8-wide partial sums per column over 16 rows a step and a masked step for the rows left;
 * y = beta y + alpha A x takes four columns at a time down the rows, each row vector of y
 * loaded, given four multiply-adds and stored. Measured against OpenBLAS 0.3.21 serial's
 * dgemv (probe, medians of 31, A in a 512-row array): transposed 0.89-0.93x its time, plain
 * 0.71-0.80x, from 64^2 to 512^2 and 256 x 8. c128 the same way, four complex numbers a
 * vector (the products with x and with x's parts swapped, combined at the end; a c = a Re c
 * + swap(a) (-Im c, Im c)): against BLIS with tenlane's AVX2 complex kernels the plain
 * product took about 0.6x the time inside zgesdd (perf), the conjugate-transposed one 0.8x;
 * zgesdd and zgeqrf + zungqr at n = 256 took 0.96-1.00x the time (alternated in one
 * process). The c128 transposed product ends a block of four columns with one shuffle tree
 * for the four sums instead of a reduction per column and part: on the panel shapes
 * of QR and the bidiagonal reduction (17 x 7 to 256 x 31) the c128 kernel took 0.75-0.93x
 * its earlier time with the old and new kernels alternated in one process, most at small m
 * (the same tree in the f64 kernel measured no change there, so f64 keeps its reductions). A
 * strided x (transposed) or y (plain) is gathered a chunk at a time into the stack. Everything else
 * (f32, c64, f64 and c128 without AVX-512, or tl__blas_isa_cap 0) goes to BLIS's typed gemv with
 * the context tenlane chose, as BLIS's own BLAS layer would send it.
 *
 * Contract: the reference BLAS's. An illegal argument calls xerbla_ (tenlane's, xerbla.c)
 * with its position and returns; m or n 0, or alpha 0 with beta 1, return at once; beta 0
 * sets y without reading it; alpha 0 reads neither A nor x; a negative increment walks its
 * vector from the end. Sums are in another order than BLIS's, so results differ from its
 * in the last bits; a given call gives the same bits every time on a given CPU.
 *
 * Linking: with BLIS (TL_BLAS_OWN_ENTRIES) LAPACK is linked into libtenlane from its archive,
 * its gemv calls bind to these definitions, and BLIS's archive member (it defines these four
 * and nothing else) is never pulled in; with a Fortran BLAS provider the entries are named
 * tl__own_* (TL__BLAS_ENTRY) and LAPACK keeps the provider's. tl__gemv_linked is
 * called by tl__la_begin so that a static link takes this object in before LAPACK's archive
 * is searched. Hidden like every internal symbol. BLIS was initialised by
 * tl__providers_init before any LAPACK call. Pure, no allocation, thread-safe. */
#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "linalg_int.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define TL_AVX512 __attribute__((target("avx512f")))

int tl__blas_isa_cap = 1; /* shared by gemm_blas.c and ger.c (linalg_int.h) */
int tl__blas_off = 0;     /* TL__BLAS_OWN_* bits (linalg_int.h) */

int tl__gemv_linked(void) { return 1; }

/* Rows of a strided vector copied to the stack at a time. */
#define CHUNK 512

#if TL_X86_KERNELS
/* ---- f64 kernels (AVX-512F) --------------------------------------------------------- */

/* y[j * incy] = beta y[j * incy] + alpha sum_i a[i + j lda] x[i], j < n, i < m (beta 0: y
 * not read). x contiguous. */
TL_AVX512 static void dot_columns(int64_t m, int64_t n, double alpha, const double *a, int64_t lda,
                                  const double *x, double beta, double *y, int64_t incy, int conj) {
  (void)conj; /* the same signature as dot_columns_z */
  const __mmask8 tail = (__mmask8)((1u << (m & 7)) - 1u);
  const int64_t mv = m & ~(int64_t)7;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const double *a0 = a + j * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    __m512d t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    int64_t i = 0;
    for (; i + 16 <= mv; i += 16) {
      const __m512d x0 = _mm512_loadu_pd(x + i), x1 = _mm512_loadu_pd(x + i + 8);
      s0 = _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i), x0, s0);
      s1 = _mm512_fmadd_pd(_mm512_loadu_pd(a1 + i), x0, s1);
      s2 = _mm512_fmadd_pd(_mm512_loadu_pd(a2 + i), x0, s2);
      s3 = _mm512_fmadd_pd(_mm512_loadu_pd(a3 + i), x0, s3);
      t0 = _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i + 8), x1, t0);
      t1 = _mm512_fmadd_pd(_mm512_loadu_pd(a1 + i + 8), x1, t1);
      t2 = _mm512_fmadd_pd(_mm512_loadu_pd(a2 + i + 8), x1, t2);
      t3 = _mm512_fmadd_pd(_mm512_loadu_pd(a3 + i + 8), x1, t3);
    }
    if (i < mv) {
      const __m512d x0 = _mm512_loadu_pd(x + i);
      s0 = _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i), x0, s0);
      s1 = _mm512_fmadd_pd(_mm512_loadu_pd(a1 + i), x0, s1);
      s2 = _mm512_fmadd_pd(_mm512_loadu_pd(a2 + i), x0, s2);
      s3 = _mm512_fmadd_pd(_mm512_loadu_pd(a3 + i), x0, s3);
      i += 8;
    }
    if (tail) {
      const __m512d x0 = _mm512_maskz_loadu_pd(tail, x + i);
      t0 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a0 + i), x0, t0);
      t1 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a1 + i), x0, t1);
      t2 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a2 + i), x0, t2);
      t3 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a3 + i), x0, t3);
    }
    const double r[4] = {
        _mm512_reduce_add_pd(_mm512_add_pd(s0, t0)), _mm512_reduce_add_pd(_mm512_add_pd(s1, t1)),
        _mm512_reduce_add_pd(_mm512_add_pd(s2, t2)), _mm512_reduce_add_pd(_mm512_add_pd(s3, t3))};
    for (int q = 0; q < 4; q++) {
      double *yq = y + (j + q) * incy;
      *yq = (beta == 0.0 ? 0.0 : beta * *yq) + alpha * r[q];
    }
  }
  for (; j < n; j++) {
    const double *a0 = a + j * lda;
    __m512d s0 = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i < mv; i += 8)
      s0 = _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i), _mm512_loadu_pd(x + i), s0);
    if (tail)
      s0 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a0 + i), _mm512_maskz_loadu_pd(tail, x + i),
                           s0);
    double *yj = y + j * incy;
    *yj = (beta == 0.0 ? 0.0 : beta * *yj) + alpha * _mm512_reduce_add_pd(s0);
  }
}

/* y[i] += sum_j a[i + j lda] (alpha x[j * incx]), i < m, j < n. y contiguous. */
TL_AVX512 static void add_columns(int64_t m, int64_t n, double alpha, const double *a, int64_t lda,
                                  const double *x, int64_t incx, double *y) {
  const __mmask8 tail = (__mmask8)((1u << (m & 7)) - 1u);
  const int64_t mv = m & ~(int64_t)7;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const double *a0 = a + j * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    const __m512d c0 = _mm512_set1_pd(alpha * x[j * incx]);
    const __m512d c1 = _mm512_set1_pd(alpha * x[(j + 1) * incx]);
    const __m512d c2 = _mm512_set1_pd(alpha * x[(j + 2) * incx]);
    const __m512d c3 = _mm512_set1_pd(alpha * x[(j + 3) * incx]);
    int64_t i = 0;
    for (; i < mv; i += 8) {
      __m512d v = _mm512_loadu_pd(y + i);
      v = _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i), c0, v);
      v = _mm512_fmadd_pd(_mm512_loadu_pd(a1 + i), c1, v);
      v = _mm512_fmadd_pd(_mm512_loadu_pd(a2 + i), c2, v);
      v = _mm512_fmadd_pd(_mm512_loadu_pd(a3 + i), c3, v);
      _mm512_storeu_pd(y + i, v);
    }
    if (tail) {
      __m512d v = _mm512_maskz_loadu_pd(tail, y + i);
      v = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a0 + i), c0, v);
      v = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a1 + i), c1, v);
      v = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a2 + i), c2, v);
      v = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a3 + i), c3, v);
      _mm512_mask_storeu_pd(y + i, tail, v);
    }
  }
  for (; j < n; j++) {
    const double *a0 = a + j * lda;
    const __m512d c0 = _mm512_set1_pd(alpha * x[j * incx]);
    int64_t i = 0;
    for (; i < mv; i += 8)
      _mm512_storeu_pd(y + i, _mm512_fmadd_pd(_mm512_loadu_pd(a0 + i), c0, _mm512_loadu_pd(y + i)));
    if (tail)
      _mm512_mask_storeu_pd(y + i, tail,
                            _mm512_fmadd_pd(_mm512_maskz_loadu_pd(tail, a0 + i), c0,
                                            _mm512_maskz_loadu_pd(tail, y + i)));
  }
}

/* ---- c128 kernels (AVX-512F): four complex numbers a vector, interleaved ------------ */

/* y[j * incy] = beta y[j * incy] + alpha sum_i op(a[i + j lda]) x[i], op conj when `conj`.
 * x contiguous. Each column keeps the lane products of A with x and with x's parts swapped;
 * the real part is the even lanes' sum minus (plus, conj) the odd lanes', the imaginary part
 * the even plus (minus) the odd of the swapped ones. */
/* re + i im with each part as given (CMPLX is not there under clang 14 with glibc, and
 * re + I * im turns an infinite im into a NaN real part). */
static inline double complex make_z(double re, double im) {
  const double parts[2] = {re, im};
  double complex z;
  memcpy(&z, parts, sizeof z);
  return z;
}

/* `cols` (1 or 4, a constant once inlined, so the sums stay in registers) columns from j. */
TL_AVX512 static inline __attribute__((always_inline)) void dot_block_z(
    const int cols, int64_t m, int64_t j, double complex alpha, const double complex *a,
    int64_t lda, const double *xd, double complex beta, double complex *y, int64_t incy, int conj) {
  const __mmask8 tail = (__mmask8)((1u << (2 * (m & 3))) - 1u);
  const int64_t mv = m & ~(int64_t)3;
  const double *ad[4];
  __m512d s[4], u[4];
  for (int q = 0; q < cols; q++) {
    ad[q] = (const double *)(a + (j + q) * lda);
    s[q] = u[q] = _mm512_setzero_pd();
  }
  int64_t i = 0;
  for (; i < mv; i += 4) {
    const __m512d xv = _mm512_loadu_pd(xd + 2 * i), xs = _mm512_permute_pd(xv, 0x55);
    for (int q = 0; q < cols; q++) {
      const __m512d av = _mm512_loadu_pd(ad[q] + 2 * i);
      s[q] = _mm512_fmadd_pd(av, xv, s[q]);
      u[q] = _mm512_fmadd_pd(av, xs, u[q]);
    }
  }
  if (tail) {
    const __m512d xv = _mm512_maskz_loadu_pd(tail, xd + 2 * i), xs = _mm512_permute_pd(xv, 0x55);
    for (int q = 0; q < cols; q++) {
      const __m512d av = _mm512_maskz_loadu_pd(tail, ad[q] + 2 * i);
      s[q] = _mm512_fmadd_pd(av, xv, s[q]);
      u[q] = _mm512_fmadd_pd(av, xs, u[q]);
    }
  }
  /* Per column, (even s) -/+ (odd s) and (even u) +/- (odd u) pairwise: four complex partial
   * sums in one vector. Four columns then meet in one shuffle tree, whose result holds the
   * four sums in order. Four reductions per column, as before, took about 1.3x the time at
   * 40 x 31 (probe). */
  const __m512d sign =
      conj ? _mm512_set_pd(-1, 1, -1, 1, -1, 1, -1, 1) : _mm512_set_pd(1, -1, 1, -1, 1, -1, 1, -1);
  __m512d part[4];
  for (int q = 0; q < cols; q++)
    part[q] = _mm512_fmadd_pd(_mm512_unpackhi_pd(s[q], u[q]), sign, _mm512_unpacklo_pd(s[q], u[q]));
  double sums[8];
  if (cols == 4) {
    const __m512d p01 = _mm512_add_pd(_mm512_shuffle_f64x2(part[0], part[1], 0x44),
                                      _mm512_shuffle_f64x2(part[0], part[1], 0xEE));
    const __m512d p23 = _mm512_add_pd(_mm512_shuffle_f64x2(part[2], part[3], 0x44),
                                      _mm512_shuffle_f64x2(part[2], part[3], 0xEE));
    _mm512_storeu_pd(sums, _mm512_add_pd(_mm512_shuffle_f64x2(p01, p23, 0x88),
                                         _mm512_shuffle_f64x2(p01, p23, 0xDD)));
  } else {
    const __m256d h =
        _mm256_add_pd(_mm512_castpd512_pd256(part[0]), _mm512_extractf64x4_pd(part[0], 1));
    _mm_storeu_pd(sums, _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1)));
  }
  for (int q = 0; q < cols; q++) {
    double complex *yq = y + (j + q) * incy;
    *yq = (beta == 0 ? 0 : beta * *yq) + alpha * make_z(sums[2 * q], sums[2 * q + 1]);
  }
}

/* y[j * incy] = beta y[j * incy] + alpha sum_i op(a[i + j lda]) x[i], op conj when `conj`.
 * x contiguous. Each column keeps the lane products of A with x and with x's parts swapped;
 * the real part is the even lanes' sum minus (plus, conj) the odd lanes', the imaginary part
 * the even plus (minus) the odd of the swapped ones. */
TL_AVX512 static void dot_columns_z(int64_t m, int64_t n, double complex alpha,
                                    const double complex *a, int64_t lda, const double complex *x,
                                    double complex beta, double complex *y, int64_t incy,
                                    int conj) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    dot_block_z(4, m, j, alpha, a, lda, (const double *)x, beta, y, incy, conj);
  for (; j < n; j++) dot_block_z(1, m, j, alpha, a, lda, (const double *)x, beta, y, incy, conj);
}

TL_AVX512 static inline __attribute__((always_inline)) void add_block_z(
    const int cols, int64_t m, int64_t j, double complex alpha, const double complex *a,
    int64_t lda, const double complex *x, int64_t incx, double *yd) {
  const __mmask8 tail = (__mmask8)((1u << (2 * (m & 3))) - 1u);
  const int64_t mv = m & ~(int64_t)3;
  const double *ad[4];
  __m512d cr[4], ci[4];
  for (int q = 0; q < cols; q++) {
    const double complex c = alpha * x[(j + q) * incx];
    const double r = creal(c), i = cimag(c);
    ad[q] = (const double *)(a + (j + q) * lda);
    cr[q] = _mm512_set1_pd(r);
    ci[q] = _mm512_set_pd(i, -i, i, -i, i, -i, i, -i);
  }
  int64_t i = 0;
  for (; i < mv; i += 4) {
    __m512d v = _mm512_loadu_pd(yd + 2 * i);
    for (int q = 0; q < cols; q++) {
      const __m512d av = _mm512_loadu_pd(ad[q] + 2 * i);
      v = _mm512_fmadd_pd(_mm512_permute_pd(av, 0x55), ci[q], v);
      v = _mm512_fmadd_pd(av, cr[q], v);
    }
    _mm512_storeu_pd(yd + 2 * i, v);
  }
  if (tail) {
    __m512d v = _mm512_maskz_loadu_pd(tail, yd + 2 * i);
    for (int q = 0; q < cols; q++) {
      const __m512d av = _mm512_maskz_loadu_pd(tail, ad[q] + 2 * i);
      v = _mm512_fmadd_pd(_mm512_permute_pd(av, 0x55), ci[q], v);
      v = _mm512_fmadd_pd(av, cr[q], v);
    }
    _mm512_mask_storeu_pd(yd + 2 * i, tail, v);
  }
}

/* y[i] += sum_j a[i + j lda] (alpha x[j * incx]), i < m, j < n. y contiguous. With c = alpha
 * x[j]: a c = a Re(c) + swap(a) (-Im(c), Im(c)) lane by lane. */
TL_AVX512 static void add_columns_z(int64_t m, int64_t n, double complex alpha,
                                    const double complex *a, int64_t lda, const double complex *x,
                                    int64_t incx, double complex *y) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) add_block_z(4, m, j, alpha, a, lda, x, incx, (double *)y);
  for (; j < n; j++) add_block_z(1, m, j, alpha, a, lda, x, incx, (double *)y);
}

/* ---- drivers ------------------------------------------------------------------------ */

/* For each of f64 and c128: SCALE(len, beta, y, inc) makes y = beta y (beta 0 writes zeros),
 * and NAME runs the product on the kernels above (trans 0 'N', 1 'T', 2 'C'; x and y from
 * their first elements, negative increments resolved; arguments checked; m, n > 0). The
 * plain product needs a contiguous y and the transposed one a contiguous x: a strided one is
 * gathered CHUNKLEN elements at a time (the transposed product then applies beta with its
 * first chunk and adds the later ones). */
#define TL__GEMV_DRIVER(NAME, SCALE, T, CHUNKLEN, ADD, DOT)                                       \
  static void SCALE(int64_t len, T beta, T *y, int64_t inc) {                                     \
    if (beta == 1) return;                                                                        \
    for (int64_t i = 0; i < len; i++) y[i * inc] = beta == 0 ? 0 : beta * y[i * inc];             \
  }                                                                                               \
  static void NAME(int trans, int64_t m, int64_t n, T alpha, const T *a, int64_t lda, const T *x, \
                   int64_t incx, T beta, T *y, int64_t incy) {                                    \
    T buf[CHUNKLEN];                                                                              \
    if (trans == 0) {                                                                             \
      if (incy == 1) {                                                                            \
        SCALE(m, beta, y, 1);                                                                     \
        if (alpha != 0) ADD(m, n, alpha, a, lda, x, incx, y);                                     \
        return;                                                                                   \
      }                                                                                           \
      for (int64_t r0 = 0; r0 < m; r0 += CHUNKLEN) {                                              \
        const int64_t rows = m - r0 < CHUNKLEN ? m - r0 : CHUNKLEN;                               \
        for (int64_t i = 0; i < rows; i++) {                                                      \
          const T v = y[(r0 + i) * incy];                                                         \
          buf[i] = beta == 0 ? 0 : beta == 1 ? v : beta * v;                                      \
        }                                                                                         \
        if (alpha != 0) ADD(rows, n, alpha, a + r0, lda, x, incx, buf);                           \
        for (int64_t i = 0; i < rows; i++) y[(r0 + i) * incy] = buf[i];                           \
      }                                                                                           \
      return;                                                                                     \
    }                                                                                             \
    if (alpha == 0) {                                                                             \
      SCALE(n, beta, y, incy);                                                                    \
      return;                                                                                     \
    }                                                                                             \
    if (incx == 1) {                                                                              \
      DOT(m, n, alpha, a, lda, x, beta, y, incy, trans == 2);                                     \
      return;                                                                                     \
    }                                                                                             \
    for (int64_t r0 = 0; r0 < m; r0 += CHUNKLEN) {                                                \
      const int64_t rows = m - r0 < CHUNKLEN ? m - r0 : CHUNKLEN;                                 \
      for (int64_t i = 0; i < rows; i++) buf[i] = x[(r0 + i) * incx];                             \
      DOT(rows, n, alpha, a + r0, lda, buf, r0 == 0 ? beta : 1, y, incy, trans == 2);             \
    }                                                                                             \
  }

TL__GEMV_DRIVER(gemv_d_kernels, scale_y_d, double, CHUNK, add_columns, dot_columns)
TL__GEMV_DRIVER(gemv_z_kernels, scale_y_z, double complex, CHUNK / 2, add_columns_z, dot_columns_z)

#endif /* TL_X86_KERNELS */

/* ---- the BLAS interface ------------------------------------------------------------- */

/* The reference BLAS's checks: the position of the first bad argument, 0 if none. */
static int check(int trans, int m, int n, int lda, int incx, int incy) {
  if (trans < 0) return 1;
  if (m < 0) return 2;
  if (n < 0) return 3;
  if (lda < (m > 1 ? m : 1)) return 6;
  if (incx == 0) return 8;
  if (incy == 0) return 11;
  return 0;
}

/* One type's entry: the reference BLAS's checks and quick returns, then `body` with tr
 * (0/1/2), x0 and y0 (each vector from its first element). */
#define TL__GEMV_ENTRY(NAME, NAME_UPPER, T, BODY)                                           \
  void TL__BLAS_ENTRY(NAME)(const char *trans, const int *m, const int *n, const T *alpha,  \
                            const T *a, const int *lda, const T *x, const int *incx,        \
                            const T *beta, T *y, const int *incy, size_t trans_length);     \
  void TL__BLAS_ENTRY(NAME)(const char *trans, const int *m, const int *n, const T *alpha,  \
                            const T *a, const int *lda, const T *x, const int *incx,        \
                            const T *beta, T *y, const int *incy, size_t trans_length) {    \
    (void)trans_length;                                                                     \
    const int tr = tl__blas_trans(trans);                                                   \
    const int bad = check(tr, *m, *n, *lda, *incx, *incy);                                  \
    if (bad != 0) {                                                                         \
      xerbla_(NAME_UPPER, &bad, 6);                                                         \
      return;                                                                               \
    }                                                                                       \
    if (*m == 0 || *n == 0 || (*alpha == 0 && *beta == 1)) return;                          \
    const int64_t len_x = tr == 0 ? *n : *m, len_y = tr == 0 ? *m : *n;                     \
    const T *x0 = TL__BLAS_FIRST(x, len_x, *incx);                                          \
    T *y0 = TL__BLAS_FIRST(y, len_y, *incy);                                                \
    if (tl__exec_current_cancelled()) { /* y = 0: LAPACK ends fast, the route reports it */ \
      for (int64_t i = 0; i < len_y; i++) y0[i * *incy] = 0;                                \
      return;                                                                               \
    }                                                                                       \
    BODY;                                                                                   \
  }

/* BLIS's typed gemv (the process-wide context, as BLIS's BLAS layer would call it). */
#define TL__GEMV_BLIS(DTYPE) \
  tl__prov_gemv(DTYPE, tr, *m, *n, alpha, a, *lda, x0, *incx, beta, y0, *incy)
#if TL_X86_KERNELS
/* tenlane's kernels where tl__blas_own_kernels(TL__BLAS_OWN_GEMV) says so, BLIS's otherwise. */
#define TL__GEMV_OWN(KERNELS, DTYPE)                                   \
  if (tl__blas_own_kernels(TL__BLAS_OWN_GEMV))                         \
    KERNELS(tr, *m, *n, *alpha, a, *lda, x0, *incx, *beta, y0, *incy); \
  else                                                                 \
    TL__GEMV_BLIS(DTYPE)
#else
/* No AVX-512 kernels in this build: BLIS's. */
#define TL__GEMV_OWN(KERNELS, DTYPE) TL__GEMV_BLIS(DTYPE)
#endif

TL__GEMV_ENTRY(sgemv_, "SGEMV ", float, TL__GEMV_BLIS(TL_F32))
TL__GEMV_ENTRY(cgemv_, "CGEMV ", float complex, TL__GEMV_BLIS(TL_C64))
TL__GEMV_ENTRY(zgemv_, "ZGEMV ", double complex, TL__GEMV_OWN(gemv_z_kernels, TL_C128))
TL__GEMV_ENTRY(dgemv_, "DGEMV ", double, TL__GEMV_OWN(gemv_d_kernels, TL_F64))
