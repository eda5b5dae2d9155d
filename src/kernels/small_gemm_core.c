/* src/kernels/small_gemm_core.c: a GEMM kernel for small real shapes that needs no code
 * generation, for the calls that come before a shape has earned a libxsmm JIT kernel
 * (small_gemm.c decides which).
 *
 * C = alpha A B + beta C for f32/f64 with any element strides (negative, zero on an
 * extent-1 axis, row- or column-major). A block of rows of A (two vectors' worth) is
 * copied into a zero-padded column-major buffer on the stack; each block of 4 columns of C
 * then keeps 2 x 4 vector accumulators in registers over the whole k loop (one FMA per
 * accumulator per step, B's entries broadcast), and is written back once. Rows and
 * columns past the edge are computed on padding (rows) or on a repeated last column
 * (columns) and never stored. With AVX-512F the vectors are 512 bits, with AVX2+FMA 256,
 * else a portable scalar loop runs. Pure core: never fails, allocates nothing; k is at
 * most TL__SMALL_GEMM_MAX_K so the packed block fits the stack (32 KiB). */
#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"

TL__HOT_FILE

#define COLS 6 /* columns of C per register block */

/* One k step for column q of the register block: broadcast B's entry, two FMAs. */
#define TL__SG_STEP(q, SET1, FMA)    \
  s = SET1(bq[q][o]);                \
  acc[q][0] = FMA(a0, s, acc[q][0]); \
  acc[q][1] = FMA(a1, s, acc[q][1]);

/* The same for a block of at most one vector of rows (the second vector stays zero). */
#define TL__SG_HALF(q, SET1, FMA) acc[q][0] = FMA(a0, SET1(bq[q][o]), acc[q][0]);

/* One instance per (element type, vector ISA): MB rows = 2 vectors of LANES, COLS columns,
 * 2 x COLS accumulators. A full block of unit-stride rows is read from A in place; a partial
 * or strided one is first copied into `pack` (zero-padded). */
#define TL__SMALL_GEMM_SIMD(NAME, T, TARGET, VT, LANES, SETZERO, LOADU, STOREU, SET1, FMA, ADD)   \
  __attribute__((target(TARGET))) static void NAME(                                               \
      int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, const T *b, \
      int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc, int64_t csc) {                         \
    enum { MB = 2 * (LANES) };                                                                    \
    _Alignas(64) T pack[TL__SMALL_GEMM_MAX_K * MB];                                               \
    _Alignas(64) T out[COLS][MB];                                                                 \
    const int direct = alpha == (T)1 && (beta == (T)0 || beta == (T)1) && rsc == 1;               \
    for (int64_t i0 = 0; i0 < m; i0 += MB) {                                                      \
      const int64_t mr = m - i0 < MB ? m - i0 : MB;                                               \
      const T *ablock = a + i0 * rsa;                                                             \
      int64_t astep = csa;                                                                        \
      if (rsa != 1 || (mr < MB && mr != (LANES))) {                                               \
        for (int64_t p = 0; p < k; p++) {                                                         \
          const T *src = ablock + p * csa;                                                        \
          T *dst = pack + p * MB;                                                                 \
          for (int64_t i = 0; i < mr; i++) dst[i] = src[i * rsa];                                 \
          for (int64_t i = mr; i < MB; i++) dst[i] = (T)0;                                        \
        }                                                                                         \
        ablock = pack;                                                                            \
        astep = MB;                                                                               \
      }                                                                                           \
      for (int64_t j0 = 0; j0 < n; j0 += COLS) {                                                  \
        const int64_t nr = n - j0 < COLS ? n - j0 : COLS;                                         \
        const T *bq[COLS];                                                                        \
        VT acc[COLS][2];                                                                          \
        for (int q = 0; q < COLS; q++) {                                                          \
          bq[q] = b + (j0 + (q < nr ? q : 0)) * csb;                                              \
          acc[q][0] = SETZERO(), acc[q][1] = SETZERO();                                           \
        }                                                                                         \
        const T *ap = ablock;                                                                     \
        if (mr <= (LANES)) {                                                                      \
          for (int64_t p = 0; p < k; p++, ap += astep) {                                          \
            VT a0 = LOADU(ap);                                                                    \
            int64_t o = p * rsb;                                                                  \
            TL__SG_HALF(0, SET1, FMA)                                                             \
            TL__SG_HALF(1, SET1, FMA)                                                             \
            TL__SG_HALF(2, SET1, FMA)                                                             \
            TL__SG_HALF(3, SET1, FMA) TL__SG_HALF(4, SET1, FMA) TL__SG_HALF(5, SET1, FMA)         \
          }                                                                                       \
        } else {                                                                                  \
          for (int64_t p = 0; p < k; p++, ap += astep) {                                          \
            VT a0 = LOADU(ap), a1 = LOADU(ap + (LANES)), s;                                       \
            int64_t o = p * rsb;                                                                  \
            TL__SG_STEP(0, SET1, FMA)                                                             \
            TL__SG_STEP(1, SET1, FMA)                                                             \
            TL__SG_STEP(2, SET1, FMA)                                                             \
            TL__SG_STEP(3, SET1, FMA) TL__SG_STEP(4, SET1, FMA) TL__SG_STEP(5, SET1, FMA)         \
          }                                                                                       \
        }                                                                                         \
        if (direct && mr == MB) {                                                                 \
          for (int64_t j = 0; j < nr; j++) {                                                      \
            T *col = c + i0 + (j0 + j) * csc;                                                     \
            if (beta == (T)0) {                                                                   \
              STOREU(col, acc[j][0]), STOREU(col + (LANES), acc[j][1]);                           \
            } else {                                                                              \
              STOREU(col, ADD(LOADU(col), acc[j][0]));                                            \
              STOREU(col + (LANES), ADD(LOADU(col + (LANES)), acc[j][1]));                        \
            }                                                                                     \
          }                                                                                       \
          continue;                                                                               \
        }                                                                                         \
        for (int q = 0; q < COLS; q++)                                                            \
          STOREU(out[q], acc[q][0]), STOREU(out[q] + (LANES), acc[q][1]);                         \
        for (int64_t j = 0; j < nr; j++) {                                                        \
          T *col = c + i0 * rsc + (j0 + j) * csc;                                                 \
          for (int64_t i = 0; i < mr; i++) {                                                      \
            T v = alpha * out[j][i];                                                              \
            col[i * rsc] = beta == (T)0 ? v : v + beta * col[i * rsc];                            \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }

TL__SMALL_GEMM_SIMD(dgemm_avx512, double, "avx512f", __m512d, 8, _mm512_setzero_pd, _mm512_loadu_pd,
                    _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd)
TL__SMALL_GEMM_SIMD(sgemm_avx512, float, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps,
                    _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
TL__SMALL_GEMM_SIMD(dgemm_avx2, double, "avx2,fma", __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd,
                    _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd)
TL__SMALL_GEMM_SIMD(sgemm_avx2, float, "avx2,fma", __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps,
                    _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)

/* Without AVX2: the plain loops (column of C at a time, accumulated in double or float). */
#define TL__SMALL_GEMM_PLAIN(NAME, T)                                                              \
  static void NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, \
                   const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc, int64_t csc) { \
    for (int64_t j = 0; j < n; j++)                                                                \
      for (int64_t i = 0; i < m; i++) {                                                            \
        T sum = (T)0;                                                                              \
        for (int64_t p = 0; p < k; p++) sum += a[i * rsa + p * csa] * b[p * rsb + j * csb];        \
        T *cij = c + i * rsc + j * csc;                                                            \
        *cij = beta == (T)0 ? alpha * sum : alpha * sum + beta * *cij;                             \
      }                                                                                            \
  }

TL__SMALL_GEMM_PLAIN(dgemm_plain, double)
TL__SMALL_GEMM_PLAIN(sgemm_plain, float)

typedef void (*dgemm_fn)(int64_t, int64_t, int64_t, double, const double *, int64_t, int64_t,
                         const double *, int64_t, int64_t, double, double *, int64_t, int64_t);
typedef void (*sgemm_fn)(int64_t, int64_t, int64_t, float, const float *, int64_t, int64_t,
                         const float *, int64_t, int64_t, float, float *, int64_t, int64_t);

/* 2: AVX-512F, 1: AVX2+FMA, 0: neither. Every thread that finds it unset computes the
 * same value, so a relaxed store is enough. */
static int isa_level(void) {
  static atomic_int level = -1;
  int v = atomic_load_explicit(&level, memory_order_relaxed);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512f")                                 ? 2
        : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                          : 0;
    atomic_store_explicit(&level, v, memory_order_relaxed);
  }
  return v;
}

int tl__small_gemm_isa(void) { return isa_level(); }

void tl__small_gemm_kernel(int isa, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                           tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                           int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc,
                           int64_t csc) {
  if (m <= 0 || n <= 0) return;
  /* Left to choose: AVX-512 but AVX2 for a block of rows that fits AVX2's (two 256-bit
   * vectors); both give the same bits (one FMA chain per element, in k order). */
  if (isa < 0 && isa_level() == 2 && m <= (dtype == TL_F64 ? 8 : 16)) isa = 1;
  if (isa < 0 || isa > isa_level()) isa = isa_level();
  if (dtype == TL_F64) {
    dgemm_fn fn = isa == 2 ? dgemm_avx512 : isa == 1 ? dgemm_avx2 : dgemm_plain;
    fn(m, n, k, alpha.re, a, rsa, csa, b, rsb, csb, beta.re, c, rsc, csc);
  } else {
    sgemm_fn fn = isa == 2 ? sgemm_avx512 : isa == 1 ? sgemm_avx2 : sgemm_plain;
    fn(m, n, k, (float)alpha.re, a, rsa, csa, b, rsb, csb, (float)beta.re, c, rsc, csc);
  }
}
