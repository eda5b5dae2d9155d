/* src/kernels/reduce_sums.c: the unit-stride sums under the reduce core (reduce_core.c):
 * sixteen double accumulators over a run of doubles or floats, totalled pairwise, at each
 * instruction set.
 *
 * Accumulator k takes the elements whose index is k modulo 16, in index order; the last
 * n % 16 elements are then added one by one into accumulators 0, 1, ... A real run's total
 * is tree(s0..s7) + tree(s8..s15) and a complex run's (pairs laid out as two reals) is
 * tree of the even accumulators for the real part and of the odd ones for the imaginary
 * part, tree(p0..p7) being ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)). The AVX-512
 * paths hold the sixteen in two registers and the AVX2 paths in four, add the tail under a
 * mask (lanes without a tail element are left as they are) and total in registers, so
 * every path does the same additions in the same order and gives the same bits.
 *
 * Floats: each accumulator first adds its elements in float, sixteen at a time (a block is
 * 256 elements of the run, 16 to each accumulator; the last block may be partial), and
 * adds that float partial to its double once the block ends. Widening every float to
 * double (vcvtps2pd) bound the loop: a 256-float row took 23 ns against 16 ns for a plain
 * float loop and 12 ns for the same bytes of doubles (scratch probe, one core, the row in
 * L1); the partials take 12 ns. A float partial of 16 elements keeps the error of a long
 * sum near that of the double sums (16 roundings in float per element, not n).
 *
 * Sixteen accumulators, not eight: one register's chain of additions was the limit (an
 * f32 row sum of 1024^2 ran at 3.5-4x numpy's einsum with four scalar sums). Totals stay
 * in registers: storing the accumulators and reading them back one by one stalled store
 * forwarding once per run, which cost more than the sums of a 1024-element row.
 *
 * Short runs (tl__short_sums_*, for the reduce core's rows of at most 32 elements, or 64
 * floats) are added in order instead, runs side by side in registers at AVX-512 (the runs'
 * registers transposed, so a lane is a run): there the sixteen sums' setup and totals were
 * the cost.
 * Doubles add in order in double; floats in order in float within blocks of sixteen
 * elements, each block's sum added to a double total (the float partials above, in order).
 * Pure core: never fails, allocates nothing. */
#include <string.h>

#include "reduce_core.h"

#include "base/isa.h"
#if TL_X86_KERNELS
#include <immintrin.h>

#include "transpose512.h"

/* Every line of `rows` runs of `bytes` bytes, `ld` bytes apart, from p on, into the
 * first-level cache or (`far`) the second. */
static inline void prefetch_runs(const void *p, int rows, int64_t ld, int64_t bytes, int far) {
  for (int j = 0; j < rows; j++) {
    const char *run = (const char *)p + j * ld;
    for (int64_t o = 0; o < bytes; o += 64)
      if (far)
        _mm_prefetch(run + o, _MM_HINT_T1);
      else
        _mm_prefetch(run + o, _MM_HINT_T0);
    if (far) /* a run that starts inside a line ends in one more */
      _mm_prefetch(run + bytes - 1, _MM_HINT_T1);
    else
      _mm_prefetch(run + bytes - 1, _MM_HINT_T0);
  }
}

/* Groups ahead that the doubles' long runs (more than 32 doubles: complex runs of 17 to 32)
 * prefetch into the second-level cache when their rows stream from memory. */
#define TL__SHORT_FAR_GROUPS 4
#endif

static inline double tree8(double p0, double p1, double p2, double p3, double p4, double p5,
                           double p6, double p7) {
  return ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));
}

/* Sixteen named accumulators (an array, or the caller's s, went through memory on every
 * addition). */
#define TL__SUM16_PORTABLE(NAME, T)                                                              \
  static void NAME(const T *x, int64_t n, int pairs, double *re, double *im) {                   \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;                       \
    double s8 = 0, s9 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0, s14 = 0, s15 = 0;                 \
    int64_t i = 0;                                                                               \
    for (; i + 16 <= n; i += 16) {                                                               \
      s0 += (double)x[i], s1 += (double)x[i + 1], s2 += (double)x[i + 2];                        \
      s3 += (double)x[i + 3], s4 += (double)x[i + 4], s5 += (double)x[i + 5];                    \
      s6 += (double)x[i + 6], s7 += (double)x[i + 7], s8 += (double)x[i + 8];                    \
      s9 += (double)x[i + 9], s10 += (double)x[i + 10], s11 += (double)x[i + 11];                \
      s12 += (double)x[i + 12], s13 += (double)x[i + 13], s14 += (double)x[i + 14];              \
      s15 += (double)x[i + 15];                                                                  \
    }                                                                                            \
    double *acc[16] = {&s0, &s1, &s2,  &s3,  &s4,  &s5,  &s6,  &s7,                              \
                       &s8, &s9, &s10, &s11, &s12, &s13, &s14, &s15};                            \
    for (int k = 0; i < n; i++, k++) *acc[k] += (double)x[i];                                    \
    if (pairs) {                                                                                 \
      *re = tree8(s0, s2, s4, s6, s8, s10, s12, s14);                                            \
      *im = tree8(s1, s3, s5, s7, s9, s11, s13, s15);                                            \
    } else {                                                                                     \
      *re = tree8(s0, s1, s2, s3, s4, s5, s6, s7) + tree8(s8, s9, s10, s11, s12, s13, s14, s15); \
      *im = 0;                                                                                   \
    }                                                                                            \
  }
TL__SUM16_PORTABLE(sum16_f64_portable, double)

/* The totals of sixteen accumulators in tree8's order (pairs: even into re, odd into im). */
static void total16(const double *s, int pairs, double *re, double *im) {
  if (pairs) {
    *re = tree8(s[0], s[2], s[4], s[6], s[8], s[10], s[12], s[14]);
    *im = tree8(s[1], s[3], s[5], s[7], s[9], s[11], s[13], s[15]);
  } else {
    *re = tree8(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]) +
          tree8(s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15]);
    *im = 0;
  }
}

/* Floats: float partials per block of TL__SUM_F32_BLOCK elements (see the top). */
#define TL__SUM_F32_BLOCK 256
static void sum16_f32_portable(const float *x, int64_t n, int pairs, double *re, double *im) {
  double s[16] = {0};
  for (int64_t b = 0; b < n; b += TL__SUM_F32_BLOCK) {
    const int64_t end = n - b < TL__SUM_F32_BLOCK ? n : b + TL__SUM_F32_BLOCK;
    float f[16] = {0};
    int64_t i = b;
    for (; i + 16 <= end; i += 16)
      for (int k = 0; k < 16; k++) f[k] += x[i + k];
    for (int k = 0; i < end; i++, k++) f[k] += x[i];
    for (int k = 0; k < 16; k++) s[k] += (double)f[k];
  }
  total16(s, pairs, re, im);
}

/* Strided runs (tl__sum16_strided_add_*): the same sixteen sums, reading real j of the run at
 * x[(j >> pairs) step + (j & pairs)]. Scalar at every level: sixteen independent chains
 * keep up with memory at the strides this serves, and gathers were slow (15-25 cycles each
 * on the project's Xeon VM). GROUP adds the sixteen reals from p on into A0..A15, one element
 * per accumulator or a pair per two with `pairs`; p ends on the last element read (never past
 * the run). */
#define TL__STRIDED_GROUP(A, p, step, pairs, CAST)                                           \
  do {                                                                                       \
    if (pairs) {                                                                             \
      A##0 += CAST p[0], A##1 += CAST p[1], p += step, A##2 += CAST p[0], A##3 += CAST p[1]; \
      p += step, A##4 += CAST p[0], A##5 += CAST p[1], p += step, A##6 += CAST p[0];         \
      A##7 += CAST p[1], p += step, A##8 += CAST p[0], A##9 += CAST p[1], p += step;         \
      A##10 += CAST p[0], A##11 += CAST p[1], p += step, A##12 += CAST p[0];                 \
      A##13 += CAST p[1], p += step, A##14 += CAST p[0], A##15 += CAST p[1];                 \
    } else {                                                                                 \
      A##0 += CAST p[0], p += step, A##1 += CAST p[0], p += step, A##2 += CAST p[0];         \
      p += step, A##3 += CAST p[0], p += step, A##4 += CAST p[0], p += step;                 \
      A##5 += CAST p[0], p += step, A##6 += CAST p[0], p += step, A##7 += CAST p[0];         \
      p += step, A##8 += CAST p[0], p += step, A##9 += CAST p[0], p += step;                 \
      A##10 += CAST p[0], p += step, A##11 += CAST p[0], p += step, A##12 += CAST p[0];      \
      p += step, A##13 += CAST p[0], p += step, A##14 += CAST p[0], p += step;               \
      A##15 += CAST p[0];                                                                    \
    }                                                                                        \
  } while (0)

/* The last `left` (< 16) reals from p into a[0], a[1], ... */
#define TL__STRIDED_TAIL(a, p, left, step, pairs, CAST) \
  for (int64_t k = 0; k < (left); k++) *a[k] += CAST p[(k >> (pairs)) * (step) + (k & (pairs))]

void tl__sum16_strided_add_f64(const double *x, int64_t n, int64_t step, int pairs, double *s) {
  double s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], s4 = s[4], s5 = s[5], s6 = s[6], s7 = s[7];
  double s8 = s[8], s9 = s[9], s10 = s[10], s11 = s[11], s12 = s[12], s13 = s[13], s14 = s[14],
         s15 = s[15];
  pairs = pairs != 0;
  const int64_t reals = n << pairs;
  int64_t i = 0;
  for (; i + 16 <= reals; i += 16) {
    const double *p = x + (i >> pairs) * step;
    TL__STRIDED_GROUP(s, p, step, pairs, (double));
  }
  if (i < reals) { /* p is then inside the run */
    const double *p = x + (i >> pairs) * step;
    double *a[16] = {&s0, &s1, &s2,  &s3,  &s4,  &s5,  &s6,  &s7,
                     &s8, &s9, &s10, &s11, &s12, &s13, &s14, &s15};
    TL__STRIDED_TAIL(a, p, reals - i, step, pairs, (double));
  }
  const double sums[16] = {s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15};
  memcpy(s, sums, sizeof sums);
}

void tl__sum16_total(const double *s, int pairs, double *re, double *im) {
  total16(s, pairs, re, im);
}

/* Floats: float partials of each block of TL__SUM_F32_BLOCK reals, as sum16_f32_portable. */
void tl__sum16_strided_add_f32(const float *x, int64_t n, int64_t step, int pairs, double *s) {
  pairs = pairs != 0;
  const int64_t reals = n << pairs;
  for (int64_t b = 0; b < reals; b += TL__SUM_F32_BLOCK) {
    const int64_t end = reals - b < TL__SUM_F32_BLOCK ? reals : b + TL__SUM_F32_BLOCK;
    float f0 = 0, f1 = 0, f2 = 0, f3 = 0, f4 = 0, f5 = 0, f6 = 0, f7 = 0;
    float f8 = 0, f9 = 0, f10 = 0, f11 = 0, f12 = 0, f13 = 0, f14 = 0, f15 = 0;
    int64_t i = b;
    for (; i + 16 <= end; i += 16) {
      const float *p = x + (i >> pairs) * step;
      TL__STRIDED_GROUP(f, p, step, pairs, );
    }
    if (i < end) { /* p is then inside the run */
      const float *p = x + (i >> pairs) * step;
      float *a[16] = {&f0, &f1, &f2,  &f3,  &f4,  &f5,  &f6,  &f7,
                      &f8, &f9, &f10, &f11, &f12, &f13, &f14, &f15};
      TL__STRIDED_TAIL(a, p, end - i, step, pairs, );
    }
    const float f[16] = {f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15};
    for (int k = 0; k < 16; k++) s[k] += (double)f[k];
  }
}

#if TL_X86_KERNELS
/* Each kernel starts on a 64-byte line: where a kernel's loops fall against the lines
 * moved with unrelated edits elsewhere in the library and cost up to a quarter of the
 * short sums' time (`ij->i` 131072x64 f32 0.84-1.02 against 1.03-1.27 of numpy's time, the
 * same code at a 16-byte offset). */
#define TL_AVX512 __attribute__((target("avx512f"), aligned(64)))
#define TL_AVX2 __attribute__((target("avx2"), aligned(64)))

/* Totals of a0 = s0..s7 and a1 = s8..s15 in registers, in tree8's order. */
static inline TL_AVX512 void total_512(__m512d a0, __m512d a1, int pairs, double *re, double *im) {
  if (pairs) {
    /* lanes 0, 1 + lanes 2, 3 (s0 + s2, s1 + s3), then the halves, then the registers */
    __m512d u0 = _mm512_add_pd(a0, _mm512_permutex_pd(a0, 0x4E));
    __m512d u1 = _mm512_add_pd(a1, _mm512_permutex_pd(a1, 0x4E));
    __m128d v0 = _mm_add_pd(_mm512_castpd512_pd128(u0),
                            _mm256_castpd256_pd128(_mm512_extractf64x4_pd(u0, 1)));
    __m128d v1 = _mm_add_pd(_mm512_castpd512_pd128(u1),
                            _mm256_castpd256_pd128(_mm512_extractf64x4_pd(u1, 1)));
    __m128d t = _mm_add_pd(v0, v1);
    *re = _mm_cvtsd_f64(t);
    *im = _mm_cvtsd_f64(_mm_unpackhi_pd(t, t));
    return;
  }
  /* neighbours, then pairs of them, then the halves */
  __m512d p0 = _mm512_add_pd(a0, _mm512_permute_pd(a0, 0x55));
  __m512d p1 = _mm512_add_pd(a1, _mm512_permute_pd(a1, 0x55));
  __m512d q0 = _mm512_add_pd(p0, _mm512_permutex_pd(p0, 0x4E));
  __m512d q1 = _mm512_add_pd(p1, _mm512_permutex_pd(p1, 0x4E));
  __m128d h0 =
      _mm_add_sd(_mm512_castpd512_pd128(q0), _mm256_castpd256_pd128(_mm512_extractf64x4_pd(q0, 1)));
  __m128d h1 =
      _mm_add_sd(_mm512_castpd512_pd128(q1), _mm256_castpd256_pd128(_mm512_extractf64x4_pd(q1, 1)));
  *re = _mm_cvtsd_f64(_mm_add_sd(h0, h1));
  *im = 0;
}

/* The AVX-512 double sums read whole aligned 64-byte lines. numpy hands over large arrays
 * 16 bytes past a line, where every unaligned 64-byte load straddles two lines (an f64 row
 * sum of a 1024^2 array took 157-161 us there, 127-130 us on a line boundary). A run that
 * starts `back` elements past a boundary is read from that boundary, two lines at a time,
 * so lane l of the first line holds an element whose index is l - back modulo 16 and lane l
 * of the second l + 8 - back: the sixteen accumulators are kept rotated by `back` and put
 * in order once, at the end (unrotate). Each still adds its elements in index order, so the
 * bits are those of the other paths. The first and last lines are read under masks, so no
 * lane outside the run is read. With `prefetch` (the reduce plan's choice, by the input's
 * size: reduce_core.h), a software prefetch 1 KiB ahead keeps the lines coming (a scratch
 * probe, one core, 1024 rows of 1024 doubles: 78-90 us with it, 98-102 us without). */
#define TL__SUM_PREFETCH 1024

static inline TL_AVX512 void prefetch_ahead(const void *p) {
  _mm_prefetch((const char *)p + TL__SUM_PREFETCH, _MM_HINT_T0);
  _mm_prefetch((const char *)p + TL__SUM_PREFETCH + 64, _MM_HINT_T0);
}

/* Lanes [lo, hi) of 16 (clamped to 0..16) as a mask. */
static inline unsigned lanes16(int64_t lo, int64_t hi) {
  if (lo < 0) lo = 0;
  if (hi > 16) hi = 16;
  return hi <= lo ? 0u : ((1u << hi) - 1u) & ~((1u << lo) - 1u);
}

/* r0 holds accumulators (l - back) mod 16 in lane l, r1 (l + 8 - back) mod 16: their
 * concatenation's element m is accumulator (m - back) mod 16. */
static inline TL_AVX512 void unrotate(__m512d *r0, __m512d *r1, int64_t back) {
  if (back == 0) return;
  const __m512i k = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i fifteen = _mm512_set1_epi64(15);
  const __m512i i0 = _mm512_and_si512(_mm512_add_epi64(k, _mm512_set1_epi64(back)), fifteen);
  const __m512i i1 = _mm512_and_si512(_mm512_add_epi64(k, _mm512_set1_epi64(back + 8)), fifteen);
  const __m512d a0 = _mm512_permutex2var_pd(*r0, i0, *r1);
  *r1 = _mm512_permutex2var_pd(*r0, i1, *r1);
  *r0 = a0;
}

/* Add the lanes of p's two lines selected by m (bits 0-7: the first line, 8-15: the
 * second); the others are neither read nor changed. */
static inline TL_AVX512 void add_lines_f64(const double *p, unsigned m, __m512d *r0, __m512d *r1) {
  const __mmask8 m0 = (__mmask8)(m & 0xFF), m1 = (__mmask8)(m >> 8);
  if (m0) *r0 = _mm512_mask_add_pd(*r0, m0, *r0, _mm512_maskz_load_pd(m0, p));
  if (m1) *r1 = _mm512_mask_add_pd(*r1, m1, *r1, _mm512_maskz_load_pd(m1, p + 8));
}

/* Sixteen elements from the aligned p into the rotated accumulators. */
static inline TL_AVX512 void add_full_f64(const double *p, __m512d *r0, __m512d *r1) {
  *r0 = _mm512_add_pd(*r0, _mm512_load_pd(p));
  *r1 = _mm512_add_pd(*r1, _mm512_load_pd(p + 8));
}

/* Runs not on element boundaries: unaligned loads in order, then the last n % 16 elements
 * under a mask (no rotation). */
static inline TL_AVX512 void add_unaligned_f64(const double *x, int64_t n, __m512d *a0,
                                               __m512d *a1) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    *a0 = _mm512_add_pd(*a0, _mm512_loadu_pd(x + i));
    *a1 = _mm512_add_pd(*a1, _mm512_loadu_pd(x + i + 8));
  }
  const unsigned m = lanes16(0, n - i);
  const __mmask8 m0 = (__mmask8)(m & 0xFF), m1 = (__mmask8)(m >> 8);
  *a0 = _mm512_mask_add_pd(*a0, m0, *a0, _mm512_maskz_loadu_pd(m0, x + i));
  *a1 = _mm512_mask_add_pd(*a1, m1, *a1, _mm512_maskz_loadu_pd(m1, x + i + 8));
}

/* The AVX-512 sum of a run of doubles, eight to a line: positions [back, end) of the lines
 * from the aligned p hold the run; the first group of sixteen (when the run starts inside a
 * line) and the last are added under masks (add_lines_f64), the others whole. */
static TL_AVX512 void sum16_f64_512(int prefetch, const double *x, int64_t n, int pairs, double *re,
                                    double *im) {
  __m512d r0 = _mm512_setzero_pd(), r1 = _mm512_setzero_pd();
  if ((uintptr_t)x % sizeof(double) != 0) {
    add_unaligned_f64(x, n, &r0, &r1);
    total_512(r0, r1, pairs, re, im);
    return;
  }
  const int64_t back = (int64_t)((uintptr_t)x / sizeof(double) % (64 / sizeof(double))),
                end = back + n;
  const double *p = x - back;
  int64_t q = 0;
  if (back > 0) { /* the first group, from the run's first element */
    if (n > 0) add_lines_f64(p, lanes16(back, end), &r0, &r1);
    q = 16;
  }
  if (prefetch) {
    /* prefetch 2: not past the run's end (the next run lies elsewhere) */
    const int64_t stop = prefetch == 2 ? end - TL__SUM_PREFETCH / (int64_t)sizeof(double) : end;
    for (; q + 16 <= stop; q += 16) {
      prefetch_ahead(p + q);
      add_full_f64(p + q, &r0, &r1);
    }
  }
  for (; q + 16 <= end; q += 16) add_full_f64(p + q, &r0, &r1);
  if (q < end) add_lines_f64(p + q, lanes16(0, end - q), &r0, &r1);
  unrotate(&r0, &r1, back);
  total_512(r0, r1, pairs, re, im);
}

/* The float partials (one register, lane k for accumulator k) added to the doubles. */
static inline TL_AVX512 void flush_512(__m512 f, __m512d *r0, __m512d *r1) {
  *r0 = _mm512_add_pd(*r0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
  *r1 = _mm512_add_pd(
      *r1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
}

/* Floats by blocks (see the top): unaligned loads in order, one float register of partials.
 * Its single chain of additions reads about 16 floats in 3 cycles, so loads that straddle
 * two lines cost nothing here, and the run is read as it lies, without rotation. */
static TL_AVX512 void sum16_f32_512(int prefetch, const float *x, int64_t n, int pairs, double *re,
                                    double *im) {
  __m512d r0 = _mm512_setzero_pd(), r1 = _mm512_setzero_pd();
  int64_t i = 0;
  /* prefetch 2: not past the run's end (the next run lies elsewhere) */
  const int64_t stop = prefetch == 2 ? n - TL__SUM_PREFETCH / (int64_t)sizeof(float) : n;
  if (prefetch)
    for (; i + TL__SUM_F32_BLOCK <= stop; i += TL__SUM_F32_BLOCK) {
      __m512 f = _mm512_setzero_ps();
      for (int b = 0; b < TL__SUM_F32_BLOCK; b += 16) {
        _mm_prefetch((const char *)(x + i + b) + TL__SUM_PREFETCH, _MM_HINT_T0);
        f = _mm512_add_ps(f, _mm512_loadu_ps(x + i + b));
      }
      flush_512(f, &r0, &r1);
    }
  for (; i + TL__SUM_F32_BLOCK <= n; i += TL__SUM_F32_BLOCK) {
    __m512 f = _mm512_setzero_ps();
    for (int b = 0; b < TL__SUM_F32_BLOCK; b += 16)
      f = _mm512_add_ps(f, _mm512_loadu_ps(x + i + b));
    flush_512(f, &r0, &r1);
  }
  if (i < n) {
    __m512 f = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) f = _mm512_add_ps(f, _mm512_loadu_ps(x + i));
    const __mmask16 m = (__mmask16)lanes16(0, n - i);
    f = _mm512_mask_add_ps(f, m, f, _mm512_maskz_loadu_ps(m, x + i));
    flush_512(f, &r0, &r1);
  }
  total_512(r0, r1, pairs, re, im);
}

/* For four runs (run r at x + r ld, n elements of es bytes each) being read at element i:
 * `lines` 64-byte lines of each TL__SUM_PREFETCH bytes ahead along the run, then on into
 * the same run of the next four (not past the run's end, which for rows apart is memory
 * nobody reads). */
static inline TL_AVX512 void prefetch_runs4(const void *x, size_t es, int64_t i, int64_t n,
                                            int64_t ld, int lines) {
  const int64_t t = i + TL__SUM_PREFETCH / (int64_t)es;
  const int64_t at = t < n ? t : 4 * ld + (t - n);
  const char *p = (const char *)x + at * (int64_t)es;
  for (int l = 0; l < lines; l++)
    for (int r = 0; r < 4; r++) _mm_prefetch(p + r * ld * (int64_t)es + 64 * l, _MM_HINT_T0);
}

/* The totals of four runs' accumulator pairs: out[r] (real runs) or out[2r], out[2r + 1]
 * (with pairs: the real and imaginary parts), as total_512 makes them. */
static inline TL_AVX512 void store_totals4(__m512d a0, __m512d b0, __m512d a1, __m512d b1,
                                           __m512d a2, __m512d b2, __m512d a3, __m512d b3,
                                           int pairs, double *out) {
  double im[4];
  const int w = pairs ? 2 : 1;
  total_512(a0, b0, pairs, &out[0], pairs ? &out[1] : &im[0]);
  total_512(a1, b1, pairs, &out[w], pairs ? &out[w + 1] : &im[1]);
  total_512(a2, b2, pairs, &out[2 * w], pairs ? &out[2 * w + 1] : &im[2]);
  total_512(a3, b3, pairs, &out[3 * w], pairs ? &out[3 * w + 1] : &im[3]);
}

/* A four-run sum with the prefetch as a constant of its loop (one loop each way). */
#define TL__ROWS4_512(NAME, AS, T)                                                       \
  static TL_AVX512 void NAME(int prefetch, const T *x, int64_t n, int64_t ld, int pairs, \
                             double *out) {                                              \
    if (prefetch)                                                                        \
      AS(1, x, n, ld, pairs, out);                                                       \
    else                                                                                 \
      AS(0, x, n, ld, pairs, out);                                                       \
  }

/* Four runs of n floats, ld elements apart, each summed as sum16_f32_512 sums one (the
 * same additions in the same order, so the same bits). A run of 256 floats is one block:
 * alone, its sixteen dependent additions and its totals left the core waiting; four runs
 * side by side keep four chains in flight. `prefetch` asks for each run's line
 * TL__SUM_PREFETCH bytes ahead, as sum16_f32_512 does (same bits either way). */
static inline __attribute__((always_inline)) TL_AVX512 void sum16_f32_512_rows4_as(
    int prefetch, const float *x, int64_t n, int64_t ld, int pairs, double *out) {
  /* Named registers: arrays of them, indexed in loops, went through the stack. */
  const float *x0 = x, *x1 = x + ld, *x2 = x + 2 * ld, *x3 = x + 3 * ld;
  __m512d a0 = _mm512_setzero_pd(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  int64_t i = 0;
  while (i < n) {
    __m512 f0 = _mm512_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
    const int64_t end = n - i < TL__SUM_F32_BLOCK ? n : i + TL__SUM_F32_BLOCK;
    for (; i + 16 <= end; i += 16) {
      if (prefetch) prefetch_runs4(x, sizeof(float), i, n, ld, 1);
      f0 = _mm512_add_ps(f0, _mm512_loadu_ps(x0 + i));
      f1 = _mm512_add_ps(f1, _mm512_loadu_ps(x1 + i));
      f2 = _mm512_add_ps(f2, _mm512_loadu_ps(x2 + i));
      f3 = _mm512_add_ps(f3, _mm512_loadu_ps(x3 + i));
    }
    if (i < end) { /* the run's last, partial group (end == n here) */
      const __mmask16 m = (__mmask16)lanes16(0, end - i);
      f0 = _mm512_mask_add_ps(f0, m, f0, _mm512_maskz_loadu_ps(m, x0 + i));
      f1 = _mm512_mask_add_ps(f1, m, f1, _mm512_maskz_loadu_ps(m, x1 + i));
      f2 = _mm512_mask_add_ps(f2, m, f2, _mm512_maskz_loadu_ps(m, x2 + i));
      f3 = _mm512_mask_add_ps(f3, m, f3, _mm512_maskz_loadu_ps(m, x3 + i));
      i = end;
    }
    flush_512(f0, &a0, &b0);
    flush_512(f1, &a1, &b1);
    flush_512(f2, &a2, &b2);
    flush_512(f3, &a3, &b3);
  }
  store_totals4(a0, b0, a1, b1, a2, b2, a3, b3, pairs, out);
}
TL__ROWS4_512(sum16_f32_512_rows4, sum16_f32_512_rows4_as, float)

/* Four runs of n doubles, ld elements apart, each summed into its sixteen accumulators as
 * sum16_f64_512 sums one (the same additions in the same order, so the same bits), with
 * plain unaligned loads as add_unaligned_f64 makes them: for runs of a few lines the
 * one-run sum's setup, single chain per register pair and totals were the cost (rows of 60
 * doubles at 1.6x numpy's time). `prefetch` as in the float twin above. */
static inline __attribute__((always_inline)) TL_AVX512 void sum16_f64_512_rows4_as(
    int prefetch, const double *x, int64_t n, int64_t ld, int pairs, double *out) {
  const double *x0 = x, *x1 = x + ld, *x2 = x + 2 * ld, *x3 = x + 3 * ld;
  __m512d a0 = _mm512_setzero_pd(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (prefetch) prefetch_runs4(x, sizeof(double), i, n, ld, 2);
    a0 = _mm512_add_pd(a0, _mm512_loadu_pd(x0 + i));
    b0 = _mm512_add_pd(b0, _mm512_loadu_pd(x0 + i + 8));
    a1 = _mm512_add_pd(a1, _mm512_loadu_pd(x1 + i));
    b1 = _mm512_add_pd(b1, _mm512_loadu_pd(x1 + i + 8));
    a2 = _mm512_add_pd(a2, _mm512_loadu_pd(x2 + i));
    b2 = _mm512_add_pd(b2, _mm512_loadu_pd(x2 + i + 8));
    a3 = _mm512_add_pd(a3, _mm512_loadu_pd(x3 + i));
    b3 = _mm512_add_pd(b3, _mm512_loadu_pd(x3 + i + 8));
  }
  if (i < n) { /* the last n % 16 under masks, into accumulators 0, 1, ... */
    const unsigned m = lanes16(0, n - i);
    const __mmask8 m0 = (__mmask8)(m & 0xFF), m1 = (__mmask8)(m >> 8);
    a0 = _mm512_mask_add_pd(a0, m0, a0, _mm512_maskz_loadu_pd(m0, x0 + i));
    b0 = _mm512_mask_add_pd(b0, m1, b0, _mm512_maskz_loadu_pd(m1, x0 + i + 8));
    a1 = _mm512_mask_add_pd(a1, m0, a1, _mm512_maskz_loadu_pd(m0, x1 + i));
    b1 = _mm512_mask_add_pd(b1, m1, b1, _mm512_maskz_loadu_pd(m1, x1 + i + 8));
    a2 = _mm512_mask_add_pd(a2, m0, a2, _mm512_maskz_loadu_pd(m0, x2 + i));
    b2 = _mm512_mask_add_pd(b2, m1, b2, _mm512_maskz_loadu_pd(m1, x2 + i + 8));
    a3 = _mm512_mask_add_pd(a3, m0, a3, _mm512_maskz_loadu_pd(m0, x3 + i));
    b3 = _mm512_mask_add_pd(b3, m1, b3, _mm512_maskz_loadu_pd(m1, x3 + i + 8));
  }
  store_totals4(a0, b0, a1, b1, a2, b2, a3, b3, pairs, out);
}
TL__ROWS4_512(sum16_f64_512_rows4, sum16_f64_512_rows4_as, double)

/* a[0] = s0..s3, ..., a[3] = s12..s15. */
static inline TL_AVX2 void total_256(__m256d a0, __m256d a1, __m256d a2, __m256d a3, int pairs,
                                     double *re, double *im) {
  if (pairs) { /* per register (s0 + s2, s1 + s3), then tree8's pairs of those */
    __m128d v0 = _mm_add_pd(_mm256_castpd256_pd128(a0), _mm256_extractf128_pd(a0, 1));
    __m128d v1 = _mm_add_pd(_mm256_castpd256_pd128(a1), _mm256_extractf128_pd(a1, 1));
    __m128d v2 = _mm_add_pd(_mm256_castpd256_pd128(a2), _mm256_extractf128_pd(a2, 1));
    __m128d v3 = _mm_add_pd(_mm256_castpd256_pd128(a3), _mm256_extractf128_pd(a3, 1));
    __m128d t = _mm_add_pd(_mm_add_pd(v0, v1), _mm_add_pd(v2, v3));
    *re = _mm_cvtsd_f64(t);
    *im = _mm_cvtsd_f64(_mm_unpackhi_pd(t, t));
    return;
  }
  __m256d p0 = _mm256_add_pd(a0, _mm256_permute_pd(a0, 0x5));
  __m256d p1 = _mm256_add_pd(a1, _mm256_permute_pd(a1, 0x5));
  __m256d p2 = _mm256_add_pd(a2, _mm256_permute_pd(a2, 0x5));
  __m256d p3 = _mm256_add_pd(a3, _mm256_permute_pd(a3, 0x5));
  __m128d h0 = _mm_add_sd(_mm256_castpd256_pd128(p0), _mm256_extractf128_pd(p0, 1));
  __m128d h1 = _mm_add_sd(_mm256_castpd256_pd128(p1), _mm256_extractf128_pd(p1, 1));
  __m128d h2 = _mm_add_sd(_mm256_castpd256_pd128(p2), _mm256_extractf128_pd(p2, 1));
  __m128d h3 = _mm_add_sd(_mm256_castpd256_pd128(p3), _mm256_extractf128_pd(p3, 1));
  *re = _mm_cvtsd_f64(_mm_add_sd(_mm_add_sd(h0, h1), _mm_add_sd(h2, h3)));
  *im = 0;
}

#define TL__SUM16_256(NAME, T, LOAD4)                                                  \
  static TL_AVX2 void NAME(const T *x, int64_t n, int pairs, double *re, double *im) { \
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;                       \
    int64_t i = 0;                                                                     \
    for (; i + 16 <= n; i += 16) {                                                     \
      a0 = _mm256_add_pd(a0, LOAD4(x + i));                                            \
      a1 = _mm256_add_pd(a1, LOAD4(x + i + 4));                                        \
      a2 = _mm256_add_pd(a2, LOAD4(x + i + 8));                                        \
      a3 = _mm256_add_pd(a3, LOAD4(x + i + 12));                                       \
    }                                                                                  \
    if (i < n) { /* the tail through memory: at most once per run */                   \
      double s[16];                                                                    \
      _mm256_storeu_pd(s, a0);                                                         \
      _mm256_storeu_pd(s + 4, a1);                                                     \
      _mm256_storeu_pd(s + 8, a2);                                                     \
      _mm256_storeu_pd(s + 12, a3);                                                    \
      for (int k = 0; i < n; i++, k++) s[k] += (double)x[i];                           \
      a0 = _mm256_loadu_pd(s), a1 = _mm256_loadu_pd(s + 4);                            \
      a2 = _mm256_loadu_pd(s + 8), a3 = _mm256_loadu_pd(s + 12);                       \
    }                                                                                  \
    total_256(a0, a1, a2, a3, pairs, re, im);                                          \
  }
#define TL__LOAD4_F64(p) _mm256_loadu_pd(p)
TL__SUM16_256(sum16_f64_256, double, TL__LOAD4_F64)

/* Floats by blocks (see the top): partials in two float registers (accumulators 0-7 and
 * 8-15); a block's tail goes through memory, at most once per run. */
static TL_AVX2 void sum16_f32_256(const float *x, int64_t n, int pairs, double *re, double *im) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t b = 0; b < n; b += TL__SUM_F32_BLOCK) {
    const int64_t end = n - b < TL__SUM_F32_BLOCK ? n : b + TL__SUM_F32_BLOCK;
    __m256 f0 = _mm256_setzero_ps(), f1 = f0;
    int64_t i = b;
    for (; i + 16 <= end; i += 16) {
      f0 = _mm256_add_ps(f0, _mm256_loadu_ps(x + i));
      f1 = _mm256_add_ps(f1, _mm256_loadu_ps(x + i + 8));
    }
    if (i < end) {
      float s[16];
      _mm256_storeu_ps(s, f0);
      _mm256_storeu_ps(s + 8, f1);
      for (int k = 0; i < end; i++, k++) s[k] += x[i];
      f0 = _mm256_loadu_ps(s), f1 = _mm256_loadu_ps(s + 8);
    }
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(f0)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(f0, 1)));
    a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(f1)));
    a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(f1, 1)));
  }
  total_256(a0, a1, a2, a3, pairs, re, im);
}

/* acc[i] += x[i], i < n, one addition in double per element (so every path gives the same
 * bits), W elements a vector, two vectors a step. */
#define TL__ADD_RUN(NAME, ATTR, T, W, LOADW, LOADU_PD, STOREU_PD, ADD_PD)            \
  static ATTR void NAME(const T *x, int64_t n, double *acc) {                        \
    int64_t i = 0;                                                                   \
    for (; i + 2 * (W) <= n; i += 2 * (W)) {                                         \
      STOREU_PD(acc + i, ADD_PD(LOADU_PD(acc + i), LOADW(x + i)));                   \
      STOREU_PD(acc + i + (W), ADD_PD(LOADU_PD(acc + i + (W)), LOADW(x + i + (W)))); \
    }                                                                                \
    for (; i < n; i++) acc[i] += (double)x[i];                                       \
  }
#define TL__WIDEN8_PS(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define TL__WIDEN4_PS(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
TL__ADD_RUN(add_run_f64_512, TL_AVX512, double, 8, _mm512_loadu_pd, _mm512_loadu_pd,
            _mm512_storeu_pd, _mm512_add_pd)
TL__ADD_RUN(add_run_f32_512, TL_AVX512, float, 8, TL__WIDEN8_PS, _mm512_loadu_pd, _mm512_storeu_pd,
            _mm512_add_pd)
TL__ADD_RUN(add_run_f64_256, TL_AVX2, double, 4, _mm256_loadu_pd, _mm256_loadu_pd, _mm256_storeu_pd,
            _mm256_add_pd)
TL__ADD_RUN(add_run_f32_256, TL_AVX2, float, 4, TL__WIDEN4_PS, _mm256_loadu_pd, _mm256_storeu_pd,
            _mm256_add_pd)

/* Adds the first `live` columns col[q] in order into S0, or, for complex pairs, the even ones
 * into S0 and the odd ones into S1 (the chunk starts on a pair). Named sums and, for a whole
 * chunk of WIDTH columns, constant bounds: an array of sums indexed by the column went
 * through memory on every addition. */
#define TL__ADD_COLUMNS(ADD, S0, S1, COL, LIVE, WIDTH, PAIRS)                                   \
  do {                                                                                          \
    if ((LIVE) == (WIDTH) && !(PAIRS)) {                                                        \
      for (int q_ = 0; q_ < (WIDTH); q_++) S0 = ADD(S0, COL[q_]);                               \
    } else if ((LIVE) == (WIDTH)) {                                                             \
      for (int q_ = 0; q_ < (WIDTH); q_ += 2) S0 = ADD(S0, COL[q_]), S1 = ADD(S1, COL[q_ + 1]); \
    } else {                                                                                    \
      for (int q_ = 0; q_ < (LIVE); q_++) {                                                     \
        if ((PAIRS) && q_ % 2)                                                                  \
          S1 = ADD(S1, COL[q_]);                                                                \
        else                                                                                    \
          S0 = ADD(S0, COL[q_]);                                                                \
      }                                                                                         \
    }                                                                                           \
  } while (0)

/* Eight runs' (re, im) totals into out[0..15], run by run. */
static inline TL_AVX512 void store_pairs(double *out, __m512d re, __m512d im) {
  const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
  const __m512i second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  _mm512_storeu_pd(out, _mm512_permutex2var_pd(re, first, im));
  _mm512_storeu_pd(out + 8, _mm512_permutex2var_pd(re, second, im));
}

/* Short runs of doubles summed in order (tl__short_sums_f64): eight runs side by side. Each
 * run's span (its n elements, or n complex pairs) is read as contiguous registers of eight,
 * and eight runs' registers are transposed so that lane r belongs to run r; the columns are
 * then added in element order (a pair's real column into one sum, its imaginary column into
 * the other), as the one-run loop below adds them. Gathering the i-th elements of eight runs
 * instead took 15-25 cycles a gather on the project's machine and read a complex run twice,
 * once per part. */
static TL_AVX512 int64_t short_sums_f64_512(const double *x, int64_t n, int pairs, int64_t ld,
                                            int64_t rows, int64_t ahead, double *out) {
  const int64_t limit = rows + ahead; /* the rows the prefetch may reach */
  const int64_t span = pairs ? 2 * n : n;
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    const double *base = x + r * ld;
    /* every line of the next group's rows; for long runs streaming from memory, also the
     * group TL__SHORT_FAR_GROUPS on into the second level (one group ahead alone left
     * complex rows of 32 at 1.5x numpy's einsum on 32 MiB) */
    if (span >= 8 && r + 16 <= limit) prefetch_runs(base + 8 * ld, 8, 8 * ld, 8 * span, 0);
    if (span > 32 && ahead > 0 && r + 8 * (TL__SHORT_FAR_GROUPS + 1) <= limit)
      prefetch_runs(base + 8 * TL__SHORT_FAR_GROUPS * ld, 8, 8 * ld, 8 * span, 1);
    __m512d a0 = _mm512_setzero_pd(), a1 = a0;
    for (int64_t c = 0; c < span; c += 8) { /* c is even: a column's parity is its part */
      const int live = span - c >= 8 ? 8 : (int)(span - c);
      const __mmask8 m = (__mmask8)((1u << live) - 1u);
      __m512d col[8]; /* rows, then columns */
      for (int j = 0; j < 8; j++) col[j] = _mm512_maskz_loadu_pd(m, base + j * ld + c);
      tl__transpose8x8_pd512(col);
      TL__ADD_COLUMNS(_mm512_add_pd, a0, a1, col, live, 8, pairs);
    }
    if (pairs)
      store_pairs(out + 2 * r, a0, a1);
    else
      _mm512_storeu_pd(out + r, a0);
  }
  return r;
}

/* The double totals of a float partial's two halves (runs 0-7 and 8-15). */
static inline TL_AVX512 void add_partial(__m512 partial, __m512d *low, __m512d *high) {
  *low = _mm512_add_pd(*low, _mm512_cvtps_pd(_mm512_castps512_ps256(partial)));
  *high = _mm512_add_pd(
      *high,
      _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(partial), 1))));
}

/* Short runs of floats (tl__short_sums_f32): sixteen runs side by side, run r in lane r.
 * Chunks of eight floats of runs j and j + 8 share a register, which
 * tl__transpose8x8x2_ps512 turns into one register per position, and the positions are
 * added in order in float, a block of sixteen elements of a part at a time; each block's
 * float sum is then added to its run's double total, as the one-run loop below does.
 * Where more than eight floats of a run are left, a whole line of sixteen from each of the
 * sixteen runs goes through one 16 x 16 transpose instead (5-14% faster for rows of 12 to
 * 32 than two half-line passes). Widening every float to double before the transpose (as
 * the doubles run) left float rows of 16 to 32 at 1.2-1.5x numpy's einsum. */
static TL_AVX512 int64_t short_sums_f32_512(const float *x, int64_t n, int pairs, int64_t ld,
                                            int64_t rows, int64_t ahead, double *out) {
  const int64_t limit = rows + ahead; /* the rows the prefetch may reach */
  const int64_t span = pairs ? 2 * n : n, block = pairs ? 32 : 16;
  const __m512 zero = _mm512_setzero_ps();
  int64_t r = 0;
  for (; r + 16 <= rows; r += 16) {
    const float *base = x + r * ld;
    /* the next group's rows, where a row fills a line: ahead of the hardware prefetch, which
     * lost to numpy's row-by-row reads on 8 MiB of rows of 32 (shorter rows share lines, and
     * two prefetches a row then cost more than they saved) */
    if (span >= 16 && r + 32 <= limit) prefetch_runs(base + 16 * ld, 16, 4 * ld, 4 * span, 0);
    __m512d re_low = _mm512_setzero_pd(), re_high = re_low, im_low = re_low, im_high = re_low;
    __m512 f0 = zero, f1 = zero; /* the open block's float sums: real (or only) part, imaginary */
    for (int64_t c = 0; c < span;) { /* c is even: a column's parity is its part */
      /* more than eight floats left: a line of sixteen from each run and one 16 x 16
       * transpose; else eight from each of runs j and j + 8 in one register's halves */
      const int wide = span - c > 8, width = wide ? 16 : 8;
      const int live = span - c >= width ? width : (int)(span - c);
      const __mmask16 m = (__mmask16)((1u << live) - 1u);
      __m512 col[16]; /* runs, then positions */
      if (wide) {
        for (int j = 0; j < 16; j++) col[j] = _mm512_maskz_loadu_ps(m, base + j * ld + c);
        tl__transpose16x16_ps512(col);
      } else {
        for (int j = 0; j < 8; j++)
          col[j] = _mm512_shuffle_f32x4(_mm512_maskz_loadu_ps(m, base + j * ld + c),
                                        _mm512_maskz_loadu_ps(m, base + (j + 8) * ld + c), 0x44);
        tl__transpose8x8x2_ps512(col);
      }
      TL__ADD_COLUMNS(_mm512_add_ps, f0, f1, col, live, 16, pairs);
      c += width;
      if (c % block == 0 || c >= span) { /* a block ends */
        add_partial(f0, &re_low, &re_high);
        if (pairs) add_partial(f1, &im_low, &im_high);
        f0 = zero, f1 = zero;
      }
    }
    if (pairs) {
      store_pairs(out + 2 * r, re_low, im_low);
      store_pairs(out + 2 * r + 16, re_high, im_high);
    } else {
      _mm512_storeu_pd(out + r, re_low);
      _mm512_storeu_pd(out + r + 8, re_high);
    }
  }
  return r;
}
#endif

/* The public entry points: the highest path isa allows. */
#if TL_X86_KERNELS
#define TL__SUM16_ENTRY(NAME, T, AVX512, AVX2, PORTABLE)                                       \
  void NAME(int isa, int prefetch, const T *x, int64_t n, int pairs, double *re, double *im) { \
    if (isa >= TL__ISA_AVX512)                                                                 \
      AVX512(prefetch, x, n, pairs, re, im);                                                   \
    else if (isa >= TL__ISA_AVX2)                                                              \
      AVX2(x, n, pairs, re, im);                                                               \
    else                                                                                       \
      PORTABLE(x, n, pairs, re, im);                                                           \
  }
#else
#define TL__SUM16_ENTRY(NAME, T, AVX512, AVX2, PORTABLE)                                       \
  void NAME(int isa, int prefetch, const T *x, int64_t n, int pairs, double *re, double *im) { \
    (void)isa, (void)prefetch;                                                                 \
    PORTABLE(x, n, pairs, re, im);                                                             \
  }
#endif
TL__SUM16_ENTRY(tl__sum16_f64, double, sum16_f64_512, sum16_f64_256, sum16_f64_portable)
TL__SUM16_ENTRY(tl__sum16_f32, float, sum16_f32_512, sum16_f32_256, sum16_f32_portable)

/* The four-run entries: AVX-512's side-by-side sums, else each run's own sum. */
#define TL__ROWS4_EACH(ONE)                                           \
  for (int r = 0; r < 4; r++) {                                       \
    double im;                                                        \
    ONE(isa, prefetch, x + r * ld, n, pairs, &out[pairs ? 2 * r : r], \
        pairs ? &out[2 * r + 1] : &im);                               \
  }
#if TL_X86_KERNELS
#define TL__ROWS4_ENTRY(NAME, T, AVX512, ONE)                                                   \
  void NAME(int isa, int prefetch, const T *x, int64_t n, int64_t ld, int pairs, double *out) { \
    if (isa >= TL__ISA_AVX512) {                                                                \
      AVX512(prefetch, x, n, ld, pairs, out);                                                   \
      return;                                                                                   \
    }                                                                                           \
    TL__ROWS4_EACH(ONE)                                                                         \
  }
#else
#define TL__ROWS4_ENTRY(NAME, T, AVX512, ONE)                                                   \
  void NAME(int isa, int prefetch, const T *x, int64_t n, int64_t ld, int pairs, double *out) { \
    TL__ROWS4_EACH(ONE)                                                                         \
  }
#endif
TL__ROWS4_ENTRY(tl__sum16_f64_rows4, double, sum16_f64_512_rows4, tl__sum16_f64)
TL__ROWS4_ENTRY(tl__sum16_f32_rows4, float, sum16_f32_512_rows4, tl__sum16_f32)

#define TL__ADD_RUN_PORTABLE(NAME, T)                                      \
  static void NAME(const T *restrict x, int64_t n, double *restrict acc) { \
    for (int64_t i = 0; i < n; i++) acc[i] += (double)x[i];                \
  }
TL__ADD_RUN_PORTABLE(add_run_f64_portable, double)
TL__ADD_RUN_PORTABLE(add_run_f32_portable, float)

#if TL_X86_KERNELS
#define TL__ADD_RUN_ENTRY(NAME, T, AVX512, AVX2, PORTABLE) \
  void NAME(int isa, const T *x, int64_t n, double *acc) { \
    if (isa >= TL__ISA_AVX512)                             \
      AVX512(x, n, acc);                                   \
    else if (isa >= TL__ISA_AVX2)                          \
      AVX2(x, n, acc);                                     \
    else                                                   \
      PORTABLE(x, n, acc);                                 \
  }
#else
#define TL__ADD_RUN_ENTRY(NAME, T, AVX512, AVX2, PORTABLE) \
  void NAME(int isa, const T *x, int64_t n, double *acc) { \
    (void)isa;                                             \
    PORTABLE(x, n, acc);                                   \
  }
#endif
TL__ADD_RUN_ENTRY(tl__add_run_f64, double, add_run_f64_512, add_run_f64_256, add_run_f64_portable)
TL__ADD_RUN_ENTRY(tl__add_run_f32, float, add_run_f32_512, add_run_f32_256, add_run_f32_portable)

/* The totals of each of `rows` runs (run r at x + r * ld) of n elements, or of n complex
 * pairs (`pairs`: each part summed alone, into out[2r] and out[2r + 1]), in double: doubles
 * in order, ((0 + x_0) + x_1) + ...; floats in order in float within blocks of sixteen
 * elements, each block's sum added in order to the double total. The same bits at every
 * level: at AVX-512 eight runs (doubles) or sixteen (floats) at a time (short_sums_*_512),
 * the rest one by one. */
#if TL_X86_KERNELS
#define TL__SHORT_SUMS_WIDE(AVX512) \
  if (isa >= TL__ISA_AVX512) r = AVX512(x, n, pairs, ld, rows, ahead, out)
#else
#define TL__SHORT_SUMS_WIDE(AVX512) (void)isa, (void)ahead
#endif
void tl__short_sums_f64(int isa, const double *x, int64_t n, int pairs, int64_t ld, int64_t rows,
                        int64_t ahead, double *out) {
  int64_t r = 0;
  TL__SHORT_SUMS_WIDE(short_sums_f64_512);
  const int step = pairs ? 2 : 1;
  for (; r < rows; r++)
    for (int part = 0; part < step; part++) {
      const double *p = x + r * ld + part;
      double a = 0.0;
      for (int64_t i = 0; i < n; i++) a += p[i * step];
      out[step * r + part] = a;
    }
}

void tl__short_sums_f32(int isa, const float *x, int64_t n, int pairs, int64_t ld, int64_t rows,
                        int64_t ahead, double *out) {
  int64_t r = 0;
  TL__SHORT_SUMS_WIDE(short_sums_f32_512);
  const int step = pairs ? 2 : 1;
  for (; r < rows; r++)
    for (int part = 0; part < step; part++) {
      const float *p = x + r * ld + part;
      double a = 0.0;
      float block = 0.0f;
      for (int64_t i = 0; i < n; i++) {
        block += p[i * step];
        if ((i + 1) % 16 == 0 || i + 1 == n) a += (double)block, block = 0.0f;
      }
      out[step * r + part] = a;
    }
}
