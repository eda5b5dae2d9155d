/* src/kernels/gemm_tiny_nk.c: rows of a GEMM whose B is tiny (n and k of a few elements),
 * as the last step of a tensor-network permutation has (2^18 rows of a times a 4 x 3 B).
 *
 * A provider's GEMM (or the small kernels) on such a product spends its time packing and
 * padding a 4 x 3 B into its register tile, call after call; here each row of C is n dot
 * products of k terms straight from A's row, with B held in locals. The contraction's
 * blocked route (contract.c) calls it on each gathered block of A's rows, writing C in place.
 *
 * B is held padded with zeros to a fixed width (4, 8 or 16 columns; complex: 2, 4, 8 or 16
 * pairs), so each row is k multiply-adds of whole short vectors the compiler unrolls, and
 * only the n real columns are stored. Each element of C is a[0] b[0][j], then plus a[p]
 * b[p][j] for p = 1 .. k-1 in order, in the dtype's precision (complex: each term is
 * (a_re b_re + a_im (-b_im), a_re b_im + a_im b_re), added to the running pair), then times
 * alpha (a product by 1 is exact; a complex alpha of 1 multiplies each part by 1 alone),
 * then beta c added unless beta is 0 (C is not read then). The operations depend on n and k alone,
 * never on which rows a call is given, so a row's bits do not depend on how the rows were cut into
 * calls or which thread ran them. */
#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

int tl__gemm_tiny_nk_fits(tl_dtype dtype, int64_t n, int64_t k) {
  if (dtype != TL_F32 && dtype != TL_F64 && dtype != TL_C64 && dtype != TL_C128) return 0;
  return n >= 1 && k >= 1 && n <= TL__TINY_NK_MAX && k <= TL__TINY_NK_MAX &&
         n * k <= TL__TINY_NK_MAX_ELEMENTS;
}

/* Real dtypes: T the element type, W the padded width; bt[p * W + j] = B(p, j), 0 past n. */
#define TL__TINY_REAL(NAME, T, W)                                                                 \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *av, int64_t rsa, \
                   const void *bv, int64_t rsb, int64_t csb, tl_scalar beta, void *cv,            \
                   int64_t rsc, int64_t csc) {                                                    \
    const T *a = av, *b = bv;                                                                     \
    T *c = cv;                                                                                    \
    T bt[TL__TINY_NK_MAX * (W)];                                                                  \
    int64_t p = 0; /* k >= 1 (_fits): the first row is always filled */                           \
    do {                                                                                          \
      for (int64_t j = 0; j < (W); j++) bt[p * (W) + j] = j < n ? b[p * rsb + j * csb] : (T)0;    \
    } while (++p < k);                                                                            \
    const int beta_zero = beta.re == 0.0;                                                         \
    const T al = (T)alpha.re, be = (T)beta.re;                                                    \
    for (int64_t r = 0; r < m; r++) {                                                             \
      const T *x = a + r * rsa;                                                                   \
      T acc[W];                                                                                   \
      for (int j = 0; j < (W); j++) acc[j] = x[0] * bt[j];                                        \
      for (p = 1; p < k; p++) {                                                                   \
        const T xp = x[p];                                                                        \
        for (int j = 0; j < (W); j++) acc[j] += xp * bt[p * (W) + j];                             \
      }                                                                                           \
      T *y = c + r * rsc;                                                                         \
      if (beta_zero) {                                                                            \
        for (int64_t j = 0; j < n; j++) y[j * csc] = al * acc[j];                                 \
      } else {                                                                                    \
        for (int64_t j = 0; j < n; j++) y[j * csc] = al * acc[j] + be * y[j * csc];               \
      }                                                                                           \
    }                                                                                             \
  }

TL__TINY_REAL(tiny_f64_4, double, 4)
TL__TINY_REAL(tiny_f64_8, double, 8)
TL__TINY_REAL(tiny_f64_16, double, 16)
TL__TINY_REAL(tiny_f32_4, float, 4)
TL__TINY_REAL(tiny_f32_8, float, 8)
TL__TINY_REAL(tiny_f32_16, float, 16)

/* Complex dtypes: T the part type, W the padded width in pairs; elements are (re, im) pairs,
 * strides count elements. bp holds B's pairs (re, im) and bs the swapped ones (-im, re), so
 * a term is x_re bp + x_im bs over 2 W parts. */
#define TL__TINY_COMPLEX(NAME, T, W)                                                              \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *av, int64_t rsa, \
                   const void *bv, int64_t rsb, int64_t csb, tl_scalar beta, void *cv,            \
                   int64_t rsc, int64_t csc) {                                                    \
    const T *a = av, *b = bv;                                                                     \
    T *c = cv;                                                                                    \
    T bp[TL__TINY_NK_MAX * 2 * (W)], bs[TL__TINY_NK_MAX * 2 * (W)];                               \
    int64_t p = 0; /* k >= 1 (_fits): the first row is always filled */                           \
    do {                                                                                          \
      for (int64_t j = 0; j < (W); j++) {                                                         \
        T re = j < n ? b[2 * (p * rsb + j * csb)] : (T)0;                                         \
        T im = j < n ? b[2 * (p * rsb + j * csb) + 1] : (T)0;                                     \
        bp[p * 2 * (W) + 2 * j] = re;                                                             \
        bp[p * 2 * (W) + 2 * j + 1] = im;                                                         \
        bs[p * 2 * (W) + 2 * j] = -im;                                                            \
        bs[p * 2 * (W) + 2 * j + 1] = re;                                                         \
      }                                                                                           \
    } while (++p < k);                                                                            \
    const int unit_alpha = alpha.re == 1.0 && alpha.im == 0.0;                                    \
    const int beta_zero = beta.re == 0.0 && beta.im == 0.0;                                       \
    const T ar = (T)alpha.re, ai = (T)alpha.im, er = (T)beta.re, ei = (T)beta.im;                 \
    for (int64_t r = 0; r < m; r++) {                                                             \
      const T *x = a + 2 * r * rsa;                                                               \
      T acc[2 * (W)];                                                                             \
      for (int q = 0; q < 2 * (W); q++) acc[q] = x[0] * bp[q] + x[1] * bs[q];                     \
      for (p = 1; p < k; p++) {                                                                   \
        const T xr = x[2 * p], xi = x[2 * p + 1];                                                 \
        for (int q = 0; q < 2 * (W); q++)                                                         \
          acc[q] += xr * bp[p * 2 * (W) + q] + xi * bs[p * 2 * (W) + q];                          \
      }                                                                                           \
      T *y = c + 2 * r * rsc;                                                                     \
      for (int64_t j = 0; j < n; j++) {                                                           \
        T re = acc[2 * j], im = acc[2 * j + 1];                                                   \
        /* a real alpha or beta scales each part alone (inf stays inf) */                         \
        T vr = unit_alpha || ai == 0 ? re * ar : ar * re - ai * im;                               \
        T vi = unit_alpha || ai == 0 ? im * ar : ar * im + ai * re;                               \
        T *out = y + 2 * j * csc;                                                                 \
        if (!beta_zero) {                                                                         \
          T cr = out[0], ci = out[1];                                                             \
          vr += ei == 0 ? er * cr : er * cr - ei * ci;                                            \
          vi += ei == 0 ? er * ci : er * ci + ei * cr;                                            \
        }                                                                                         \
        out[0] = vr;                                                                              \
        out[1] = vi;                                                                              \
      }                                                                                           \
    }                                                                                             \
  }

TL__TINY_COMPLEX(tiny_c128_2, double, 2)
TL__TINY_COMPLEX(tiny_c128_4, double, 4)
TL__TINY_COMPLEX(tiny_c128_8, double, 8)
TL__TINY_COMPLEX(tiny_c128_16, double, 16)
TL__TINY_COMPLEX(tiny_c64_2, float, 2)
TL__TINY_COMPLEX(tiny_c64_4, float, 4)
TL__TINY_COMPLEX(tiny_c64_8, float, 8)
TL__TINY_COMPLEX(tiny_c64_16, float, 16)

/* ---- AVX2 rows for the common widths ------------------------------------------------------
 * f64 with n <= 4 and c128 with n <= 4, alpha 1, beta 0 and C's columns contiguous (any
 * layout for a single column; the einsum steps that come here): the same products and sums
 * as the portable kernels above, in the same order, with no fused multiply-add (the
 * portable build has none either), so the bits are the portable kernel's; the registers
 * hold a whole row of C, and the stores
 * write the n elements straight from them. The portable f64 row took about 11 cycles
 * (2^18 rows of a 4 x 3 B: 0.95 ms on one core of the AVX-512 machine, in cache), most of
 * it in the scalar stores and spills. */
#if TL_X86_KERNELS
#define TL__AVX2 __attribute__((target("avx2")))

static inline TL__AVX2 void store_f64_row(double *y, int64_t n, __m256d v) {
  if (n == 4) {
    _mm256_storeu_pd(y, v);
    return;
  }
  __m128d lo = _mm256_castpd256_pd128(v);
  if (n == 1) {
    _mm_store_sd(y, lo);
    return;
  }
  _mm_storeu_pd(y, lo);
  if (n == 3) _mm_store_sd(y + 2, _mm256_extractf128_pd(v, 1));
}

/* B's rows straight into registers: four scalar stores read back as one vector would stall
 * the load until the stores retire (store forwarding cannot merge them), which cost more
 * than the rows of a short call. */
static inline TL__AVX2 void load_b_f64(int64_t n, int64_t k, const double *b, int64_t rsb,
                                       int64_t csb, __m256d *bt) {
  for (int64_t p = 0; p < k; p++) {
    const double *bp = b + p * rsb;
    bt[p] = _mm256_set_pd(n > 3 ? bp[3 * csb] : 0.0, n > 2 ? bp[2 * csb] : 0.0,
                          n > 1 ? bp[csb] : 0.0, bp[0]);
  }
}

/* Streaming (non-temporal) stores of the first `count` doubles of v, 8 bytes each (C's rows
 * need only be 8-byte aligned). */
static inline TL__AVX2 void stream_words(double *y, int64_t count, __m256d v) {
  const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  long long *z = (long long *)(void *)y;
  _mm_stream_si64(z, _mm_cvtsi128_si64(_mm_castpd_si128(lo)));
  if (count > 1)
    _mm_stream_si64(z + 1, _mm_cvtsi128_si64(_mm_castpd_si128(_mm_unpackhi_pd(lo, lo))));
  if (count > 2) _mm_stream_si64(z + 2, _mm_cvtsi128_si64(_mm_castpd_si128(hi)));
  if (count > 3)
    _mm_stream_si64(z + 3, _mm_cvtsi128_si64(_mm_castpd_si128(_mm_unpackhi_pd(hi, hi))));
}
static inline TL__AVX2 void row_f64(const double *x, int64_t n, int64_t k, const __m256d *bt,
                                    double *y, int stream) {
  __m256d acc = _mm256_mul_pd(_mm256_broadcast_sd(x), bt[0]);
  for (int64_t p = 1; p < k; p++)
    acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_broadcast_sd(x + p), bt[p]));
  if (stream)
    stream_words(y, n, acc);
  else
    store_f64_row(y, n, acc);
}

/* c128, two vectors of two pairs per row of B: bp / bs as the portable kernel's. */
typedef struct c128_b {
  __m256d bp[TL__TINY_NK_MAX][2], bs[TL__TINY_NK_MAX][2];
} c128_b;

static inline TL__AVX2 void load_b_c128(int64_t n, int64_t k, const double *b, int64_t rsb,
                                        int64_t csb, c128_b *t) {
  for (int64_t p = 0; p < k; p++) {
    double re[4], im[4];
    for (int64_t j = 0; j < 4; j++) {
      re[j] = j < n ? b[2 * (p * rsb + j * csb)] : 0.0;
      im[j] = j < n ? b[2 * (p * rsb + j * csb) + 1] : 0.0;
    }
    for (int h = 0; h < 2; h++) {
      t->bp[p][h] = _mm256_set_pd(im[2 * h + 1], re[2 * h + 1], im[2 * h], re[2 * h]);
      t->bs[p][h] = _mm256_set_pd(re[2 * h + 1], -im[2 * h + 1], re[2 * h], -im[2 * h]);
    }
  }
}

/* One row: each part is x_re bp + x_im bs, added to the running sum. */
static inline TL__AVX2 void row_c128(const double *x, int64_t n, int64_t k, const c128_b *t,
                                     double *y) {
  const int halves = n <= 2 ? 1 : 2;
  for (int h = 0; h < halves; h++) {
    __m256d acc = _mm256_add_pd(_mm256_mul_pd(_mm256_broadcast_sd(x), t->bp[0][h]),
                                _mm256_mul_pd(_mm256_broadcast_sd(x + 1), t->bs[0][h]));
    for (int64_t p = 1; p < k; p++) {
      __m256d u = _mm256_add_pd(_mm256_mul_pd(_mm256_broadcast_sd(x + 2 * p), t->bp[p][h]),
                                _mm256_mul_pd(_mm256_broadcast_sd(x + 2 * p + 1), t->bs[p][h]));
      acc = _mm256_add_pd(acc, u);
    }
    if (n - 2 * h >= 2)
      _mm256_storeu_pd(y + 4 * h, acc);
    else
      _mm_storeu_pd(y + 4 * h, _mm256_castpd256_pd128(acc));
  }
}

/* One column of C (n = 1): a row would use one lane of four, so four rows go at once, a
 * lane each: element p of the four rows times B's p-th value, summed in p order, which is
 * each row's own sum (the bits of row_f64). Returns the rows done (a multiple of 4). With
 * k = 4 and rows k apart the four rows are one 4 x 4 block, loaded whole and transposed. */
static inline TL__AVX2 int64_t column_f64(int64_t m, int64_t k, const double *a, int64_t rsa,
                                          const double *b, int64_t rsb, double *c, int64_t rsc) {
  __m256d bv[TL__TINY_NK_MAX];
  for (int64_t p = 0; p < k; p++) bv[p] = _mm256_set1_pd(b[p * rsb]);
  int64_t r = 0;
  for (; r + 4 <= m; r += 4) {
    const double *x = a + r * rsa;
    __m256d acc;
    if (k == 4 && rsa == 4) {
      __m256d r0 = _mm256_loadu_pd(x), r1 = _mm256_loadu_pd(x + 4);
      __m256d r2 = _mm256_loadu_pd(x + 8), r3 = _mm256_loadu_pd(x + 12);
      __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      __m256d c0 = _mm256_permute2f128_pd(t0, t2, 0x20), c1 = _mm256_permute2f128_pd(t1, t3, 0x20);
      __m256d c2 = _mm256_permute2f128_pd(t0, t2, 0x31), c3 = _mm256_permute2f128_pd(t1, t3, 0x31);
      acc = _mm256_mul_pd(c0, bv[0]);
      acc = _mm256_add_pd(acc, _mm256_mul_pd(c1, bv[1]));
      acc = _mm256_add_pd(acc, _mm256_mul_pd(c2, bv[2]));
      acc = _mm256_add_pd(acc, _mm256_mul_pd(c3, bv[3]));
    } else {
      acc = _mm256_mul_pd(_mm256_set_pd(x[3 * rsa], x[2 * rsa], x[rsa], x[0]), bv[0]);
      for (int64_t p = 1; p < k; p++) {
        __m256d col = _mm256_set_pd(x[3 * rsa + p], x[2 * rsa + p], x[rsa + p], x[p]);
        acc = _mm256_add_pd(acc, _mm256_mul_pd(col, bv[p]));
      }
    }
    if (rsc == 1) {
      _mm256_storeu_pd(c + r, acc);
    } else {
      __m128d lo = _mm256_castpd256_pd128(acc), hi = _mm256_extractf128_pd(acc, 1);
      _mm_store_sd(c + r * rsc, lo);
      _mm_storeh_pd(c + (r + 1) * rsc, lo);
      _mm_store_sd(c + (r + 2) * rsc, hi);
      _mm_storeh_pd(c + (r + 3) * rsc, hi);
    }
  }
  return r;
}

static TL__AVX2 void tiny_f64_4_avx2(int64_t m, int64_t n, int64_t k, const double *a, int64_t rsa,
                                     const double *b, int64_t rsb, int64_t csb, double *c,
                                     int64_t rsc) {
  __m256d bt[TL__TINY_NK_MAX];
  load_b_f64(n, k, b, rsb, csb, bt);
  int64_t r = 0;
  if (n == 1) r = column_f64(m, k, a, rsa, b, rsb, c, rsc);
  for (; r < m; r++) row_f64(a + r * rsa, n, k, bt, c + r * rsc, 0);
}

static TL__AVX2 void tiny_c128_avx2(int64_t m, int64_t n, int64_t k, const double *a, int64_t rsa,
                                    const double *b, int64_t rsb, int64_t csb, double *c,
                                    int64_t rsc) {
  c128_b t;
  load_b_c128(n, k, b, rsb, csb, &t);
  for (int64_t r = 0; r < m; r++) row_c128(a + 2 * r * rsa, n, k, &t, c + 2 * r * rsc);
}

/* The rows of tl__gemm_tiny_nk_rows: group i's runs rows from a + row_at[i] (bytes), row r
 * of it to c + (run_c[r] + i * rsc) elements. The next groups' runs are scattered over a,
 * too far apart for the hardware prefetchers: ask for the one PREFETCH_AHEAD groups on. */
#define PREFETCH_AHEAD 8
/* A group's runs are taken SUB_RUN rows at a time over all groups: its rows of C are runs
 * streams whose addresses differ by large powers of two (a bit reversal's: 3 MiB apart), so
 * they share a few sets of the first cache level; 8 streams at once fit its ways, 32 missed
 * (the f64 network step took 1.9 ms against 0.75 ms at 8; 4 and 16 were slower than 8). */
#define SUB_RUN 8
static TL__AVX2 void rows_avx2(int complex_dt, int64_t groups, int64_t runs, int64_t n, int64_t k,
                               const char *a, const int64_t *row_at, const double *b, int64_t rsb,
                               int64_t csb, double *c, int64_t rsc, const int64_t *run_c,
                               int stream) {
  const int64_t parts = complex_dt ? 2 : 1;
  __m256d bt[TL__TINY_NK_MAX];
  c128_b t;
  if (complex_dt)
    load_b_c128(n, k, b, rsb, csb, &t);
  else
    load_b_f64(n, k, b, rsb, csb, bt);
  for (int64_t r0 = 0; r0 < runs; r0 += SUB_RUN) {
    const int64_t r1 = r0 + SUB_RUN < runs ? r0 + SUB_RUN : runs;
    const int64_t sub_bytes = (r1 - r0) * k * parts * 8, skip = r0 * k * parts * 8;
    for (int64_t i = 0; i < groups; i++) {
      if (i + PREFETCH_AHEAD < groups) {
        const char *ahead = a + row_at[i + PREFETCH_AHEAD] + skip;
        for (int64_t at = 0; at < sub_bytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
      }
      const double *x = (const double *)(const void *)(a + row_at[i]);
      double *y = c + parts * i * rsc;
      for (int64_t r = r0; r < r1; r++) {
        if (complex_dt)
          row_c128(x + 2 * r * k, n, k, &t, y + 2 * run_c[r]);
        else
          row_f64(x + r * k, n, k, bt, y + run_c[r], stream);
      }
    }
  }
  if (stream) _mm_sfence(); /* the streamed rows are ordered before the caller's next stores */
}

/* 1 when the AVX2 rows above take the call. */
static int avx2_takes(int isa, tl_dtype dtype, int64_t n, tl_scalar alpha, tl_scalar beta,
                      int64_t csc) {
  if (isa < TL__ISA_AVX2 || n > 4 || (n > 1 && csc != 1)) return 0; /* one column: any csc */
  if (alpha.re != 1.0 || alpha.im != 0.0 || beta.re != 0.0 || beta.im != 0.0) return 0;
  return dtype == TL_F64 || dtype == TL_C128;
}
#endif

/* One kernel per dtype and padded width; a row's entries are for n <= 2, 4, 8 and 16 (the real
 * dtypes pad n <= 2 to 4). */
typedef void tiny_kernel(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                         int64_t rsa, const void *b, int64_t rsb, int64_t csb, tl_scalar beta,
                         void *c, int64_t rsc, int64_t csc);
static tiny_kernel *const tiny_f32[4] = {tiny_f32_4, tiny_f32_4, tiny_f32_8, tiny_f32_16};
static tiny_kernel *const tiny_f64[4] = {tiny_f64_4, tiny_f64_4, tiny_f64_8, tiny_f64_16};
static tiny_kernel *const tiny_c64[4] = {tiny_c64_2, tiny_c64_4, tiny_c64_8, tiny_c64_16};
static tiny_kernel *const tiny_c128[4] = {tiny_c128_2, tiny_c128_4, tiny_c128_8, tiny_c128_16};

void tl__gemm_tiny_nk(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                      const void *a, int64_t rsa, const void *b, int64_t rsb, int64_t csb,
                      tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  tl__gemm_tiny_nk_at(tl__isa_level(), dtype, m, n, k, alpha, a, rsa, b, rsb, csb, beta, c, rsc,
                      csc);
}

void tl__gemm_tiny_nk_at(int isa, tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                         const void *a, int64_t rsa, const void *b, int64_t rsb, int64_t csb,
                         tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
#if TL_X86_KERNELS
  if (avx2_takes(isa, dtype, n, alpha, beta, csc)) {
    if (dtype == TL_F64)
      tiny_f64_4_avx2(m, n, k, a, rsa, b, rsb, csb, c, rsc);
    else
      tiny_c128_avx2(m, n, k, a, rsa, b, rsb, csb, c, rsc);
    return;
  }
#else
  (void)isa;
#endif
  tiny_kernel *const *row = dtype == TL_F64    ? tiny_f64
                            : dtype == TL_F32  ? tiny_f32
                            : dtype == TL_C128 ? tiny_c128
                                               : tiny_c64;
  const int width = n <= 2 ? 0 : n <= 4 ? 1 : n <= 8 ? 2 : 3;
  row[width](m, n, k, alpha, a, rsa, b, rsb, csb, beta, c, rsc, csc);
}

int tl__gemm_tiny_nk_fast(tl_dtype dtype, int64_t n, tl_scalar alpha, tl_scalar beta, int64_t csc) {
#if TL_X86_KERNELS
  return avx2_takes(tl__isa_level(), dtype, n, alpha, beta, csc);
#else
  (void)dtype, (void)n, (void)alpha, (void)beta, (void)csc;
  return 0;
#endif
}

void tl__gemm_tiny_nk_rows(tl_dtype dtype, int64_t groups, int64_t runs, int64_t n, int64_t k,
                           const void *a, const int64_t *row_at, const void *b, int64_t rsb,
                           int64_t csb, void *c, int64_t rsc, const int64_t *run_c, int stream) {
#if TL_X86_KERNELS
  rows_avx2(dtype == TL_C128, groups, runs, n, k, a, row_at, b, rsb, csb, c, rsc, run_c, stream);
#else
  (void)dtype, (void)groups, (void)runs, (void)n, (void)k, (void)a, (void)row_at, (void)b;
  (void)rsb, (void)csb, (void)c, (void)rsc, (void)run_c, (void)stream;
#endif
}
