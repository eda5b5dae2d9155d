/* src/kernels/thin_dot512.h: the AVX-512 contiguous dot's loop (dot_pd_512_as, dot_ps_512_as)
 * and its helpers, shared by the thin GEMM's inner loops (gemm_thin_core.c) and the batch of
 * short dots (gemm_thin_short.c), which must make the same additions an entry as the single
 * dot. Include it only where TL_X86_KERNELS holds. */
#ifndef TL_KERNELS_THIN_DOT512_H
#define TL_KERNELS_THIN_DOT512_H

#include <immintrin.h>
#include <stdint.h>

#define TL__DOT512 __attribute__((target("avx512f")))

static inline TL__DOT512 __mmask8 mask8(int64_t left) {
  return (__mmask8)(left >= 8 ? 0xff : (1u << left) - 1u);
}
static inline TL__DOT512 __mmask16 mask16(int64_t left) {
  return (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1u);
}

/* A vector of 8 doubles (16 floats) from p as two 32-byte halves when `split`, else as one
 * 64-byte load. The halves give the same register, so the arithmetic is the same either
 * way; they matter for speed only: a 64-byte load from an address off a 64-byte boundary
 * straddles two cache lines, every one of them, and on a stream larger than the cache (a
 * batched dot of c128 rows, whose arrays numpy's allocator places 16 bytes past a page) that
 * was the main cost of the dot; a half straddles at most one line in two. */
static inline TL__DOT512 __m512d load_pd_512(const double *p, int split) {
  if (!split) return _mm512_loadu_pd(p);
  return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(p)), _mm256_loadu_pd(p + 4), 1);
}
static inline TL__DOT512 __m512 load_ps_512(const float *p, int split) {
  if (!split) return _mm512_loadu_ps(p);
  __m512d low = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(p)));
  return _mm512_castpd_ps(_mm512_insertf64x4(low, _mm256_castps_pd(_mm256_loadu_ps(p + 8)), 1));
}

/* 1 when x or y is not on a 64-byte boundary (the loops below then load in halves). */
static inline int off_line(const void *x, const void *y) {
  return (((uintptr_t)x | (uintptr_t)y) & 63u) != 0;
}

/* Two 64-byte lines of each operand 1 KiB past p and q (prefetches never fault, past an
 * operand's end included). */
static inline TL__DOT512 void prefetch_ahead_512(const void *p, const void *q) {
  _mm_prefetch((const char *)p + 1024, _MM_HINT_T0);
  _mm_prefetch((const char *)p + 1088, _MM_HINT_T0);
  _mm_prefetch((const char *)q + 1024, _MM_HINT_T0);
  _mm_prefetch((const char *)q + 1088, _MM_HINT_T0);
}

/* Sums of x[i] y[i] over n reals into *same and, for complex data (cplx), of x[i] y[i ^ 1]
 * (y's pairs swapped) into *swapped, in one pass: two vector accumulators each, a masked
 * tail, combined in a fixed order. `split` picks the loads only (load_pd_512), and `ahead`
 * adds a software prefetch 1 KiB ahead of both operands (for runs that stream from memory);
 * neither changes an addition, and the compiler makes one loop per value (the callers pass
 * constants). */
static inline __attribute__((always_inline)) TL__DOT512 void dot_pd_512_as(
    int64_t n, const double *x, const double *y, int cplx, int split, int ahead, __m512d *same,
    __m512d *swapped) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (ahead) prefetch_ahead_512(x + i, y + i);
    __m512d x0 = load_pd_512(x + i, split), x1 = load_pd_512(x + i + 8, split);
    __m512d y0 = load_pd_512(y + i, split), y1 = load_pd_512(y + i + 8, split);
    a0 = _mm512_fmadd_pd(x0, y0, a0);
    a1 = _mm512_fmadd_pd(x1, y1, a1);
    if (cplx) {
      b0 = _mm512_fmadd_pd(x0, _mm512_permute_pd(y0, 0x55), b0);
      b1 = _mm512_fmadd_pd(x1, _mm512_permute_pd(y1, 0x55), b1);
    }
  }
  for (; i < n; i += 8) {
    __mmask8 m = mask8(n - i);
    __m512d x0 = _mm512_maskz_loadu_pd(m, x + i), y0 = _mm512_maskz_loadu_pd(m, y + i);
    a0 = _mm512_fmadd_pd(x0, y0, a0);
    if (cplx) b0 = _mm512_fmadd_pd(x0, _mm512_permute_pd(y0, 0x55), b0);
  }
  *same = _mm512_add_pd(a0, a1);
  *swapped = _mm512_add_pd(b0, b1);
}

/* The dot's entry: one loop per value of split and ahead (constants to the loop, so each
 * becomes its own loop). */
#define TL__DOT_512_ENTRY(NAME, AS, T, V)                                                    \
  static inline TL__DOT512 void NAME(int64_t n, const T *x, const T *y, int cplx, int ahead, \
                                     V *same, V *swapped) {                                  \
    const int split = off_line(x, y);                                                        \
    if (ahead && split)                                                                      \
      AS(n, x, y, cplx, 1, 1, same, swapped);                                                \
    else if (ahead)                                                                          \
      AS(n, x, y, cplx, 0, 1, same, swapped);                                                \
    else if (split)                                                                          \
      AS(n, x, y, cplx, 1, 0, same, swapped);                                                \
    else                                                                                     \
      AS(n, x, y, cplx, 0, 0, same, swapped);                                                \
  }
TL__DOT_512_ENTRY(dot_pd_512, dot_pd_512_as, double, __m512d)

static inline __attribute__((always_inline)) TL__DOT512 void dot_ps_512_as(
    int64_t n, const float *x, const float *y, int cplx, int split, int ahead, __m512 *same,
    __m512 *swapped) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (ahead) prefetch_ahead_512(x + i, y + i);
    __m512 x0 = load_ps_512(x + i, split), x1 = load_ps_512(x + i + 16, split);
    __m512 y0 = load_ps_512(y + i, split), y1 = load_ps_512(y + i + 16, split);
    a0 = _mm512_fmadd_ps(x0, y0, a0);
    a1 = _mm512_fmadd_ps(x1, y1, a1);
    if (cplx) {
      b0 = _mm512_fmadd_ps(x0, _mm512_permute_ps(y0, 0xB1), b0);
      b1 = _mm512_fmadd_ps(x1, _mm512_permute_ps(y1, 0xB1), b1);
    }
  }
  for (; i < n; i += 16) {
    __mmask16 m = mask16(n - i);
    __m512 x0 = _mm512_maskz_loadu_ps(m, x + i), y0 = _mm512_maskz_loadu_ps(m, y + i);
    a0 = _mm512_fmadd_ps(x0, y0, a0);
    if (cplx) b0 = _mm512_fmadd_ps(x0, _mm512_permute_ps(y0, 0xB1), b0);
  }
  *same = _mm512_add_ps(a0, a1);
  *swapped = _mm512_add_ps(b0, b1);
}

TL__DOT_512_ENTRY(dot_ps_512, dot_ps_512_as, float, __m512)

#endif /* TL_KERNELS_THIN_DOT512_H */
