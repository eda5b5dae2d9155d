/* src/kernels/transpose512.h: an 8 x 8 transpose of doubles in AVX-512 registers, shared by
 * the permute tiles (permute_core.c) and the grouped permute tiles (permute_group.c).
 *
 * With 512-bit registers one row of the block is one 64-byte cache line, so the block
 * writes each destination line with a single store: a streaming store then leaves the
 * write-combining buffer as a whole line. Bits are moved, never computed on. */
#ifndef TL_KERNELS_TRANSPOSE512_H
#define TL_KERNELS_TRANSPOSE512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* r[k] becomes column k of the 8 x 8 block whose rows were r[0..7]. _mm512_shuffle_f64x2
 * with 0x88 takes 128-bit lanes 0 and 2 of each operand, with 0xDD lanes 1 and 3. */
__attribute__((target("avx512f"), always_inline)) static inline void tl__transpose8x8_pd512(
    __m512d r[8]) {
  __m512d t[8], u[8];
  /* unrolled, so t and r stay in registers (gcc -O2 otherwise kept this loop, and the
   * arrays on the stack, inside product_tiles.c's kernels) */
  _Pragma("GCC unroll 4") for (int q = 0; q < 8; q += 2) {
    t[q] = _mm512_unpacklo_pd(r[q], r[q + 1]);     /* even columns of rows q, q+1 */
    t[q + 1] = _mm512_unpackhi_pd(r[q], r[q + 1]); /* odd columns */
  }
  /* u[0], u[1] (rows 0-3) and u[2], u[3] (rows 4-7) hold the even columns, u[4..7] the odd */
  u[0] = _mm512_shuffle_f64x2(t[0], t[2], 0x88);
  u[1] = _mm512_shuffle_f64x2(t[0], t[2], 0xDD);
  u[2] = _mm512_shuffle_f64x2(t[4], t[6], 0x88);
  u[3] = _mm512_shuffle_f64x2(t[4], t[6], 0xDD);
  u[4] = _mm512_shuffle_f64x2(t[1], t[3], 0x88);
  u[5] = _mm512_shuffle_f64x2(t[1], t[3], 0xDD);
  u[6] = _mm512_shuffle_f64x2(t[5], t[7], 0x88);
  u[7] = _mm512_shuffle_f64x2(t[5], t[7], 0xDD);
  r[0] = _mm512_shuffle_f64x2(u[0], u[2], 0x88);
  r[4] = _mm512_shuffle_f64x2(u[0], u[2], 0xDD);
  r[2] = _mm512_shuffle_f64x2(u[1], u[3], 0x88);
  r[6] = _mm512_shuffle_f64x2(u[1], u[3], 0xDD);
  r[1] = _mm512_shuffle_f64x2(u[4], u[6], 0x88);
  r[5] = _mm512_shuffle_f64x2(u[4], u[6], 0xDD);
  r[3] = _mm512_shuffle_f64x2(u[5], u[7], 0x88);
  r[7] = _mm512_shuffle_f64x2(u[5], u[7], 0xDD);
}

/* The same for a 4 x 4 block of 16-byte elements (one 128-bit lane each): r[0..3]. */
__attribute__((target("avx512f"), always_inline)) static inline void tl__transpose4x4_c512(
    __m512d r[4]) {
  __m512d u0 = _mm512_shuffle_f64x2(r[0], r[1], 0x88), u1 = _mm512_shuffle_f64x2(r[0], r[1], 0xDD);
  __m512d w0 = _mm512_shuffle_f64x2(r[2], r[3], 0x88), w1 = _mm512_shuffle_f64x2(r[2], r[3], 0xDD);
  r[0] = _mm512_shuffle_f64x2(u0, w0, 0x88);
  r[1] = _mm512_shuffle_f64x2(u1, w1, 0x88);
  r[2] = _mm512_shuffle_f64x2(u0, w0, 0xDD);
  r[3] = _mm512_shuffle_f64x2(u1, w1, 0xDD);
}
#endif

#endif
