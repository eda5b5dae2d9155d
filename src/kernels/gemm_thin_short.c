/* src/kernels/gemm_thin_short.c: a batch of contiguous dots whose lane sums cost more than
 * their products (einsum's bi,bi->b with short rows, or float rows of up to a few hundred
 * elements), eight (doubles) or sixteen (floats) entries at a time.
 *
 * One AVX-512 dot (gemm_thin_core.c) of a few elements spends most of its time summing the
 * lanes of its register: a 65536 x 4 f32 batch took 17 ns an entry, 3x numpy's einsum. Here
 * each entry's register is built as the single dot builds it (dot_pd_512_as and
 * dot_ps_512_as, thin_dot512.h; for n <= 8 doubles or 16 floats, the same single masked step
 * with the mask computed once), and the lane sums of a whole group are done together:
 * the registers are transposed so that lane j belongs to entry j, and each addition of the
 * single dot's lane sum becomes one vertical addition.
 *
 * Invariant: entry j gets the bits tl__thin_dot gives it alone at AVX-512. The lane sums
 * keep the single dot's order: doubles ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
 * (hsum_pd_512; the last + a - for a complex real part), floats the even lanes in order and
 * the odd lanes in order, each from 0, then even + odd (hsum_ps_512). n counts reals (k, or
 * 2k for a complex dtype): at most 64 for doubles (longer ones gained in cache but lost in
 * the batched matrix-vector rows of gemm_thin.c: c128 at 4096 x 4 x 64 went from 0.74 to
 * 1.03 of numpy's time at 128), and 512 for floats, whose sixteen-lane sum is a longer chain
 * (256 f32 entries of 256: 9.4 against 10.1 us; past 512 the products dominate). With
 * `ahead` the dots read as the streaming single dot does (a prefetch 1 KiB ahead, loads in
 * halves off a cache line), for batches that stream from memory; the additions are the same.
 * Gathering each element position across the entries was tried first and dropped: f64 entries got
 * slower than the single dots. Pure core: never fails, allocates nothing. */
#include "kernels.h"
#if TL_X86_KERNELS
#include "thin_dot512.h"
#include "transpose512.h"
#endif

int tl__thin_dots_short_width(int isa, tl_dtype dtype, int64_t k) {
#if TL_X86_KERNELS
  if (isa < TL__ISA_AVX512 || k < 1) return 0;
  const int64_t n = tl_dtype_is_complex(dtype) ? 2 * k : k;
  if (dtype == TL_F64 || dtype == TL_C128) return n <= 64 ? 8 : 0;
  return n <= 512 ? 16 : 0;
#else
  (void)isa, (void)dtype, (void)k;
  return 0;
#endif
}

#if TL_X86_KERNELS
#define TL_AVX512 __attribute__((target("avx512f")))

/* A group's registers when the single dot takes one masked step (n reals fit one register,
 * `lanes` of them): dot_pd_512_as / dot_ps_512_as's tail, the mask set once for the group.
 * Each register gets fma(x, y, 0) + 0 (the second accumulator), and for a complex dtype the
 * same with y's pairs swapped (SWAP, in terms of y0). Expects n, cplx, x, sx, y, sy, same
 * and swapped in scope. */
#define TL__ONE_STEP(V, MASK, LANES, ZERO, LOAD, FMA, ADD, SWAP)  \
  do {                                                            \
    const V z = ZERO();                                           \
    const MASK m = (MASK)((1u << n) - 1u);                        \
    for (int j = 0; j < (LANES); j++) {                           \
      const V x0 = LOAD(m, x + j * sx), y0 = LOAD(m, y + j * sy); \
      same[j] = ADD(FMA(x0, y0, z), z);                           \
      swapped[j] = cplx ? ADD(FMA(x0, SWAP, z), z) : z;           \
    }                                                             \
  } while (0)

/* The lane totals of eight registers, lane j of the result from v[j]: ((l0 + l4) + (l2 +
 * l6)) + ((l1 + l5) + (l3 + l7)), the last + a - when `minus`. Halves first (lanes p and
 * p + 4), then 128-bit pieces (p and p + 2), then neighbours, two registers per step. */
static inline TL_AVX512 __m512d totals_pd(const __m512d *v, int minus) {
  __m512d s[4], t[2];
  for (int i = 0; i < 4; i++) /* entries 2i, 2i + 1: lanes p + (p + 4), p < 4 */
    s[i] = _mm512_add_pd(_mm512_shuffle_f64x2(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f64x2(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 2; i++) /* entries 4i .. 4i + 3: (even, odd) in each 128-bit piece */
    t[i] = _mm512_add_pd(_mm512_shuffle_f64x2(s[2 * i], s[2 * i + 1], 0x88),
                         _mm512_shuffle_f64x2(s[2 * i], s[2 * i + 1], 0xDD));
  const __m512d even = _mm512_unpacklo_pd(t[0], t[1]), odd = _mm512_unpackhi_pd(t[0], t[1]);
  const __m512d r = minus ? _mm512_sub_pd(even, odd) : _mm512_add_pd(even, odd);
  /* r holds entries 0, 4, 1, 5, 2, 6, 3, 7 */
  return _mm512_permutexvar_pd(_mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0), r);
}

static TL_AVX512 void short_dots_pd(int n, int cplx, int ahead, const double *x, int64_t sx,
                                    const double *y, int64_t sy, double *re, double *im) {
  __m512d same[8], swapped[8];
  if (n <= 8) {
    TL__ONE_STEP(__m512d, __mmask8, 8, _mm512_setzero_pd, _mm512_maskz_loadu_pd, _mm512_fmadd_pd,
                 _mm512_add_pd, _mm512_permute_pd(y0, 0x55));
  } else {
    for (int j = 0; j < 8; j++)
      if (ahead) /* the streaming form: loads in halves off a line, a prefetch */
        dot_pd_512(n, x + j * sx, y + j * sy, cplx, 1, &same[j], &swapped[j]);
      else
        dot_pd_512_as(n, x + j * sx, y + j * sy, cplx, 0, 0, &same[j], &swapped[j]);
  }
  _mm512_storeu_pd(re, totals_pd(same, cplx));
  if (cplx) _mm512_storeu_pd(im, totals_pd(swapped, 0));
}

/* The totals of sixteen product registers (entry j's in p[j]) over their first n lanes, lane
 * j of the result for entry j: the even lanes in order and the odd lanes in order, each from
 * 0, then even + odd (even - odd when `minus`), in float. Lanes at or past n hold +0, and
 * adding +0 to a sum that started from +0 changes nothing (such a sum is never -0), so they
 * are left out. */
static inline TL_AVX512 __m512 totals_ps(int n, const __m512 *p, int minus) {
  __m512 col[16];
  for (int i = 0; i < 8; i++) col[i] = _mm512_shuffle_f32x4(p[i], p[i + 8], 0x44);
  tl__transpose8x8x2_ps512(col);
  if (n > 8) {
    for (int i = 0; i < 8; i++) col[8 + i] = _mm512_shuffle_f32x4(p[i], p[i + 8], 0xEE);
    tl__transpose8x8x2_ps512(col + 8);
  }
  __m512 even = _mm512_setzero_ps(), odd = even;
  for (int l = 0; l < n; l += 2) even = _mm512_add_ps(even, col[l]);
  for (int l = 1; l < n; l += 2) odd = _mm512_add_ps(odd, col[l]);
  return minus ? _mm512_sub_ps(even, odd) : _mm512_add_ps(even, odd);
}

static TL_AVX512 void short_dots_ps(int n, int cplx, int ahead, const float *x, int64_t sx,
                                    const float *y, int64_t sy, double *re, double *im) {
  __m512 same[16], swapped[16];
  if (n <= 16) {
    TL__ONE_STEP(__m512, __mmask16, 16, _mm512_setzero_ps, _mm512_maskz_loadu_ps, _mm512_fmadd_ps,
                 _mm512_add_ps, _mm512_permute_ps(y0, 0xB1));
  } else {
    for (int j = 0; j < 16; j++)
      if (ahead) /* the streaming form, as for doubles */
        dot_ps_512(n, x + j * sx, y + j * sy, cplx, 1, &same[j], &swapped[j]);
      else
        dot_ps_512_as(n, x + j * sx, y + j * sy, cplx, 0, 0, &same[j], &swapped[j]);
    n = 16; /* every lane holds a sum now */
  }
  float part[16];
  _mm512_storeu_ps(part, totals_ps(n, same, cplx));
  for (int j = 0; j < 16; j++) re[j] = part[j];
  if (!cplx) return;
  _mm512_storeu_ps(part, totals_ps(n, swapped, 0));
  for (int j = 0; j < 16; j++) im[j] = part[j];
}
#endif /* TL_X86_KERNELS */

void tl__thin_dots_short(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t xs,
                         const void *y, int64_t ys, int ahead, double *re, double *im) {
#if TL_X86_KERNELS
  (void)isa;
  const int cplx = tl_dtype_is_complex(dtype);
  const int n = (int)(cplx ? 2 * k : k);
  const int64_t units = cplx ? 2 : 1; /* reals an element */
  if (dtype == TL_F64 || dtype == TL_C128)
    short_dots_pd(n, cplx, ahead, (const double *)x, xs * units, (const double *)y, ys * units, re,
                  im);
  else
    short_dots_ps(n, cplx, ahead, (const float *)x, xs * units, (const float *)y, ys * units, re,
                  im);
#else
  (void)isa, (void)dtype, (void)k, (void)x, (void)xs, (void)y, (void)ys, (void)ahead, (void)re,
      (void)im;
#endif
}
