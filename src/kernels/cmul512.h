/* src/kernels/cmul512.h: the written-out complex product in AVX-512 registers, shared by
 * the product tiles (product_tiles.c) and the grouped strided dots (gemm_thin_core.c).
 *
 * Each product has numpy's and the row kernels' bits: re = xr yr - xi yi and
 * im = xi yr + xr yi, each part two rounded products and one rounded sum (no fused
 * multiply-add; an addition commutes exactly, so the order of im's terms does not matter). */
#ifndef TL_KERNELS_CMUL512_H
#define TL_KERNELS_CMUL512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Four complex doubles, (re, im) pairs: even lanes p - q, odd lanes p + q. */
__attribute__((target("avx512f"), always_inline)) static inline __m512d tl__cmul_pd512(__m512d x,
                                                                                       __m512d y) {
  __m512d p = _mm512_mul_pd(x, _mm512_movedup_pd(y));
  __m512d q = _mm512_mul_pd(_mm512_permute_pd(x, 0x55), _mm512_permute_pd(y, 0xff));
  return _mm512_mask_sub_pd(_mm512_add_pd(p, q), 0x55, p, q);
}

/* Eight complex floats, the same way. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 tl__cmul_ps512(__m512 x,
                                                                                      __m512 y) {
  __m512 p = _mm512_mul_ps(x, _mm512_moveldup_ps(y));
  __m512 q = _mm512_mul_ps(_mm512_permute_ps(x, 0xB1), _mm512_movehdup_ps(y));
  return _mm512_mask_sub_ps(_mm512_add_ps(p, q), 0x5555, p, q);
}
#endif

#endif /* TL_KERNELS_CMUL512_H */
