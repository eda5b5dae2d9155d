/* src/kernels/elementwise_complex.c: the complex double product o[i] = a[i] * b[i] over
 * contiguous rows, either input possibly one broadcast value (stride 0), at each
 * instruction set. The row kernel of tl_mul and of einsum's products (elementwise_core.c's
 * mul_k_c128) sends its unit-stride and broadcast branches here; gcc and clang compiled the
 * written-out product to one complex per SSE2 instruction pair.
 *
 * Bits: every path computes re = ar * br - ai * bi and im = ai * br + ar * bi with two
 * rounded products and one rounded sum each (no fused multiply-add: the AVX paths multiply,
 * then combine with addsub), which is the portable formula's result bit for bit (its
 * imaginary part adds the same two products in the other order). So tl_mul and einsum
 * give the same bits on every instruction set. Pure core: never fails, allocates nothing. */
#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

static void mul_c128_portable(int64_t n, double *o, const double *a, int64_t sa, const double *b,
                              int64_t sb) {
  for (int64_t i = 0; i < n; i++) {
    const double ar = a[2 * i * sa], ai = a[2 * i * sa + 1];
    const double br = b[2 * i * sb], bi = b[2 * i * sb + 1];
    o[2 * i] = ar * br - ai * bi;
    o[2 * i + 1] = ar * bi + ai * br;
  }
}

#if TL_X86_KERNELS
#define TL_AVX2 __attribute__((target("avx2")))

/* Two complex values per vector: x * y with y's real parts duplicated, then x's pairs
 * swapped times y's imaginary parts duplicated, combined by addsub (even lanes subtract). */
static inline TL_AVX2 __m256d cmul_256(__m256d x, __m256d y) {
  __m256d yr = _mm256_movedup_pd(y), yi = _mm256_permute_pd(y, 0xf);
  __m256d xs = _mm256_permute_pd(x, 0x5);
  return _mm256_addsub_pd(_mm256_mul_pd(x, yr), _mm256_mul_pd(xs, yi));
}

static TL_AVX2 void mul_c128_256(int64_t n, double *o, const double *a, int64_t sa, const double *b,
                                 int64_t sb) {
  int64_t i = 0;
  if (sa == 1 && sb == 1) {
    for (; i + 2 <= n; i += 2)
      _mm256_storeu_pd(o + 2 * i, cmul_256(_mm256_loadu_pd(a + 2 * i), _mm256_loadu_pd(b + 2 * i)));
  } else if (sa == 1) { /* b broadcast */
    const __m256d y = _mm256_broadcast_pd((const __m128d *)b);
    for (; i + 2 <= n; i += 2) _mm256_storeu_pd(o + 2 * i, cmul_256(_mm256_loadu_pd(a + 2 * i), y));
  } else { /* a broadcast */
    const __m256d x = _mm256_broadcast_pd((const __m128d *)a);
    for (; i + 2 <= n; i += 2) _mm256_storeu_pd(o + 2 * i, cmul_256(x, _mm256_loadu_pd(b + 2 * i)));
  }
  /* The odd last element here, not by a call to mul_c128_portable: that function is built
   * without AVX, and its legacy SSE instructions after this function's 256-bit ones stalled
   * (a product with rows of 7 elements ran ten times slower than rows of 8). Same formula,
   * no fused multiply-add in this target either, so the same bits. */
  for (; i < n; i++) {
    const double ar = a[2 * i * sa], ai = a[2 * i * sa + 1];
    const double br = b[2 * i * sb], bi = b[2 * i * sb + 1];
    o[2 * i] = ar * br - ai * bi;
    o[2 * i + 1] = ar * bi + ai * br;
  }
}
#endif

void tl__mul_c128_rows(int isa, int64_t n, double *o, const double *a, int64_t sa, const double *b,
                       int64_t sb) {
#if TL_X86_KERNELS
  /* AVX-512 machines take the 256-bit kernel too: on this project's AMD EPYC a 512-bit
   * version (same bits) took 9.6 ms on a 2048^2 product where this one takes 5.2 ms and the
   * compiled scalar loop 6.7 ms (s.einsum("ij,ij->ij"), one thread, medians of 15). */
  if (isa >= TL__ISA_AVX2) {
    mul_c128_256(n, o, a, sa, b, sb);
    return;
  }
#else
  (void)isa;
#endif
  mul_c128_portable(n, o, a, sa, b, sb);
}
