/* src/kernels/permute_core.c: the permute (strided copy) core and its transpose tile.
 *
 * The plan orders the axes by the destination's strides. When the source's densest axis
 * is the destination's too, the copy runs row by row (a contiguous copy when both are
 * unit-stride). Otherwise it is tiled over the two dense axes: a tile is one cache line
 * of the source's dense axis (64 bytes: 8 doubles) by TILE_COLS elements of the
 * destination's, walked column block by column block, so each source line is used fully
 * when it is loaded and the destination is written as a few sequential streams. This
 * order also keeps a power-of-two leading dimension from thrashing one cache set: at any
 * moment only a line per destination row (8 for doubles) and the 4-8 source lines of one
 * micro-tile are live, under the 12 ways of the L1.
 *
 * Invariant: the micro-kernels move bits (integer or vector moves), never arithmetic, so
 * a copy is exact for every value, NaN payloads included. No index arithmetic in the
 * inner loops: pointers advance by precomputed strides. */
#include <stdint.h>
#include <string.h>

#include "kernels.h"

TL__HOT_FILE

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define TILE_LINE_BYTES 64
#define TILE_COLS 64

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

/* ---- AVX2 micro-kernels ---------------------------------------------------------------- */
#if defined(__x86_64__) && defined(__GNUC__)

__attribute__((target("avx2"))) static void tile8_avx2(int64_t r, int64_t c,
                                                       const char *src_bytes, int64_t ss,
                                                       char *dst_bytes, int64_t ds) {
  const double *src = (const double *)src_bytes;
  double *dst = (double *)dst_bytes;
  const int64_t ss4 = 4 * ss, ds4 = 4 * ds;
  int64_t j = 0;
  for (; j + 4 <= c; j += 4) {
    /* four source rows j..j+3 (each contiguous in i), all of r consumed now */
    const double *s = src;
    double *d = dst;
    int64_t i = 0;
    for (; i + 4 <= r; i += 4) {
      __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss);
      __m256d r2 = _mm256_loadu_pd(s + 2 * ss), r3 = _mm256_loadu_pd(s + 3 * ss);
      __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
      s += 4;
      d += ds4;
    }
    for (; i < r; i++) {
      d[0] = s[0];
      d[1] = s[ss];
      d[2] = s[2 * ss];
      d[3] = s[3 * ss];
      s += 1;
      d += ds;
    }
    src += ss4;
    dst += 4;
  }
  if (j < c) tile_scalar8(r, c - j, (const char *)src, ss, (char *)dst, ds);
}

__attribute__((target("avx2"))) static void tile4_avx2(int64_t r, int64_t c,
                                                       const char *src_bytes, int64_t ss,
                                                       char *dst_bytes, int64_t ds) {
  const float *src = (const float *)src_bytes;
  float *dst = (float *)dst_bytes;
  const int64_t ss8 = 8 * ss, ds8 = 8 * ds;
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) {
    const float *s = src;
    float *d = dst;
    int64_t i = 0;
    for (; i + 8 <= r; i += 8) {
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
      s += 8;
      d += ds8;
    }
    if (i < r) tile_scalar4(r - i, 8, (const char *)s, ss, (char *)d, ds);
    src += ss8;
    dst += 8;
  }
  if (j < c) tile_scalar4(r, c - j, (const char *)src, ss, (char *)dst, ds);
}

__attribute__((target("avx2"))) static void tile16_avx2(int64_t r, int64_t c,
                                                        const char *src_bytes, int64_t ss,
                                                        char *dst_bytes, int64_t ds) {
  /* 16-byte elements: a 2x2 transpose of 256-bit rows. */
  const double *src = (const double *)src_bytes; /* two doubles per element */
  double *dst = (double *)dst_bytes;
  const int64_t ess = 2 * ss, eds = 2 * ds;
  int64_t j = 0;
  for (; j + 2 <= c; j += 2) {
    const double *s = src;
    double *d = dst;
    int64_t i = 0;
    for (; i + 2 <= r; i += 2) {
      __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ess);
      _mm256_storeu_pd(d, _mm256_permute2f128_pd(r0, r1, 0x20));
      _mm256_storeu_pd(d + eds, _mm256_permute2f128_pd(r0, r1, 0x31));
      s += 4;
      d += 2 * eds;
    }
    if (i < r) tile_scalar16(r - i, 2, (const char *)s, ss, (char *)d, ds);
    src += 2 * ess;
    dst += 4;
  }
  if (j < c) tile_scalar16(r, c - j, (const char *)src, ss, (char *)dst, ds);
}
#endif

typedef void (*tile_fn)(int64_t r, int64_t c, const char *src, int64_t ss, char *dst, int64_t ds);

static tile_fn tile_kernel(int64_t esize) {
#if defined(__x86_64__) && defined(__GNUC__)
  static int have_avx2 = -1;
  if (have_avx2 < 0) { /* benign race: every thread computes the same value */
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  if (have_avx2) return esize == 4 ? tile4_avx2 : esize == 8 ? tile8_avx2 : tile16_avx2;
#endif
  return esize == 4 ? tile_scalar4 : esize == 8 ? tile_scalar8 : tile_scalar16;
}

void tl__transpose_tile(int64_t esize, int64_t r, int64_t c, const char *src, int64_t ss,
                        char *dst, int64_t ds) {
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

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

void tl__permute_plan_make(tl__permute_plan *plan, const tl_tensor *dst, const tl_tensor *src) {
  const tl_tensor *ts[2] = {dst, src};
  memset(plan, 0, sizeof *plan);
  tl__loop_plan(&plan->loop, 2, ts);
  const tl__loop *loop = &plan->loop;
  plan->tiled = 0;
  plan->blocks = loop->rows;
  if (loop->rank < 2 || loop->inner == 0) return;
  /* The loop axis along which src is densest. */
  int p = -1;
  for (int k = 0; k < loop->rank; k++) {
    if (loop->strides[1][k] == 0) continue; /* a broadcast axis is never dense */
    if (p < 0 || abs64(loop->strides[1][k]) < abs64(loop->strides[1][p])) p = k;
  }
  if (p <= 0 || abs64(loop->strides[1][0]) <= 1) return;
  plan->tiled = 1;
  plan->src_axis = p;
  int64_t tile_rows = TILE_LINE_BYTES / loop->esize[0];
  if (tile_rows < 2) tile_rows = 2;
  plan->tiles0 = (loop->shape[0] + TILE_COLS - 1) / TILE_COLS;
  plan->tiles1 = (loop->shape[p] + tile_rows - 1) / tile_rows;
  int64_t other = 1;
  for (int k = 1; k < loop->rank; k++)
    if (k != p) other *= loop->shape[k];
  plan->blocks = plan->tiles0 * plan->tiles1 * other;
}

static void copy_row(int64_t n, char *const *p, const int64_t *s, const void *params) {
  const int64_t esize = *(const int64_t *)params;
  if (s[0] == 1 && s[1] == 1) {
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

void tl__permute_run(const tl__permute_plan *plan, int64_t begin, int64_t end) {
  const tl__loop *loop = &plan->loop;
  const int64_t es = loop->esize[0];
  if (!plan->tiled) {
    tl__loop_run(loop, begin, end, copy_row, &es);
    return;
  }
  const int p = plan->src_axis;
  const int64_t tile_rows = TILE_LINE_BYTES / es < 2 ? 2 : TILE_LINE_BYTES / es;
  const int64_t d0 = loop->strides[0][0], s0 = loop->strides[1][0];
  const int64_t dp = loop->strides[0][p], sp = loop->strides[1][p];
  const int fast = d0 == 1 && sp == 1;
  tile_fn kernel = tile_kernel(es);
  for (int64_t block = begin; block < end; block++) {
    int64_t t0 = block % plan->tiles0, rem = block / plan->tiles0;
    int64_t t1 = rem % plan->tiles1;
    rem /= plan->tiles1;
    const char *s = loop->base[1];
    char *d = loop->base[0];
    for (int k = 1; k < loop->rank; k++) {
      if (k == p) continue;
      int64_t idx = rem % loop->shape[k];
      rem /= loop->shape[k];
      s += idx * loop->strides[1][k] * es;
      d += idx * loop->strides[0][k] * es;
    }
    int64_t j0 = t0 * TILE_COLS, i0 = t1 * tile_rows;
    int64_t c = loop->shape[0] - j0 < TILE_COLS ? loop->shape[0] - j0 : TILE_COLS;
    int64_t r = loop->shape[p] - i0 < tile_rows ? loop->shape[p] - i0 : tile_rows;
    s += (j0 * s0 + i0 * sp) * es;
    d += (j0 * d0 + i0 * dp) * es;
    if (fast)
      kernel(r, c, s, s0, d, dp);
    else
      tile_general(es, r, c, s, sp, s0, d, dp, d0);
  }
}
