/* src/kernels/permute_group.c: the permute core's path for small dense axes.
 *
 * The 2-D tiles of permute_core.c span the destination's dense axis and the source's. When
 * those axes are short (a 16^6 tensor: 128 bytes each) every tile is tiny and the copy
 * spends its time decoding tile indices and touching a new page per row. Here a tile spans
 * axis groups instead: D, the destination's dense axis followed by the axes over which the
 * destination stays contiguous, and S, the same chain for the source. Each group is whole
 * axes and a range of its last one, up to GROUP_D_BYTES of contiguous destination and
 * GROUP_S_BYTES of contiguous source. Inside a tile, element (r, c) (r over S, c over D) is
 * read at src + r + col_off[c] and written at dst + c + row_off[r], with both offset tables
 * made once per plan, so a tile is a transpose whose rows and columns are found by table
 * instead of by one stride, done in 8 x 8 micro-tiles (whole cache lines) with no index
 * arithmetic (4 x 4 for 16-byte elements, also one line each way). Tiles are walked along
 * the source chain first, so its reads continue where the previous tile stopped.
 *
 * A tile's source columns are short runs (at most GROUP_S_BYTES) scattered over the source,
 * too short for the hardware prefetchers to follow, so the kernels ask for the columns
 * GROUP_PREFETCH_COLS ahead while they move the current ones.
 *
 * Pure core: never fails, allocates nothing; moves bits only (integer or vector moves). */
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "transpose512.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define GROUP_D_BYTES 2048 /* contiguous destination per tile row */
#define GROUP_S_BYTES 256  /* contiguous source per tile column */
/* 512 had beaten 256 with the AVX2 kernels' earlier block order (alternated in one process
 * on 16^6 (5,3,1,4,2,0), medians of 11: 1.12x, 1.20x, 1.00x). After the blocks were
 * reordered and the AVX-512 kernels added, 256 beat 512 and 128 in the same probe on Zen 5
 * (medians of 15 against a copy, three runs each): AVX-512 1.00/1.10/0.68 against
 * 0.67/0.72/0.51, AVX2 0.57-0.77 against 0.47-0.52. */

#define GROUP_PREFETCH_COLS 16 /* source columns asked for ahead of the ones being moved */
/* Alternated in one process against a 2-thread copy of the same bytes (medians of 15, Zen 5,
 * 2026-12-04), f64 over 16, 8 and 32 columns ahead and none: 16^6 (5,3,1,4,2,0) 0.74-0.77
 * -> 0.85, 16^6 (5,4,3,2,1,0) 0.69-0.70 -> 0.74, 32^5 (4,2,0,3,1) 0.46-0.48 -> 0.56, 16^6
 * (1,0,3,2,5,4) 0.61-0.65 -> 0.67 of the copy; 8 ahead read about the same, 32 less. */

/* Grow a group from `first`: whole axes while the chain stays contiguous in operand `op`
 * and under `cap_bytes`, then a range of the next. Fills axes/count/len; returns the
 * group's element count per tile. `taken` marks axes another group holds. */
static int64_t grow(const tl__loop *loop, int op, int first, int64_t cap_bytes, const int *taken,
                    int *axes, int *count, int64_t *len) {
  const int64_t es = loop->esize[0];
  int64_t prod = 1;
  int cur = first;
  *count = 0;
  for (;;) {
    int64_t room = cap_bytes / (es * prod);
    axes[(*count)++] = cur;
    if (loop->shape[cur] > room) {
      *len = room > 1 ? room : 1;
      return prod * *len;
    }
    prod *= loop->shape[cur];
    *len = loop->shape[cur];
    /* the next axis of the chain: stride = this stride * this extent (both operands are
     * validated: (extent - 1) x stride and one more stride lie in the span, < 2^61 each) */
    int64_t want = loop->strides[op][cur] * loop->shape[cur];
    int next = -1;
    for (int k = 0; k < loop->rank; k++)
      if (!taken[k] && k != cur && loop->strides[op][k] == want) next = k;
    for (int j = 0; j < *count; j++)
      if (axes[j] == next) next = -1;
    if (next < 0 || prod * 2 * es > cap_bytes) return prod;
    cur = next;
  }
}

/* Offsets in operand `op` of the group's first `count` elements (column-major over its
 * axes, the last one cut at len). */
static void offsets(const tl__loop *loop, int op, const int *axes, int n_axes, int64_t count,
                    int64_t *out) {
  for (int64_t e = 0; e < count; e++) {
    int64_t rem = e, off = 0;
    for (int j = 0; j + 1 < n_axes; j++) {
      off += rem % loop->shape[axes[j]] * loop->strides[op][axes[j]];
      rem /= loop->shape[axes[j]];
    }
    out[e] = off + rem * loop->strides[op][axes[n_axes - 1]];
  }
}

int tl__permute_group_plan(tl__permute_plan *plan) {
  const tl__loop *loop = &plan->loop;
  tl__permute_group *g = &plan->group;
  const int p = plan->src_axis;
  const int64_t es = loop->esize[0];
  if (loop->strides[0][0] != 1 || loop->strides[1][p] != 1) return 0;
  /* Only when a 2-D tile would be cut short by an axis's extent. */
  if (loop->shape[0] * es >= GROUP_D_BYTES && loop->shape[p] * es >= GROUP_S_BYTES) return 0;
  int taken[TL_MAX_RANK] = {0};
  taken[p] = 1;
  g->cols = grow(loop, 0, 0, GROUP_D_BYTES, taken, g->d_axes, &g->nd, &g->d_len);
  for (int j = 0; j < g->nd; j++) taken[g->d_axes[j]] = 1;
  taken[p] = 0;
  g->rows = grow(loop, 1, p, GROUP_S_BYTES, taken, g->s_axes, &g->ns, &g->s_len);
  if (g->nd < 2 && g->ns < 2) return 0; /* the 2-D tiles are this already */
  for (int j = 0; j < g->ns; j++) taken[g->s_axes[j]] = 1;
  int d_last = g->d_axes[g->nd - 1], s_last = g->s_axes[g->ns - 1];
  g->d_tiles = (loop->shape[d_last] + g->d_len - 1) / g->d_len;
  g->s_tiles = (loop->shape[s_last] + g->s_len - 1) / g->s_len;
  g->n_other = 0;
  int64_t other = 1;
  for (int k = 0; k < loop->rank; k++) {
    if (taken[k]) continue;
    g->other_axes[g->n_other++] = k;
    other *= loop->shape[k];
  }
  offsets(loop, 1, g->d_axes, g->nd, g->cols, g->col_off);
  offsets(loop, 0, g->s_axes, g->ns, g->rows, g->row_off);
  plan->blocks = g->s_tiles * g->d_tiles * other;
  /* Streaming stores need every micro-tile row 32-byte aligned (AVX2), or 64 (AVX-512):
   * plan_make checked the base and every destination step; here the tile starts along D. */
  plan->stream = plan->stream && (g->cols * es) % 32 == 0;
  plan->align64 = plan->stream && plan->align64 && (g->cols * es) % 64 == 0;
  return 1;
}

/* ---- tile kernels: dst[c + row_off[r]] = src[r + col_off[c]] --------------------------- */

#define TL__GROUP_SCALAR(NAME, T)                                                         \
  static void NAME(int64_t r0, int64_t r1, int64_t c0, int64_t c1, const char *src_bytes, \
                   const int64_t *col_off, char *dst_bytes, const int64_t *row_off) {     \
    const T *src = (const T *)src_bytes;                                                  \
    T *dst = (T *)dst_bytes;                                                              \
    for (int64_t r = r0; r < r1; r++) {                                                   \
      T *d = dst + row_off[r];                                                            \
      for (int64_t c = c0; c < c1; c++) d[c] = src[r + col_off[c]];                       \
    }                                                                                     \
  }

typedef struct tl__g16 {
  uint64_t lo, hi;
} tl__g16;

TL__GROUP_SCALAR(group_scalar4, uint32_t)
TL__GROUP_SCALAR(group_scalar8, uint64_t)
TL__GROUP_SCALAR(group_scalar16, tl__g16)

/* Portable: the scalar kernel over the whole tile. */
static void group_portable(int64_t es, int64_t rows, int64_t cols, const char *src,
                           const int64_t *col_off, char *dst, const int64_t *row_off) {
  if (es == 4)
    group_scalar4(0, rows, 0, cols, src, col_off, dst, row_off);
  else if (es == 8)
    group_scalar8(0, rows, 0, cols, src, col_off, dst, row_off);
  else if (es == 16)
    group_scalar16(0, rows, 0, cols, src, col_off, dst, row_off);
  else /* a folded run (permute_core.c's fold_short_run): offsets count whole elements */
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++)
        memcpy(dst + (c + row_off[r]) * es, src + (r + col_off[c]) * es, (size_t)es);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* 4 x 4 doubles: rows r..r+3 of columns s0..s3 (each contiguous along r) to columns
 * c..c+3 of rows d0..d3 (each contiguous along c). */
#define TL__G4X4(NAME, STORE)                                                             \
  __attribute__((target("avx2"), always_inline)) static inline void NAME(                 \
      const double *s0, const double *s1, const double *s2, const double *s3, double *d0, \
      double *d1, double *d2, double *d3) {                                               \
    __m256d x0 = _mm256_loadu_pd(s0), x1 = _mm256_loadu_pd(s1);                           \
    __m256d x2 = _mm256_loadu_pd(s2), x3 = _mm256_loadu_pd(s3);                           \
    __m256d t0 = _mm256_unpacklo_pd(x0, x1), t1 = _mm256_unpackhi_pd(x0, x1);             \
    __m256d t2 = _mm256_unpacklo_pd(x2, x3), t3 = _mm256_unpackhi_pd(x2, x3);             \
    STORE(d0, _mm256_permute2f128_pd(t0, t2, 0x20));                                      \
    STORE(d1, _mm256_permute2f128_pd(t1, t3, 0x20));                                      \
    STORE(d2, _mm256_permute2f128_pd(t0, t2, 0x31));                                      \
    STORE(d3, _mm256_permute2f128_pd(t1, t3, 0x31));                                      \
  }
TL__G4X4(g4x4, _mm256_storeu_pd)
TL__G4X4(g4x4_nt, _mm256_stream_pd)

/* One 8 x 8 micro-tile of 8-byte elements: rows r..r+7 of the source columns s[0..7] to
 * columns c..c+7 of destination rows r..r+7 (at dst + row_off[r + q]). AVX2 as four 4 x 4
 * blocks; AVX-512 as one register transpose, each destination line one store (the
 * streaming variant needs every destination row 64-byte aligned). */
#define TL__BLOCK8_AVX2(NAME, G4)                                                            \
  __attribute__((target("avx2"), always_inline)) static inline void NAME(                    \
      const double *const *s, int64_t r, double *dst, const int64_t *row_off, int64_t c) {   \
    double *d[8];                                                                            \
    for (int q = 0; q < 8; q++) d[q] = dst + row_off[r + q] + c;                             \
    G4(s[0] + r, s[1] + r, s[2] + r, s[3] + r, d[0], d[1], d[2], d[3]);                      \
    G4(s[0] + r + 4, s[1] + r + 4, s[2] + r + 4, s[3] + r + 4, d[4], d[5], d[6], d[7]);      \
    G4(s[4] + r, s[5] + r, s[6] + r, s[7] + r, d[0] + 4, d[1] + 4, d[2] + 4, d[3] + 4);      \
    G4(s[4] + r + 4, s[5] + r + 4, s[6] + r + 4, s[7] + r + 4, d[4] + 4, d[5] + 4, d[6] + 4, \
       d[7] + 4);                                                                            \
  }
TL__BLOCK8_AVX2(block8_avx2, g4x4)
TL__BLOCK8_AVX2(block8_avx2_nt, g4x4_nt)

/* AVX-512: an L x L micro-tile of UNITS doubles per element is one register transpose, each
 * destination line one store (the streaming variant needs every destination row 64-byte
 * aligned). */
#define TL__BLOCK_AVX512(NAME, L, UNITS, TRANSPOSE, STORE)                                 \
  __attribute__((target("avx512f"), always_inline)) static inline void NAME(               \
      const double *const *s, int64_t r, double *dst, const int64_t *row_off, int64_t c) { \
    __m512d x[L];                                                                          \
    for (int q = 0; q < (L); q++) x[q] = _mm512_loadu_pd(s[q] + (UNITS)*r);                \
    TRANSPOSE(x);                                                                          \
    for (int q = 0; q < (L); q++) STORE(dst + (UNITS) * (row_off[r + q] + c), x[q]);       \
  }
TL__BLOCK_AVX512(block8_avx512, 8, 1, tl__transpose8x8_pd512, _mm512_storeu_pd)
TL__BLOCK_AVX512(block8_avx512_nt, 8, 1, tl__transpose8x8_pd512, _mm512_stream_pd)

/* Asks for the source lines of the `n` columns from c on (each `bytes` long) to be brought
 * into the cache. */
__attribute__((always_inline)) static inline void prefetch_columns(const char *src, int64_t es,
                                                                   const int64_t *col_off,
                                                                   int64_t c, int n,
                                                                   int64_t bytes) {
  for (int q = 0; q < n; q++) {
    const char *first = src + col_off[c + q] * es;
    const char *line = (const char *)((uintptr_t)first & ~(uintptr_t)63);
    for (; line < first + bytes; line += 64) _mm_prefetch(line, _MM_HINT_T0);
  }
}

/* A tile of ES-byte elements (8 or 16) in L x L micro-tiles (one 64-byte line each way) by
 * BLOCK, asking for the source columns GROUP_PREFETCH_COLS ahead; fringes by SCALAR. Source
 * and destination pointers are in doubles, ES / 8 per element. */
#define TL__GROUP(NAME, ISA, L, ES, BLOCK, SCALAR)                                                 \
  __attribute__((target(ISA))) static void NAME(int64_t rows, int64_t cols, const char *src_bytes, \
                                                const int64_t *col_off, char *dst_bytes,           \
                                                const int64_t *row_off) {                          \
    const double *src = (const double *)src_bytes;                                                 \
    double *dst = (double *)dst_bytes;                                                             \
    const int64_t rf = rows / (L) * (L), cf = cols / (L) * (L);                                    \
    for (int64_t c = 0; c < cf; c += (L)) {                                                        \
      const double *s[L];                                                                          \
      for (int q = 0; q < (L); q++) s[q] = src + (ES) / 8 * col_off[c + q];                        \
      if (c + GROUP_PREFETCH_COLS + (L) <= cols)                                                   \
        prefetch_columns(src_bytes, (ES), col_off, c + GROUP_PREFETCH_COLS, (L), rows * (ES));     \
      for (int64_t r = 0; r < rf; r += (L)) BLOCK(s, r, dst, row_off, c);                          \
    }                                                                                              \
    if (rf < rows) SCALAR(rf, rows, 0, cols, src_bytes, col_off, dst_bytes, row_off);              \
    if (cf < cols) SCALAR(0, rf, cf, cols, src_bytes, col_off, dst_bytes, row_off);                \
  }
TL__GROUP(group8_avx2, "avx2", 8, 8, block8_avx2, group_scalar8)
TL__GROUP(group8_avx2_nt, "avx2", 8, 8, block8_avx2_nt, group_scalar8)
TL__GROUP(group8_avx512, "avx512f", 8, 8, block8_avx512, group_scalar8)
TL__GROUP(group8_avx512_nt, "avx512f", 8, 8, block8_avx512_nt, group_scalar8)

/* One 4 x 4 micro-tile of 16-byte elements (complex doubles; pointers in doubles, two per
 * element): rows r..r+3 of the source columns s[0..3], one 64-byte line each, to columns
 * c..c+3 of destination rows r..r+3. AVX2 as four 2 x 2 blocks of 128-bit lanes; AVX-512 as
 * one register transpose, each destination line one store. */
#define TL__BLOCK4C_AVX2(NAME, STORE)                                                          \
  __attribute__((target("avx2"), always_inline)) static inline void NAME(                      \
      const double *const *s, int64_t r, double *dst, const int64_t *row_off, int64_t c) {     \
    for (int bi = 0; bi < 4; bi += 2)                                                          \
      for (int bj = 0; bj < 4; bj += 2) {                                                      \
        __m256d x0 = _mm256_loadu_pd(s[bj] + 2 * (r + bi));                                    \
        __m256d x1 = _mm256_loadu_pd(s[bj + 1] + 2 * (r + bi));                                \
        STORE(dst + 2 * (row_off[r + bi] + c + bj), _mm256_permute2f128_pd(x0, x1, 0x20));     \
        STORE(dst + 2 * (row_off[r + bi + 1] + c + bj), _mm256_permute2f128_pd(x0, x1, 0x31)); \
      }                                                                                        \
  }
TL__BLOCK4C_AVX2(block4c_avx2, _mm256_storeu_pd)
TL__BLOCK4C_AVX2(block4c_avx2_nt, _mm256_stream_pd)

TL__BLOCK_AVX512(block4c_avx512, 4, 2, tl__transpose4x4_c512, _mm512_storeu_pd)
TL__BLOCK_AVX512(block4c_avx512_nt, 4, 2, tl__transpose4x4_c512, _mm512_stream_pd)

TL__GROUP(group16_avx2, "avx2", 4, 16, block4c_avx2, group_scalar16)
TL__GROUP(group16_avx2_nt, "avx2", 4, 16, block4c_avx2_nt, group_scalar16)
TL__GROUP(group16_avx512, "avx512f", 4, 16, block4c_avx512, group_scalar16)
TL__GROUP(group16_avx512_nt, "avx512f", 4, 16, block4c_avx512_nt, group_scalar16)
#endif

typedef void (*group_fn)(int64_t rows, int64_t cols, const char *src, const int64_t *col_off,
                         char *dst, const int64_t *row_off);

/* The SIMD kernel for this element size, instruction set and store kind, or NULL for the
 * portable one. The AVX-512 streaming kernels need 64-byte aligned rows (else AVX2's). */
static group_fn group_kernel(int64_t es, int isa, int stream, int align64) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (es != 8 && es != 16) return NULL;
  if (isa >= TL__ISA_AVX512 && (!stream || align64)) {
    if (es == 8) return stream ? group8_avx512_nt : group8_avx512;
    return stream ? group16_avx512_nt : group16_avx512;
  }
  if (isa >= TL__ISA_AVX2) {
    if (es == 8) return stream ? group8_avx2_nt : group8_avx2;
    return stream ? group16_avx2_nt : group16_avx2;
  }
#else
  (void)es, (void)isa, (void)stream, (void)align64;
#endif
  return NULL;
}

void tl__permute_group_run(const tl__permute_plan *plan, int64_t begin, int64_t end, int isa) {
  const tl__loop *loop = &plan->loop;
  const tl__permute_group *g = &plan->group;
  const int64_t es = loop->esize[0];
  const int d_last = g->d_axes[g->nd - 1], s_last = g->s_axes[g->ns - 1];
  const int64_t rows_per_unit = g->rows / g->s_len, cols_per_unit = g->cols / g->d_len;
  const group_fn kernel = group_kernel(es, isa, plan->stream, plan->align64);
  for (int64_t block = begin; block < end; block++) {
    int64_t ts = block % g->s_tiles, rem = block / g->s_tiles;
    int64_t td = rem % g->d_tiles;
    rem /= g->d_tiles;
    const char *s = loop->base[1];
    char *d = loop->base[0];
    for (int j = 0; j < g->n_other; j++) {
      int k = g->other_axes[j];
      int64_t idx = rem % loop->shape[k];
      rem /= loop->shape[k];
      s += idx * loop->strides[1][k] * es;
      d += idx * loop->strides[0][k] * es;
    }
    int64_t i0 = ts * g->s_len, j0 = td * g->d_len;
    int64_t s_n = loop->shape[s_last] - i0 < g->s_len ? loop->shape[s_last] - i0 : g->s_len;
    int64_t d_n = loop->shape[d_last] - j0 < g->d_len ? loop->shape[d_last] - j0 : g->d_len;
    s += (i0 * loop->strides[1][s_last] + j0 * loop->strides[1][d_last]) * es;
    d += (i0 * loop->strides[0][s_last] + j0 * loop->strides[0][d_last]) * es;
    int64_t rows = rows_per_unit * s_n, cols = cols_per_unit * d_n;
    if (kernel != NULL)
      kernel(rows, cols, s, g->col_off, d, g->row_off);
    else
      group_portable(es, rows, cols, s, g->col_off, d, g->row_off);
  }
}
