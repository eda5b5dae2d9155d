/* src/kernels/transpose512.h: transposes of one cache line by one cache line in AVX-512
 * registers (8 x 8 doubles, 4 x 4 complex doubles, 16 x 16 floats, and two 8 x 8 blocks of
 * floats side by side), shared by the permute tiles (permute_core.c), the grouped permute
 * tiles (permute_group.c), the product tiles (product_tiles.c), and the kernels that turn
 * rows into one register per position so a sum along each row becomes vertical additions
 * (the short row sums in reduce_sums.c, the short dots in gemm_thin_short.c).
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

/* r[k] becomes column k of the 16 x 16 block of floats whose rows were r[0..15]: the
 * 4 x 4 blocks of each 128-bit lane transposed by unpacks, then each group of four
 * registers' lanes by the 4 x 4 lane transpose above (lane shuffles move bits of any
 * type). */
__attribute__((target("avx512f"), always_inline)) static inline void tl__transpose16x16_ps512(
    __m512 r[16]) {
  __m512 t[16];
  _Pragma("GCC unroll 8") for (int q = 0; q < 16; q += 2) {
    t[q] = _mm512_unpacklo_ps(r[q], r[q + 1]);
    t[q + 1] = _mm512_unpackhi_ps(r[q], r[q + 1]);
  }
  /* u[4g + c], lane l: column 4l + c of rows 4g..4g+3 */
  __m512d u[16];
  _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++) {
    __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_unpacklo_pd(t0, t2);
    u[4 * g + 1] = _mm512_unpackhi_pd(t0, t2);
    u[4 * g + 2] = _mm512_unpacklo_pd(t1, t3);
    u[4 * g + 3] = _mm512_unpackhi_pd(t1, t3);
  }
  _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
    __m512d lanes[4] = {u[c], u[4 + c], u[8 + c], u[12 + c]};
    tl__transpose4x4_c512(lanes);
    _Pragma("GCC unroll 4") for (int l = 0; l < 4; l++) r[4 * l + c] = _mm512_castpd_ps(lanes[l]);
  }
}

/* Two 8 x 8 blocks of floats, one in each 256-bit half of r[0..7]: r[k] becomes column k of
 * both (the low block's in its low half, the high block's in its high half). Pairs, then
 * quads (within 128-bit lanes), then 128-bit lanes across two registers. */
__attribute__((target("avx512f"), always_inline)) static inline void tl__transpose8x8x2_ps512(
    __m512 r[8]) {
  __m512 t[8], u[8];
  _Pragma("GCC unroll 4") for (int q = 0; q < 8; q += 2) {
    t[q] = _mm512_unpacklo_ps(r[q], r[q + 1]);
    t[q + 1] = _mm512_unpackhi_ps(r[q], r[q + 1]);
  }
  _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) { /* rows 4h..4h+3: u[4h + c] has c, c + 4 */
    const __m512 *v = t + 4 * h;
    u[4 * h + 0] = _mm512_shuffle_ps(v[0], v[2], 0x44);
    u[4 * h + 1] = _mm512_shuffle_ps(v[0], v[2], 0xEE);
    u[4 * h + 2] = _mm512_shuffle_ps(v[1], v[3], 0x44);
    u[4 * h + 3] = _mm512_shuffle_ps(v[1], v[3], 0xEE);
  }
  /* column c: the first 128-bit lane of each half of u[c] and u[4 + c]; column c + 4: the
   * second */
  const __m512i first = _mm512_set_epi32(27, 26, 25, 24, 11, 10, 9, 8, 19, 18, 17, 16, 3, 2, 1, 0);
  const __m512i second =
      _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 23, 22, 21, 20, 7, 6, 5, 4);
  _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
    r[c] = _mm512_permutex2var_ps(u[c], first, u[4 + c]);
    r[c + 4] = _mm512_permutex2var_ps(u[c], second, u[4 + c]);
  }
}
#endif

#endif
