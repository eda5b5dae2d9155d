/* src/linalg/gemm_narrow.c: AVX-512 kernels for the narrow matrix products LAPACK's blocked
 * algorithms ask for, in f64 and c128.
 *
 * Why: a blocked Householder step (dlarfb, zlarfb under geqrf, orgqr, ormqr, gebrd) makes
 * two products per block: W = C^T V, a tall matrix against a block of nb = 32 columns, and
 * C -= V W^T, a rank-nb update of the trailing matrix. BLIS packs both operands for each
 * and runs its 16 x 14 skx microkernel, which wastes a quarter of its tile on n = 32 and
 * spends a large share of a k = 32 update on loading and storing C. Replayed from one QR of
 * 256^2 on Zen 4, BLIS's sixteen calls took 0.88-0.90 ms and OpenBLAS serial's 0.72-0.80.
 *
 * Two shapes of kernel, both with no allocation (packing buffers on the stack, at most
 * 17 KiB) and no thread:
 *
 * - Rank-k (op(A) = A, op(B) any): C tiles of 24 rows x 8 columns (f64) or 12 x 4 (c128),
 *   k taken in chunks of RANK_KC. A's rows for one tile row are packed once per chunk, p
 *   after p (so a power-of-two lda cannot make them collide in the cache); B's elements are
 *   broadcast from where they are. Complex products keep a Re b and a Im b apart and combine
 *   them once at the end (a b = a Re b + swap(a Im b) (-1, +1)).
 * - Dot (op(A) = A^T or A^H, op(B) = B): each output is a dot product of a column of A and
 *   a column of B, both contiguous along k. A tile is 8 rows (f64) or 4 rows (c128) of C by
 *   3 columns; the rows of A are copied into a padded stack buffer, and the 24 vector sums
 *   of a tile are added across lanes by one shuffle tree per column, which leaves the 8
 *   results (4 complex) in order for one masked store.
 *
 * Measured against OpenBLAS 0.3.21 serial's dgemm/zgemm on LAPACK's shapes (probe, medians
 * of 31, Zen 4): f64 rank-32 updates 0.95-1.07x its time, dot products 0.72-0.97x; c128
 * 0.90-0.96x and (whole k steps unmasked) 0.90-0.92x. zgeqrf + zungqr at n = 256 went from
 * 1.11-1.17x OpenBLAS's time to 0.99-1.04x, dgeqrf + dorgqr from 1.09-1.12x to 1.00-1.02x.
 *
 * Contract: C = alpha op(A) op(B) + beta C with alpha != 0 and k > 0 (the caller handles
 * the others); beta 0 never reads C; elements of C outside the m x n block are never read
 * or written. Sums run in another order than BLIS's, so results differ in the last bits; a
 * given call gives the same bits every time on a given CPU. Pure, thread-safe. */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "linalg_int.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define TL_AVX512 __attribute__((target("avx512f")))
#define TL_TILE static inline __attribute__((always_inline))

/* k chunks: the rank-k kernels' packed rows (24 x 64 doubles, 12 KiB), the dot kernels'
 * rows of A (8 x 256 doubles or 4 x 128 complex, about 17 and 8 KiB with their padding). */
#define RANK_KC 64
#define DOT_KC_D 256
#define DOT_KC_Z 128
/* Row strides of the dot kernels' buffers: 64 bytes past a power of two, so that rows
 * fall in different cache sets. */
#define DOT_STRIDE_D (DOT_KC_D + 8)
#define DOT_STRIDE_Z (DOT_KC_Z + 4)

int tl__gemm_narrow_fits(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t esize) {
  /* Past these bounds BLIS's cache blocking wins (Zen 4, f64 and c128): a rank-k update
   * re-reads B for every 24-row block and C for every k chunk, a dot product re-reads C for
   * every k chunk; the bounds keep those in L2. */
  const int64_t c_bytes = m * n * esize;
  if (ta == 0) {
    if (k <= 2 * RANK_KC) return c_bytes <= ((int64_t)2 << 20);
    return n <= 128 && c_bytes <= ((int64_t)512 << 10);
  }
  return tb == 0 && n <= 128 && k <= 1024 && c_bytes <= ((int64_t)512 << 10);
}

#if TL_X86_KERNELS
/* r[q] = the sum of v[q]'s lanes, q < 8: pairs, then 128-bit lanes, then halves. */
TL_AVX512 TL_TILE __m512d sum_lanes8(const __m512d *v) {
  const __m512d s01 = _mm512_add_pd(_mm512_unpacklo_pd(v[0], v[1]), _mm512_unpackhi_pd(v[0], v[1]));
  const __m512d s23 = _mm512_add_pd(_mm512_unpacklo_pd(v[2], v[3]), _mm512_unpackhi_pd(v[2], v[3]));
  const __m512d s45 = _mm512_add_pd(_mm512_unpacklo_pd(v[4], v[5]), _mm512_unpackhi_pd(v[4], v[5]));
  const __m512d s67 = _mm512_add_pd(_mm512_unpacklo_pd(v[6], v[7]), _mm512_unpackhi_pd(v[6], v[7]));
  const __m512d u =
      _mm512_add_pd(_mm512_shuffle_f64x2(s01, s23, 0x88), _mm512_shuffle_f64x2(s01, s23, 0xdd));
  const __m512d w =
      _mm512_add_pd(_mm512_shuffle_f64x2(s45, s67, 0x88), _mm512_shuffle_f64x2(s45, s67, 0xdd));
  return _mm512_add_pd(_mm512_shuffle_f64x2(u, w, 0x88), _mm512_shuffle_f64x2(u, w, 0xdd));
}

/* The mask of the first `lanes` of 8. */
static inline __mmask8 first_lanes(int64_t lanes) { return (__mmask8)(0xffu >> (8 - lanes)); }

/* The rank-k kernels' pack: mv vectors of 8 doubles from each of k columns (column p at
 * src + p stride), p after p, the last vector through lm (its other lanes zero). */
TL_AVX512 static void pack_rows(double *ap, const double *src, int64_t stride, int64_t k, int mv,
                                __mmask8 lm) {
  for (int64_t p = 0; p < k; p++)
    for (int v = 0; v < mv; v++)
      _mm512_store_pd(ap + (p * mv + v) * 8,
                      _mm512_maskz_loadu_pd(v == mv - 1 ? lm : 0xff, src + p * stride + 8 * v));
}

/* ---- f64, rank-k ----------------------------------------------------------------------- */

/* C[0:8 MV, 0:NR] = alpha sum_p ap[p][:] B(p, j) + beta C; ap packed, 8 MV rows a step;
 * B(p, j) = b[p sbp + j sbj]. The last row vector stores through lm. */
TL_AVX512 TL_TILE void rank_tile_d(const int MV, const int NR, __mmask8 lm, int64_t k, double alpha,
                                   const double *ap, const double *b, int64_t sbp, int64_t sbj,
                                   double beta, double *c, int64_t ldc) {
  __m512d acc[3][8];
#pragma GCC unroll 8
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) acc[v][j] = _mm512_setzero_pd();
  for (int64_t p = 0; p < k; p++) {
    __m512d av[3];
    const double *bp = b + p * sbp;
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) av[v] = _mm512_load_pd(ap + (p * MV + v) * 8);
#pragma GCC unroll 8
    for (int j = 0; j < NR; j++) {
      const __m512d bj = _mm512_set1_pd(bp[j * sbj]);
#pragma GCC unroll 3
      for (int v = 0; v < MV; v++) acc[v][j] = _mm512_fmadd_pd(av[v], bj, acc[v][j]);
    }
  }
  const __m512d al = _mm512_set1_pd(alpha), be = _mm512_set1_pd(beta);
#pragma GCC unroll 8
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) {
      double *cp = c + j * ldc + 8 * v;
      const __mmask8 mask = v == MV - 1 ? lm : 0xff;
      __m512d x = _mm512_mul_pd(al, acc[v][j]);
      if (beta != 0) x = _mm512_fmadd_pd(be, _mm512_maskz_loadu_pd(mask, cp), x);
      _mm512_mask_storeu_pd(cp, mask, x);
    }
}

/* One case of the switches below: the tile for NR columns, NR a constant there. */
#define TL__RANK_CASE_D(MV, NR)                                       \
  case NR:                                                            \
    rank_tile_d(MV, NR, lm, k, alpha, ap, b, sbp, sbj, beta, c, ldc); \
    break;
#define TL__RANK_ROWS_D(MV)                                                                   \
  TL_AVX512 static void rank_rows##MV##_d(int nr, __mmask8 lm, int64_t k, double alpha,       \
                                          const double *ap, const double *b, int64_t sbp,     \
                                          int64_t sbj, double beta, double *c, int64_t ldc) { \
    switch (nr) {                                                                             \
      TL__RANK_CASE_D(MV, 8)                                                                  \
      TL__RANK_CASE_D(MV, 7)                                                                  \
      TL__RANK_CASE_D(MV, 6)                                                                  \
      TL__RANK_CASE_D(MV, 5)                                                                  \
      TL__RANK_CASE_D(MV, 4)                                                                  \
      TL__RANK_CASE_D(MV, 3)                                                                  \
      TL__RANK_CASE_D(MV, 2)                                                                  \
      default:                                                                                \
        rank_tile_d(MV, 1, lm, k, alpha, ap, b, sbp, sbj, beta, c, ldc);                      \
    }                                                                                         \
  }
TL__RANK_ROWS_D(1)
TL__RANK_ROWS_D(2)
TL__RANK_ROWS_D(3)

/* One chunk of k <= RANK_KC. */
TL_AVX512 static void rank_chunk_d(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                                   int64_t lda, const double *b, int64_t sbp, int64_t sbj,
                                   double beta, double *c, int64_t ldc) {
  double ap[RANK_KC * 24] __attribute__((aligned(64)));
  for (int64_t i = 0; i < m; i += 24) {
    const int64_t rows = m - i < 24 ? m - i : 24;
    const int mv = (int)((rows + 7) / 8);
    const __mmask8 lm = first_lanes(rows - 8 * (mv - 1));
    pack_rows(ap, a + i, lda, k, mv, lm);
    for (int64_t j = 0; j < n; j += 8) {
      const int nr = (int)(n - j < 8 ? n - j : 8);
      const double *bj = b + j * sbj;
      double *cij = c + i + j * ldc;
      if (mv == 3)
        rank_rows3_d(nr, lm, k, alpha, ap, bj, sbp, sbj, beta, cij, ldc);
      else if (mv == 2)
        rank_rows2_d(nr, lm, k, alpha, ap, bj, sbp, sbj, beta, cij, ldc);
      else
        rank_rows1_d(nr, lm, k, alpha, ap, bj, sbp, sbj, beta, cij, ldc);
    }
  }
}

/* ---- f64, dot ------------------------------------------------------------------------ */

/* One step of 8 along k (lanes past km zero) of dot_tile_d. */
TL_AVX512 TL_TILE void dot_step_d(const int NR, __mmask8 km, int64_t p, const double *ar,
                                  int64_t stride, const double *b, int64_t ldb, __m512d acc[3][8]) {
  __m512d bv[3];
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++) bv[j] = _mm512_maskz_loadu_pd(km, b + p + j * ldb);
#pragma GCC unroll 8
  for (int q = 0; q < 8; q++) {
    __m512d av = _mm512_maskz_loadu_pd(km, ar + q * stride + p);
    /* One load for the three products: as a memory operand of each, the compiler reads it
     * three times, which took the kernel from about 50 to 27 GFLOP/s. */
    __asm__("" : "+v"(av));
#pragma GCC unroll 3
    for (int j = 0; j < NR; j++) acc[j][q] = _mm512_fmadd_pd(av, bv[j], acc[j][q]);
  }
}

/* C[0:rows, 0:NR] = alpha sum_p ar[q][p] b[p + j ldb] + beta C, the 8 rows of A at ar with
 * stride `stride` (rows past `rows` zero, not stored). */
TL_AVX512 TL_TILE void dot_tile_d(const int NR, int rows, int64_t k, double alpha, const double *ar,
                                  int64_t stride, const double *b, int64_t ldb, double beta,
                                  double *c, int64_t ldc) {
  __m512d acc[3][8];
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 8
    for (int q = 0; q < 8; q++) acc[j][q] = _mm512_setzero_pd();
  /* Whole steps unmasked (a mask test per step cost about 5%), then the masked rest. */
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) dot_step_d(NR, 0xff, p, ar, stride, b, ldb, acc);
  if (p < k) dot_step_d(NR, first_lanes(k - p), p, ar, stride, b, ldb, acc);
  const __mmask8 rm = first_lanes(rows);
  const __m512d al = _mm512_set1_pd(alpha), be = _mm512_set1_pd(beta);
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++) {
    double *cp = c + j * ldc;
    __m512d x = _mm512_mul_pd(al, sum_lanes8(acc[j]));
    if (beta != 0) x = _mm512_fmadd_pd(be, _mm512_maskz_loadu_pd(rm, cp), x);
    _mm512_mask_storeu_pd(cp, rm, x);
  }
}

/* One chunk of k <= DOT_KC_D; A is k x m (row i of op(A) at a + i lda). */
TL_AVX512 static void dot_chunk_d(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                                  int64_t lda, const double *b, int64_t ldb, double beta, double *c,
                                  int64_t ldc) {
  double ar[8 * DOT_STRIDE_D] __attribute__((aligned(64)));
  for (int64_t i = 0; i < m; i += 8) {
    const int rows = (int)(m - i < 8 ? m - i : 8);
    for (int q = 0; q < 8; q++) {
      if (q < rows)
        memcpy(ar + q * DOT_STRIDE_D, a + (i + q) * lda, (size_t)k * sizeof(double));
      else
        memset(ar + q * DOT_STRIDE_D, 0, (size_t)k * sizeof(double));
    }
    for (int64_t j = 0; j < n; j += 3) {
      const double *bj = b + j * ldb;
      double *cij = c + i + j * ldc;
      if (n - j >= 3)
        dot_tile_d(3, rows, k, alpha, ar, DOT_STRIDE_D, bj, ldb, beta, cij, ldc);
      else if (n - j == 2)
        dot_tile_d(2, rows, k, alpha, ar, DOT_STRIDE_D, bj, ldb, beta, cij, ldc);
      else
        dot_tile_d(1, rows, k, alpha, ar, DOT_STRIDE_D, bj, ldb, beta, cij, ldc);
    }
  }
}

TL_AVX512 void tl__gemm_narrow_d(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                                 const double *a, int64_t lda, const double *b, int64_t ldb,
                                 double beta, double *c, int64_t ldc) {
  if (ta == 0) {
    /* B(p, j): b[p + j ldb] for 'N', b[j + p ldb] for 'T'. */
    const int64_t sbp = tb == 0 ? 1 : ldb, sbj = tb == 0 ? ldb : 1;
    for (int64_t p = 0; p < k; p += RANK_KC)
      rank_chunk_d(m, n, k - p < RANK_KC ? k - p : RANK_KC, alpha, a + p * lda, lda, b + p * sbp,
                   sbp, sbj, p == 0 ? beta : 1.0, c, ldc);
    return;
  }
  for (int64_t p = 0; p < k; p += DOT_KC_D)
    dot_chunk_d(m, n, k - p < DOT_KC_D ? k - p : DOT_KC_D, alpha, a + p, lda, b + p, ldb,
                p == 0 ? beta : 1.0, c, ldc);
}

/* ---- c128 (interleaved real and imaginary parts) ----------------------------------- */

/* x (re + i im), x four complex numbers, re and im broadcast. */
TL_AVX512 TL_TILE __m512d scale_z(__m512d x, __m512d re, __m512d im) {
  return _mm512_fmaddsub_pd(x, re, _mm512_mul_pd(_mm512_permute_pd(x, 0x55), im));
}

/* C[0:4 MV, 0:NR] = alpha sum_p ap[p][:] op(B(p, j)) + beta C, ap packed, 4 MV complex rows
 * a step; B(p, j) at b + 2 (p sbp + j sbj), conjugated when conjb. */
TL_AVX512 TL_TILE void rank_tile_z(const int MV, const int NR, __mmask8 lm, int64_t k, __m512d alr,
                                   __m512d ali, const double *ap, const double *b, int64_t sbp,
                                   int64_t sbj, int conjb, int beta0, __m512d ber, __m512d bei,
                                   double *c, int64_t ldc) {
  __m512d re[3][4], im[3][4]; /* a Re b and a Im b */
#pragma GCC unroll 4
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) re[v][j] = im[v][j] = _mm512_setzero_pd();
  for (int64_t p = 0; p < k; p++) {
    __m512d av[3];
    const double *bp = b + 2 * p * sbp;
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) av[v] = _mm512_load_pd(ap + (p * MV + v) * 8);
#pragma GCC unroll 4
    for (int j = 0; j < NR; j++) {
      const __m512d br = _mm512_set1_pd(bp[2 * j * sbj]);
      const __m512d bi = _mm512_set1_pd(bp[2 * j * sbj + 1]);
#pragma GCC unroll 3
      for (int v = 0; v < MV; v++) {
        re[v][j] = _mm512_fmadd_pd(av[v], br, re[v][j]);
        im[v][j] = _mm512_fmadd_pd(av[v], bi, im[v][j]);
      }
    }
  }
  const __m512d one = _mm512_set1_pd(1.0);
#pragma GCC unroll 4
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 3
    for (int v = 0; v < MV; v++) {
      double *cp = c + 2 * (j * ldc + 4 * v);
      const __mmask8 mask = v == MV - 1 ? lm : 0xff;
      /* a b = a Re b + swap(a Im b) (-1, +1); a conj(b) = a Re b - swap(a Im b) (-1, +1). */
      const __m512d sw = _mm512_permute_pd(im[v][j], 0x55);
      __m512d x =
          conjb ? _mm512_fmsubadd_pd(re[v][j], one, sw) : _mm512_fmaddsub_pd(re[v][j], one, sw);
      x = scale_z(x, alr, ali);
      if (!beta0) x = _mm512_add_pd(x, scale_z(_mm512_maskz_loadu_pd(mask, cp), ber, bei));
      _mm512_mask_storeu_pd(cp, mask, x);
    }
}

#define TL__RANK_CASE_Z(MV, NR)                                                            \
  case NR:                                                                                 \
    rank_tile_z(MV, NR, lm, k, alr, ali, ap, b, sbp, sbj, conjb, beta0, ber, bei, c, ldc); \
    break;
#define TL__RANK_ROWS_Z(MV)                                                                   \
  TL_AVX512 static void rank_rows##MV##_z(int nr, __mmask8 lm, int64_t k, __m512d alr,        \
                                          __m512d ali, const double *ap, const double *b,     \
                                          int64_t sbp, int64_t sbj, int conjb, int beta0,     \
                                          __m512d ber, __m512d bei, double *c, int64_t ldc) { \
    switch (nr) {                                                                             \
      TL__RANK_CASE_Z(MV, 4)                                                                  \
      TL__RANK_CASE_Z(MV, 3)                                                                  \
      TL__RANK_CASE_Z(MV, 2)                                                                  \
      default:                                                                                \
        rank_tile_z(MV, 1, lm, k, alr, ali, ap, b, sbp, sbj, conjb, beta0, ber, bei, c, ldc); \
    }                                                                                         \
  }
TL__RANK_ROWS_Z(1)
TL__RANK_ROWS_Z(2)
TL__RANK_ROWS_Z(3)

/* The scalars of a complex alpha or beta, broadcast. */
typedef struct {
  __m512d alr, ali, ber, bei;
  int beta0;
} scalars_z;

TL_AVX512 static scalars_z broadcast_z(const double *alpha, const double *beta) {
  scalars_z s;
  s.alr = _mm512_set1_pd(alpha[0]);
  s.ali = _mm512_set1_pd(alpha[1]);
  s.ber = _mm512_set1_pd(beta[0]);
  s.bei = _mm512_set1_pd(beta[1]);
  s.beta0 = beta[0] == 0 && beta[1] == 0;
  return s;
}

/* One chunk of k <= RANK_KC. */
TL_AVX512 static void rank_chunk_z(int64_t m, int64_t n, int64_t k, scalars_z s, const double *a,
                                   int64_t lda, const double *b, int64_t sbp, int64_t sbj,
                                   int conjb, double *c, int64_t ldc) {
  double ap[RANK_KC * 24] __attribute__((aligned(64)));
  for (int64_t i = 0; i < m; i += 12) {
    const int64_t rows = m - i < 12 ? m - i : 12;
    const int mv = (int)((rows + 3) / 4);
    const __mmask8 lm = first_lanes(2 * (rows - 4 * (mv - 1)));
    pack_rows(ap, a + 2 * i, 2 * lda, k, mv, lm);
    for (int64_t j = 0; j < n; j += 4) {
      const int nr = (int)(n - j < 4 ? n - j : 4);
      const double *bj = b + 2 * j * sbj;
      double *cij = c + 2 * (i + j * ldc);
      if (mv == 3)
        rank_rows3_z(nr, lm, k, s.alr, s.ali, ap, bj, sbp, sbj, conjb, s.beta0, s.ber, s.bei, cij,
                     ldc);
      else if (mv == 2)
        rank_rows2_z(nr, lm, k, s.alr, s.ali, ap, bj, sbp, sbj, conjb, s.beta0, s.ber, s.bei, cij,
                     ldc);
      else
        rank_rows1_z(nr, lm, k, s.alr, s.ali, ap, bj, sbp, sbj, conjb, s.beta0, s.ber, s.bei, cij,
                     ldc);
    }
  }
}

/* One step of 4 along k (lanes past km zero) of dot_tile_z. */
TL_AVX512 TL_TILE void dot_step_z(const int NR, __mmask8 km, int64_t p, const double *ar,
                                  int64_t stride, const double *b, int64_t ldb, __m512d acc[3][8]) {
  __m512d bv[3], bs[3];
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++) {
    bv[j] = _mm512_maskz_loadu_pd(km, b + 2 * (p + j * ldb));
    bs[j] = _mm512_permute_pd(bv[j], 0x55);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; q++) {
    __m512d av = _mm512_load_pd(ar + 2 * (q * stride + p));
    __asm__("" : "+v"(av)); /* one load for six products (see dot_step_d) */
#pragma GCC unroll 3
    for (int j = 0; j < NR; j++) {
      acc[j][2 * q] = _mm512_fmadd_pd(av, bv[j], acc[j][2 * q]);
      acc[j][2 * q + 1] = _mm512_fmadd_pd(av, bs[j], acc[j][2 * q + 1]);
    }
  }
}

/* C[0:rows, 0:NR] = alpha sum_p op(A[p, i]) B[p, j] + beta C: the 4 rows of A at ar with
 * stride `stride` complex, zero past `rows` and past k up to a multiple of 4; op conj when
 * conja. Per column and row it keeps the lane products a b = (Re a Re b, Im a Im b) and
 * a swap(b) = (Re a Im b, Im a Re b). */
TL_AVX512 TL_TILE void dot_tile_z(const int NR, int rows, int64_t k, scalars_z s, const double *ar,
                                  int64_t stride, const double *b, int64_t ldb, int conja,
                                  double *c, int64_t ldc) {
  __m512d acc[3][8]; /* per column: (a b, a swap(b)) for rows 0..3 */
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++)
#pragma GCC unroll 8
    for (int q = 0; q < 8; q++) acc[j][q] = _mm512_setzero_pd();
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) dot_step_z(NR, 0xff, p, ar, stride, b, ldb, acc);
  if (p < k) dot_step_z(NR, first_lanes(2 * (k - p)), p, ar, stride, b, ldb, acc);
  /* a b = (Re a Re b - Im a Im b) + i (Re a Im b + Im a Re b); conj(a) b = (Re a Re b +
   * Im a Im b) + i (Re a Im b - Im a Re b). Negating the odd lanes of the real sums (plain)
   * or the imaginary ones (conj) turns both into plain lane sums, and the tree leaves
   * (re, im) of rows 0..3 in order. */
  const __m512d odd_neg = _mm512_set_pd(-1, 1, -1, 1, -1, 1, -1, 1);
  const __mmask8 rm = first_lanes(2 * rows);
#pragma GCC unroll 3
  for (int j = 0; j < NR; j++) {
    __m512d v[8];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
      v[2 * q] = conja ? acc[j][2 * q] : _mm512_mul_pd(acc[j][2 * q], odd_neg);
      v[2 * q + 1] = conja ? _mm512_mul_pd(acc[j][2 * q + 1], odd_neg) : acc[j][2 * q + 1];
    }
    double *cp = c + 2 * j * ldc;
    __m512d x = scale_z(sum_lanes8(v), s.alr, s.ali);
    if (!s.beta0) x = _mm512_add_pd(x, scale_z(_mm512_maskz_loadu_pd(rm, cp), s.ber, s.bei));
    _mm512_mask_storeu_pd(cp, rm, x);
  }
}

/* One chunk of k <= DOT_KC_Z; A is k x m. */
TL_AVX512 static void dot_chunk_z(int64_t m, int64_t n, int64_t k, scalars_z s, const double *a,
                                  int64_t lda, int conja, const double *b, int64_t ldb, double *c,
                                  int64_t ldc) {
  double ar[2 * 4 * DOT_STRIDE_Z] __attribute__((aligned(64)));
  const int64_t padded = (k + 3) / 4 * 4;
  for (int64_t i = 0; i < m; i += 4) {
    const int rows = (int)(m - i < 4 ? m - i : 4);
    for (int q = 0; q < 4; q++) {
      double *row = ar + 2 * q * DOT_STRIDE_Z;
      if (q < rows)
        memcpy(row, a + 2 * (i + q) * lda, (size_t)k * 2 * sizeof(double));
      else
        memset(row, 0, (size_t)k * 2 * sizeof(double));
      memset(row + 2 * k, 0, (size_t)(padded - k) * 2 * sizeof(double));
    }
    for (int64_t j = 0; j < n; j += 3) {
      const double *bj = b + 2 * j * ldb;
      double *cij = c + 2 * (i + j * ldc);
      if (n - j >= 3)
        dot_tile_z(3, rows, k, s, ar, DOT_STRIDE_Z, bj, ldb, conja, cij, ldc);
      else if (n - j == 2)
        dot_tile_z(2, rows, k, s, ar, DOT_STRIDE_Z, bj, ldb, conja, cij, ldc);
      else
        dot_tile_z(1, rows, k, s, ar, DOT_STRIDE_Z, bj, ldb, conja, cij, ldc);
    }
  }
}

TL_AVX512 void tl__gemm_narrow_z(int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const double *alpha, const double *a, int64_t lda, const double *b,
                                 int64_t ldb, const double *beta, double *c, int64_t ldc) {
  static const double one[2] = {1.0, 0.0};
  const scalars_z first = broadcast_z(alpha, beta), later = broadcast_z(alpha, one);
  if (ta == 0) {
    const int64_t sbp = tb == 0 ? 1 : ldb, sbj = tb == 0 ? ldb : 1;
    for (int64_t p = 0; p < k; p += RANK_KC)
      rank_chunk_z(m, n, k - p < RANK_KC ? k - p : RANK_KC, p == 0 ? first : later, a + 2 * p * lda,
                   lda, b + 2 * p * sbp, sbp, sbj, tb == 2, c, ldc);
    return;
  }
  for (int64_t p = 0; p < k; p += DOT_KC_Z)
    dot_chunk_z(m, n, k - p < DOT_KC_Z ? k - p : DOT_KC_Z, p == 0 ? first : later, a + 2 * p, lda,
                ta == 2, b + 2 * p, ldb, c, ldc);
}
#else
/* No AVX-512 in this build (a non-x86 CPU): tl__blas_own_kernels(TL__BLAS_OWN_GEMM) is 0, so
 * LAPACK's products go to BLIS and these are not reached from there; they keep the contract in
 * plain loops, one sum per element in k order, for any caller that asks anyway. */
void tl__gemm_narrow_d(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                       double *c, int64_t ldc) {
  const int64_t sai = ta == 0 ? 1 : lda, sap = ta == 0 ? lda : 1;
  const int64_t sbp = tb == 0 ? 1 : ldb, sbj = tb == 0 ? ldb : 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += a[i * sai + p * sap] * b[p * sbp + j * sbj];
      double *cij = c + i + j * ldc;
      *cij = beta == 0 ? alpha * s : alpha * s + beta * *cij;
    }
}

void tl__gemm_narrow_z(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *alpha,
                       const double *a, int64_t lda, const double *b, int64_t ldb,
                       const double *beta, double *c, int64_t ldc) {
  const int64_t sai = ta == 0 ? 1 : lda, sap = ta == 0 ? lda : 1;
  const int64_t sbp = tb == 0 ? 1 : ldb, sbj = tb == 0 ? ldb : 1;
  const double ca = ta == 2 ? -1.0 : 1.0, cb = tb == 2 ? -1.0 : 1.0; /* conjugation signs */
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double sr = 0, si = 0;
      for (int64_t p = 0; p < k; p++) {
        const double *x = a + 2 * (i * sai + p * sap), *y = b + 2 * (p * sbp + j * sbj);
        const double xr = x[0], xi = ca * x[1], yr = y[0], yi = cb * y[1];
        sr += xr * yr - xi * yi;
        si += xr * yi + xi * yr;
      }
      double *cij = c + 2 * (i + j * ldc);
      const double tr = alpha[0] * sr - alpha[1] * si, ti = alpha[0] * si + alpha[1] * sr;
      if (beta[0] == 0 && beta[1] == 0) {
        cij[0] = tr, cij[1] = ti;
      } else {
        const double cr = cij[0], ci = cij[1];
        cij[0] = tr + beta[0] * cr - beta[1] * ci;
        cij[1] = ti + beta[0] * ci + beta[1] * cr;
      }
    }
}
#endif /* TL_X86_KERNELS */
