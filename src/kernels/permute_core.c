/* src/kernels/permute_core.c: the permute (strided copy) core and its transpose tile.
 *
 * The plan orders the axes by the destination's strides. When the source's densest axis
 * is the destination's too, the copy runs row by row (a contiguous copy when both are
 * unit-stride). Otherwise it is tiled over the two dense axes: a tile is so many bytes of
 * the destination's dense axis (that many source rows) by so many of the source's (the
 * sizes depend on the CPU: tl__permute_tiles_for), and tiles are walked along the source rows
 * first, so consecutive tiles continue the same source rows and the prefetchers' streams on them
 * keep running. Inside a tile the micro-kernels move one cache line by one cache line (8 x 8
 * doubles), so every source line is used whole when it is loaded.
 *
 * Invariant: the micro-kernels move bits (integer or vector moves), never arithmetic, so
 * a copy is exact for every value, NaN payloads included. No index arithmetic in the
 * inner loops: pointers advance by precomputed strides. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "transpose512.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

/* ---- portable micro-kernels: dst(j, i) = src(i, j) ------------------------------------ */

#define TL__TILE_SCALAR(NAME, T)                                                             \
  static void NAME(int64_t r, int64_t c, const char *src_bytes, int64_t ss, char *dst_bytes, \
                   int64_t ds) {                                                             \
    const T *src = (const T *)src_bytes;                                                     \
    T *dst = (T *)dst_bytes;                                                                 \
    for (int64_t j = 0; j < c; j++) {                                                        \
      const T *s = src;                                                                      \
      T *d = dst;                                                                            \
      for (int64_t i = 0; i < r; i++) {                                                      \
        *d = *s;                                                                             \
        s += 1;                                                                              \
        d += ds;                                                                             \
      }                                                                                      \
      src += ss;                                                                             \
      dst += 1;                                                                              \
    }                                                                                        \
  }

typedef struct tl__b16 {
  uint64_t lo, hi;
} tl__b16;

TL__TILE_SCALAR(tile_scalar4, uint32_t)
TL__TILE_SCALAR(tile_scalar8, uint64_t)
TL__TILE_SCALAR(tile_scalar16, tl__b16)

/* ---- AVX2 micro-kernels ----------------------------------------------------------------
 * A micro-tile is one cache line by one cache line (8 x 8 doubles, 16 x 16 floats, 4 x 4
 * complex doubles): every source line is read whole and every destination line written
 * whole inside one micro-tile, so no partly used line has to survive in cache between
 * micro-tiles. That is what keeps a power-of-two leading dimension (all rows of a tile in
 * one cache set) from costing bandwidth. Fringes go through the portable kernels. */
#if defined(__x86_64__) && defined(__GNUC__)

/* dst(j.., i..) = src(i.., j..) for a 4 x 4 block of doubles. */
#define TL__T4X4_PD(NAME, STORE)                                                \
  __attribute__((target("avx2"), always_inline)) static inline void NAME(       \
      const double *s, int64_t ss, double *d, int64_t ds) {                     \
    __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss);              \
    __m256d r2 = _mm256_loadu_pd(s + 2 * ss), r3 = _mm256_loadu_pd(s + 3 * ss); \
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);   \
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);   \
    STORE(d, _mm256_permute2f128_pd(t0, t2, 0x20));                             \
    STORE(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));                        \
    STORE(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));                    \
    STORE(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));                    \
  }
TL__T4X4_PD(t4x4_pd_nt, _mm256_stream_pd)

__attribute__((target("avx2"), always_inline)) static inline void t4x4_pd(const double *s,
                                                                          int64_t ss, double *d,
                                                                          int64_t ds) {
  __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss);
  __m256d r2 = _mm256_loadu_pd(s + 2 * ss), r3 = _mm256_loadu_pd(s + 3 * ss);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* The same for an 8 x 8 block of floats. */
__attribute__((target("avx2"), always_inline)) static inline void t8x8_ps(const float *s,
                                                                          int64_t ss, float *d,
                                                                          int64_t ds) {
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss);
  __m256 r2 = _mm256_loadu_ps(s + 2 * ss), r3 = _mm256_loadu_ps(s + 3 * ss);
  __m256 r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss);
  __m256 r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* The same for a 2 x 2 block of 16-byte elements (as pairs of doubles). */
#define TL__T2X2_C(NAME, STORE)                                           \
  __attribute__((target("avx2"), always_inline)) static inline void NAME( \
      const double *s, int64_t ss2, double *d, int64_t ds2) {             \
    __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss2);       \
    STORE(d, _mm256_permute2f128_pd(r0, r1, 0x20));                       \
    STORE(d + ds2, _mm256_permute2f128_pd(r0, r1, 0x31));                 \
  }
TL__T2X2_C(t2x2_c, _mm256_storeu_pd)
TL__T2X2_C(t2x2_c_nt, _mm256_stream_pd)

/* Generic line-by-line driver: L x L micro-tiles made of B x B blocks. T is the element
 * type in units the block kernel indexes (double for 16-byte elements: 2 units each). */
#define TL__TILE_SIMD(NAME, ISA, T, L, B, BLOCK, UNITS, SCALAR)                              \
  __attribute__((target(ISA))) static void NAME(int64_t r, int64_t c, const char *src_bytes, \
                                                int64_t ss, char *dst_bytes, int64_t ds) {   \
    const T *src = (const T *)src_bytes;                                                     \
    T *dst = (T *)dst_bytes;                                                                 \
    const int64_t uss = ss * (UNITS), uds = ds * (UNITS);                                    \
    const int64_t r_full = r / (L) * (L), c_full = c / (L) * (L);                            \
    for (int64_t j = 0; j < c_full; j += (L)) {                                              \
      const T *s_row = src + j * uss;                                                        \
      T *d_col = dst + j * (UNITS);                                                          \
      for (int64_t i = 0; i < r_full; i += (L)) {                                            \
        const T *s = s_row + i * (UNITS);                                                    \
        T *d = d_col + i * uds;                                                              \
        for (int64_t bi = 0; bi < (L); bi += (B))                                            \
          for (int64_t bj = 0; bj < (L); bj += (B))                                          \
            BLOCK(s + bi * (UNITS) + bj * uss, uss, d + bj * (UNITS) + bi * uds, uds);       \
      }                                                                                      \
      if (r_full < r)                                                                        \
        SCALAR(r - r_full, (L), (const char *)(s_row + r_full * (UNITS)), ss,                \
               (char *)(d_col + r_full * uds), ds);                                          \
    }                                                                                        \
    if (c_full < c)                                                                          \
      SCALAR(r, c - c_full, (const char *)(src + c_full * uss), ss,                          \
             (char *)(dst + c_full * (UNITS)), ds);                                          \
  }

/* AVX-512: a micro-tile is one block of Q rows of one 64-byte line each (8 doubles, or 4
 * complex doubles; strides in doubles), each destination line written by one store. */
#define TL__BLOCK512(NAME, Q, TRANSPOSE, STORE)                              \
  __attribute__((target("avx512f"), always_inline)) static inline void NAME( \
      const double *s, int64_t ss, double *d, int64_t ds) {                  \
    __m512d r[Q];                                                            \
    for (int q = 0; q < (Q); q++) r[q] = _mm512_loadu_pd(s + q * ss);        \
    TRANSPOSE(r);                                                            \
    for (int q = 0; q < (Q); q++) STORE(d + q * ds, r[q]);                   \
  }
TL__BLOCK512(t8x8_pd512, 8, tl__transpose8x8_pd512, _mm512_storeu_pd)
TL__BLOCK512(t8x8_pd512_nt, 8, tl__transpose8x8_pd512, _mm512_stream_pd) /* d 64-byte aligned */
TL__BLOCK512(t4x4_c512, 4, tl__transpose4x4_c512, _mm512_storeu_pd)
TL__BLOCK512(t4x4_c512_nt, 4, tl__transpose4x4_c512, _mm512_stream_pd) /* d 64-byte aligned */

TL__TILE_SIMD(tile8_avx2, "avx2", double, 8, 4, t4x4_pd, 1, tile_scalar8)
TL__TILE_SIMD(tile4_avx2, "avx2", float, 16, 8, t8x8_ps, 1, tile_scalar4)
TL__TILE_SIMD(tile16_avx2, "avx2", double, 4, 2, t2x2_c, 2, tile_scalar16)
/* Streaming-store variants for large copies whose destination rows are 32-byte aligned:
 * whole lines go straight to memory (no read for ownership, no eviction traffic through
 * the cache sets a power-of-two stride piles its rows into). */
TL__TILE_SIMD(tile8_avx2_nt, "avx2", double, 8, 4, t4x4_pd_nt, 1, tile_scalar8)
TL__TILE_SIMD(tile16_avx2_nt, "avx2", double, 4, 2, t2x2_c_nt, 2, tile_scalar16)
TL__TILE_SIMD(tile8_avx512, "avx512f", double, 8, 8, t8x8_pd512, 1, tile_scalar8)
TL__TILE_SIMD(tile16_avx512, "avx512f", double, 4, 4, t4x4_c512, 2, tile_scalar16)
TL__TILE_SIMD(tile8_avx512_nt, "avx512f", double, 8, 8, t8x8_pd512_nt, 1, tile_scalar8)
TL__TILE_SIMD(tile16_avx512_nt, "avx512f", double, 4, 4, t4x4_c512_nt, 2, tile_scalar16)
#endif

typedef void (*tile_fn)(int64_t r, int64_t c, const char *src, int64_t ss, char *dst, int64_t ds);

int tl__permute_isa(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  static atomic_int cached = -1; /* benign race: every thread computes the same value */
  int value = atomic_load_explicit(&cached, memory_order_relaxed);
  if (value < 0) {
    __builtin_cpu_init();
    value = __builtin_cpu_supports("avx512f") ? TL__ISA_AVX512
            : __builtin_cpu_supports("avx2")  ? TL__ISA_AVX2
                                              : TL__ISA_PORTABLE;
    atomic_store_explicit(&cached, value, memory_order_relaxed);
  }
  if (value > tl__isa_level()) value = tl__isa_level();
  return value < tl__permute_isa_cap ? value : tl__permute_isa_cap;
#else
  return TL__ISA_PORTABLE;
#endif
}

int tl__permute_isa_cap = TL__ISA_AVX512;

/* Measured with bench_kernels' permute rows (2 threads, medians against a copy of the same
 * bytes). On Zen 5 (family 26) 4096 x 256 bytes beat 2048 x 512: 8192^2 0.82 -> 0.82-0.89,
 * 3-D (2,0,1) 0.73-0.75 -> 0.88, (1,2,0) 0.76-0.80 -> 0.86-1.03; source extents of 1024
 * bytes read 0.4-0.55 there. On Zen 4 (family 25) the same 4096 x 256 was the slowest
 * choice tried: two alternated runs of 9 rounds gave 8192^2 0.58-0.62, (2,1,0) 0.56-0.57,
 * (2,0,1) 0.66-0.67, against 0.81-0.89, 0.85-0.86 and 0.91-0.92 with 1024 x 512 (2048 x 512
 * and 512 x 1024 came between); there the fewer source rows a tile keeps open at once, the
 * better. Zen 2 showed no steady winner (docs/design/kernels.md). So Zen 5 keeps the tall
 * tile and every other CPU takes 1024 x 512.
 * Outputs under the streaming size on Zen 5 take 128 source bytes per row instead: with a
 * source row step that is a multiple of 4 KiB (1024^2 f64) the rows' lines share a few
 * cache sets, and the lines read ahead along each row were gone before the next tile
 * reached them. Alternated in one process against a copy of the same bytes (2 threads,
 * medians of 31, 2026-12-04): 1024^2 0.58-0.62 -> 1.04-1.12, 512 x 1024 0.66 -> 0.96,
 * 2048 x 512 0.63 -> 1.10, 768^2 1.28-1.31 -> 2.10-2.22, and 1000^2, 1032^2 and three 3-D
 * and 4-D shapes within the noise of each other; on streaming outputs 128 bytes lost
 * (8192^2 0.88-0.93 -> 0.70-0.76), so they keep 256. */
tl__permute_tiles tl__permute_tiles_for(int amd, int family) {
  tl__permute_tiles t = {1024, 512, 512};
  if (amd && family == 26) t.dst_bytes = 4096, t.src_bytes = 256, t.src_bytes_cached = 128;
  return t;
}

tl__permute_tiles tl__permute_tiles_forced = {0, 0, 0};

tl__permute_tiles tl__permute_tiles_here(void) {
  if (tl__permute_tiles_forced.dst_bytes > 0) return tl__permute_tiles_forced;
  static atomic_int cached = -1; /* benign race: every thread computes the same value */
  int value = atomic_load_explicit(&cached, memory_order_relaxed);
  if (value < 0) {
    int amd = 0, family = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d))
      amd = b == 0x68747541u && d == 0x69746e65u; /* "Auth" "enti" */
    if (__get_cpuid(1, &a, &b, &c, &d)) {
      family = (int)((a >> 8) & 0xf);
      if (family == 0xf) family += (int)((a >> 20) & 0xff);
    }
#endif
    value = amd << 16 | family;
    atomic_store_explicit(&cached, value, memory_order_relaxed);
  }
  return tl__permute_tiles_for(value >> 16, value & 0xffff);
}

static int have_avx2(void) { return tl__permute_isa() >= TL__ISA_AVX2; }

/* Streaming kernels, for 8- and 16-byte elements; `align64`: every destination row of a
 * micro-tile starts on a 64-byte boundary (the AVX-512 stores need it; AVX2's need 32). */
static tile_fn tile_kernel_nt(int64_t esize, int align64) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (tl__permute_isa() >= TL__ISA_AVX512 && align64) {
    if (esize == 8) return tile8_avx512_nt;
    if (esize == 16) return tile16_avx512_nt;
  }
  if (esize == 8) return tile8_avx2_nt;
  if (esize == 16) return tile16_avx2_nt;
#endif
  (void)esize;
  (void)align64;
  return NULL;
}

static tile_fn tile_kernel(int64_t esize) {
#if defined(__x86_64__) && defined(__GNUC__)
  int isa = tl__permute_isa();
  if (isa >= TL__ISA_AVX512 && esize != 4) return esize == 8 ? tile8_avx512 : tile16_avx512;
  if (isa >= TL__ISA_AVX2) return esize == 4 ? tile4_avx2 : esize == 8 ? tile8_avx2 : tile16_avx2;
#endif
  return esize == 4 ? tile_scalar4 : esize == 8 ? tile_scalar8 : tile_scalar16;
}

void tl__transpose_tile(int64_t esize, int64_t r, int64_t c, const char *src, int64_t ss, char *dst,
                        int64_t ds) {
  tile_kernel(esize)(r, c, src, ss, dst, ds);
}

/* General strides in both directions (views): plain element moves. */
static void tile_general(int64_t esize, int64_t r, int64_t c, const char *src, int64_t s_i,
                         int64_t s_j, char *dst, int64_t d_i, int64_t d_j) {
  for (int64_t j = 0; j < c; j++) {
    const char *s = src + j * s_j * esize;
    char *d = dst + j * d_j * esize;
    for (int64_t i = 0; i < r; i++) {
      memcpy(d, s, (size_t)esize);
      s += s_i * esize;
      d += d_i * esize;
    }
  }
}

/* ---- the plan -------------------------------------------------------------------------- */

/* 1 when the destination's base and its step along every loop axis but the dense one
 * (axis 0) are multiples of `bytes`: then every micro-tile row starts aligned, since tiles
 * and micro-tiles start at multiples of 64 bytes along the dense axis. */
static int dst_rows_aligned(const tl__loop *loop, int64_t bytes) {
  if ((uintptr_t)loop->base[0] % (uintptr_t)bytes != 0) return 0;
  for (int k = 1; k < loop->rank; k++)
    if ((loop->strides[0][k] * loop->esize[0]) % bytes != 0) return 0;
  return 1;
}

/* A dense run shared by both operands that is too short to copy row by row (at most
 * TL__FOLD_BYTES: a 2^18 x 3 f64 bit-reversal copied 262,144 runs of 24 bytes, each from a
 * new place) becomes the element: axis 0 is dropped, the element grows to the run, and the
 * other strides are counted in runs. Only when every other stride is a multiple of the run
 * and at least two axes remain to tile over. Returns 1 when folded. */
#define TL__FOLD_BYTES 64
static int fold_short_run(tl__loop *loop) {
  const int64_t run = loop->shape[0], es = loop->esize[0];
  if (loop->rank < 3 || run * es > TL__FOLD_BYTES) return 0;
  for (int k = 1; k < loop->rank; k++)
    if (loop->strides[0][k] % run != 0 || loop->strides[1][k] % run != 0) return 0;
  for (int k = 1; k < loop->rank; k++) {
    loop->shape[k - 1] = loop->shape[k];
    loop->strides[0][k - 1] = loop->strides[0][k] / run;
    loop->strides[1][k - 1] = loop->strides[1][k] / run;
  }
  loop->rank--;
  loop->esize[0] = loop->esize[1] = run * es;
  loop->inner = loop->shape[0];
  loop->rows = 1;
  for (int k = 1; k < loop->rank; k++) loop->rows *= loop->shape[k];
  return 1;
}

void tl__permute_plan_make(tl__permute_plan *plan, const tl_tensor *dst, const tl_tensor *src) {
  const tl_tensor *ts[2] = {dst, src};
  memset(plan, 0, sizeof *plan);
  tl__loop_plan(&plan->loop, 2, ts);
  const tl__loop *loop = &plan->loop;
  plan->tiled = 0;
  plan->blocks = loop->rows;
  if (loop->rank < 2 || loop->inner == 0) return;
  /* Rows contiguous in both (a permute that keeps the dense axis): a large output whose
   * rows are long gets streaming stores, as a large memcpy would (no read for ownership). */
  if (loop->strides[0][0] == 1 && loop->strides[1][0] == 1) {
    if (!fold_short_run(&plan->loop)) {
      plan->stream = loop->rows * loop->inner * loop->esize[0] >= ((int64_t)16 << 20) &&
                     loop->inner * loop->esize[0] >= 512 && have_avx2();
      return;
    }
  }
  /* The loop axis along which src is densest. */
  int p = -1;
  for (int k = 0; k < loop->rank; k++) {
    if (loop->strides[1][k] == 0) continue; /* a broadcast axis is never dense */
    if (p < 0 || tl__abs64(loop->strides[1][k]) < tl__abs64(loop->strides[1][p])) p = k;
  }
  if (p <= 0 || tl__abs64(loop->strides[1][0]) <= 1) return;
  plan->tiled = 1;
  plan->src_axis = p;
  /* Tiles of tl__permute_tiles_here()'s size, walked along the source rows first
   * (tl__permute_run). Each block then continues the same source rows where the previous
   * one stopped, so the hardware's stream prefetchers keep running on them, and each
   * destination row gets a tile's width written in one go. Measured on 2-D f64 transposes
   * (2 threads, against a copy of the same bytes): 8192^2 from 0.53 to 0.81, 8200^2 from
   * 0.75 to 0.90, over square 512-byte tiles walked across the rows. */
  const int64_t es = loop->esize[0];
  /* Stream the stores when the output is bigger than the caches would keep anyway, every
   * destination micro-tile row is 32-byte aligned (64 for the AVX-512 kernels), and the CPU
   * has AVX2. A streaming store to an unaligned address faults: the base and the step along
   * every axis but the dense one must be aligned, not only the step along the source's
   * dense axis (a 1001 x 4 x 700 transpose used to crash here). */
  /* Bounded: the output is validated and never maps two indices to one element, so its
   * element count times esize lies inside its byte span (< 2^63), as does every extent
   * (< 2^61 with esize >= 4: the tile counts below cannot wrap). */
  int64_t out_bytes = loop->rows * loop->inner * loop->esize[0];
  plan->stream = out_bytes >= ((int64_t)16 << 20) && tile_kernel_nt(loop->esize[0], 0) != NULL &&
                 loop->strides[0][0] == 1 && dst_rows_aligned(loop, 32) && have_avx2();
  plan->align64 = dst_rows_aligned(loop, 64);
  const tl__permute_tiles tiles = tl__permute_tiles_here();
  plan->tile0 = tiles.dst_bytes / es;
  plan->tile1 = (plan->stream ? tiles.src_bytes : tiles.src_bytes_cached) / es;
  plan->tiles0 = (loop->shape[0] + plan->tile0 - 1) / plan->tile0;
  plan->tiles1 = (loop->shape[p] + plan->tile1 - 1) / plan->tile1;
  int64_t other = 1;
  for (int k = 1; k < loop->rank; k++)
    if (k != p) other *= loop->shape[k];
  plan->blocks = plan->tiles0 * plan->tiles1 * other;
  plan->grouped = tl__permute_group_plan(plan);
}

typedef struct copy_params {
  int64_t esize;
  int stream; /* contiguous rows with streaming stores */
} copy_params;

#if defined(__x86_64__) && defined(__GNUC__)
/* A contiguous row with streaming stores: the head up to the destination's next 32-byte
 * boundary and the tail by memcpy, the body as whole 32-byte vectors. */
__attribute__((target("avx2"))) static void copy_stream(char *d, const char *src, size_t bytes) {
  size_t head = (32 - (uintptr_t)d % 32) % 32;
  if (head > bytes) head = bytes;
  memcpy(d, src, head);
  size_t i = head;
  for (; i + 128 <= bytes; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *)(src + i + 96));
    _mm256_stream_si256((__m256i *)(d + i), a);
    _mm256_stream_si256((__m256i *)(d + i + 32), b);
    _mm256_stream_si256((__m256i *)(d + i + 64), c);
    _mm256_stream_si256((__m256i *)(d + i + 96), e);
  }
  for (; i + 32 <= bytes; i += 32)
    _mm256_stream_si256((__m256i *)(d + i), _mm256_loadu_si256((const __m256i *)(src + i)));
  memcpy(d + i, src + i, bytes - i);
}
#endif

static void copy_row(int64_t n, char *const *p, const int64_t *s, const void *params) {
  const copy_params *cp = (const copy_params *)params;
  const int64_t esize = cp->esize;
  if (s[0] == 1 && s[1] == 1) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cp->stream) {
      copy_stream(p[0], p[1], (size_t)(n * esize));
      return;
    }
#endif
    memcpy(p[0], p[1], (size_t)(n * esize));
    return;
  }
  char *d = p[0];
  const char *src = p[1];
  if (esize == 8) {
    for (int64_t i = 0; i < n; i++) {
      memcpy(d, src, 8);
      d += s[0] * 8;
      src += s[1] * 8;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    memcpy(d, src, (size_t)esize);
    d += s[0] * esize;
    src += s[1] * esize;
  }
}

void tl__permute_run_span(const tl__permute_plan *plan, int64_t row, int64_t i0, int64_t i1) {
  copy_params cp = {plan->loop.esize[0], plan->stream};
  tl__loop_run_span(&plan->loop, row, i0, i1, copy_row, &cp);
#if defined(__x86_64__)
  if (plan->stream) _mm_sfence();
#endif
}

void tl__permute_run(const tl__permute_plan *plan, int64_t begin, int64_t end) {
  const tl__loop *loop = &plan->loop;
  const int64_t es = loop->esize[0];
  if (!plan->tiled) {
    copy_params cp = {es, plan->stream};
    tl__loop_run(loop, begin, end, copy_row, &cp);
#if defined(__x86_64__)
    if (plan->stream) _mm_sfence(); /* streaming stores are weakly ordered: publish them */
#endif
    return;
  }
  const int p = plan->src_axis;
  const int64_t tile_rows = plan->tile1, tile_cols = plan->tile0;
  const int64_t d0 = loop->strides[0][0], s0 = loop->strides[1][0];
  const int64_t dp = loop->strides[0][p], sp = loop->strides[1][p];
  /* The tile kernels move 4-, 8- and 16-byte elements; a folded run (fold_short_run) of
   * another size goes through tile_general. */
  const int fast = d0 == 1 && sp == 1 && (es == 4 || es == 8 || es == 16);
  tile_fn kernel = !fast          ? NULL
                   : plan->stream ? tile_kernel_nt(es, plan->align64)
                                  : tile_kernel(es);
  if (plan->grouped) {
    tl__permute_group_run(plan, begin, end, tl__permute_isa());
    begin = end;
  }
  for (int64_t block = begin; block < end; block++) {
    int64_t t1 = block % plan->tiles1, rem = block / plan->tiles1;
    int64_t t0 = rem % plan->tiles0;
    rem /= plan->tiles0;
    const char *s = loop->base[1];
    char *d = loop->base[0];
    for (int k = 1; k < loop->rank; k++) {
      if (k == p) continue;
      int64_t idx = rem % loop->shape[k];
      rem /= loop->shape[k];
      s += idx * loop->strides[1][k] * es;
      d += idx * loop->strides[0][k] * es;
    }
    int64_t j0 = t0 * tile_cols, i0 = t1 * tile_rows;
    int64_t c = loop->shape[0] - j0 < tile_cols ? loop->shape[0] - j0 : tile_cols;
    int64_t r = loop->shape[p] - i0 < tile_rows ? loop->shape[p] - i0 : tile_rows;
    s += (j0 * s0 + i0 * sp) * es;
    d += (j0 * d0 + i0 * dp) * es;
    if (fast)
      kernel(r, c, s, s0, d, dp);
    else
      tile_general(es, r, c, s, sp, s0, d, dp, d0);
  }
#if defined(__x86_64__)
  if (plan->stream) _mm_sfence(); /* streaming stores are weakly ordered: publish them */
#endif
}
