/* src/kernels/gemm_packed_complex.c: complex GEMMs (c64, c128) past the tiny kernel's reach,
 * computed by tenlane's own cache-blocked kernel on CPUs with AVX-512F.
 *
 * Why: BLIS 0.9 has no AVX-512 complex micro-kernel, so it runs complex products through its
 * induced method 1m, as real products of twice the size on the skx kernels. On Zen 4 that
 * left c64 GEMM at n = 256 at 1.04-1.07x OpenBLAS serial's cgemm time, and c128 at
 * 1.00-1.04x its zgemm time. The kernel here keeps the numbers interleaved, as the tiny
 * kernel does (gemm_small_complex.c), and adds the blocking a large product needs.
 *
 * How: n is cut into blocks of NC = 1920 columns and k into chunks of KC. The chunk of a
 * column block of B (KC x 1920) is copied into a packed buffer in groups of NR = 6 columns,
 * each group stored k after k (all at once, or, where B's columns run along k, each group just
 * before the first block of A's rows meets it); each block of MC rows of A (MC x KC) is packed, MR
 * rows after MR rows, k after k (lines that run along k are transposed four by four in registers,
 * pack_lines_c128 / pack_lines_c64), and stays in L2 while every column group of B runs against it
 * (a group, KC x 6, stays in L1 while the row groups of A stream past). The micro-kernel holds an
 * MR x 6 tile of C in 24 registers: for each k (unrolled by four) it loads two registers of A (MR
 * complex numbers) and, for each of the six columns, multiplies them by the broadcast real part of
 * B into one accumulator pair and by the broadcast imaginary part into another. The end of the tile
 * combines the two pairs with one swap and one fmaddsub (re = ar br - ai bi, im = ai br + ar bi),
 * applies alpha, and adds beta C (the first k chunk) or C (the later ones). Rows past m are zero in
 * the packed A and masked on store; columns past n are zero in the packed B and not stored. A last
 * row group of at most one register of rows runs a half tile (12 accumulators, half the work), and
 * every tile asks for its lines of C before its k loop, so that a short k waits less for them at
 * the end.
 *
 * Blocks (KC, MC, NC): first measured on Zen 4 against OpenBLAS serial (a probe alternating
 * the two, medians of 31, n = 256 and 1024): KC 256 for both; c64 MC 144; NC 480 (120 and
 * 240 lost 2-10% at n = 1024). On a Xeon with AVX-512 and 2 MiB of L2 per core (2026-12-06,
 * a probe alternating this kernel's variants and OpenBLAS's SkylakeX kernels in one
 * process, medians of 15, m, n, k of 512-1000), NC 480 packed A's block again for every 480
 * columns, and those strided copies took a tenth of a c128 product: NC 1920 with c128 MC 144
 * (was 48) took c128 from 1.05-1.13x OpenBLAS's time to 0.98-1.05x, and c64 from 0.99-1.03x
 * to 0.94-0.99x. KC 96-384 and c64 MC 288 read within the noise there. When k is shorter
 * than KC, a block takes more rows (MC x KC numbers in all), so the tiles walk longer runs of
 * C's columns.
 *
 * Contract: C = alpha A B + beta C for c64/c128 with alpha != 0 and m, n, k > 0; A and B
 * with any strides, C with a unit row or a unit column stride (C^T = B^T A^T takes the
 * second). beta 0 never reads C; elements of C outside the m x n block are never read or
 * written. `pack` is caller-owned scratch of tl__gemm_packed_complex_bytes(dtype, m, n, k)
 * bytes (at most 8.1 MiB), 64-byte aligned, used by one call at a time. Sums run in a different
 * order from BLIS's, so results differ from it in the last bits; a given shape gives the same bits
 * on every call on a given CPU. Pure: no allocation, no shared state, thread-safe. */
#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define NR 6
#define NC_COLS 1920
#define KC_C64 256
#define MC_C64 144
#define KC_C128 256
#define MC_C128 144

static int64_t round_up(int64_t x, int64_t step) { return (x + step - 1) / step * step; }
static int64_t at_most(int64_t x, int64_t bound) { return x < bound ? x : bound; }

/* The rows of A one packed block holds when k runs in chunks of kc: MC rows at a whole
 * chunk of KC, more when k is shorter (the block keeps MC x KC numbers), so that a short
 * product walks longer runs of C's columns. A multiple of mr. */
static int64_t block_rows(int64_t kc, int64_t KC, int64_t MC, int64_t mr) {
  const int64_t rows = MC * KC / (kc > 0 ? kc : 1) / mr * mr;
  return rows > mr ? rows : mr;
}

size_t tl__gemm_packed_complex_bytes(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  /* m and n may trade places (C^T = B^T A^T), so both blocks are sized for the larger. */
  const int64_t mn = m > n ? m : n, es = (int64_t)tl_dtype_size(dtype);
  const int64_t mr = dtype == TL_C64 ? 16 : 8, mc = dtype == TL_C64 ? MC_C64 : MC_C128;
  const int64_t KC = dtype == TL_C64 ? KC_C64 : KC_C128, kc = at_most(k, KC);
  const int64_t rows = at_most(round_up(mn, mr), block_rows(kc, KC, mc, mr));
  const int64_t cols = at_most(round_up(mn, NR), NC_COLS);
  return (size_t)(es * kc * (rows + cols));
}

int tl__gemm_packed_complex_takes(int enabled, tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  if (!enabled || (dtype != TL_C64 && dtype != TL_C128)) return 0;
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  /* The tiny kernel has no packing to pay for; it stays the better one in its reach. */
  if (tl__i64_mul3_sat(m, n, k) <= TL__SMALL_COMPLEX_MNK) return 0;
  /* c128 with a short k and a C wide both ways ran 4-16% faster on BLIS (k 8-64, m = n
   * 200-2000, Zen 4); a narrow C, or k from 96 on, ran faster here. */
  return !(dtype == TL_C128 && k < 96 && m > 160 && n > 160);
}

/* The rows x cols corner (rows <= R LANES, cols <= W) of one tile of C at c (column stride
 * ldc), from a packed row group of A (2 LANES rows per k, of which the first R LANES are read)
 * and a packed column group of B (NR columns per k, of which the first W are read). R = 2,
 * W = NR is the full tile; R = 1 serves a last row group of at most LANES rows, and W = 2 or
 * 4 a last column group that narrow, each at that share of the work. */
#define TL__PACKED_TILE(TILE, R, W, T, V, MASK, LANES, SET1, LOADU, MASK_STOREU, FMADD, ZERO,     \
                        FINISH, SCALE)                                                            \
  __attribute__((target("avx512f"))) static void TILE(int64_t kc, const T *pa, const T *pb, T *c, \
                                                      int64_t ldc, int64_t rows, int64_t cols,    \
                                                      const SCALE *s) {                           \
    /* The tiles run down C's columns: ask for the next tile's lines of C now, so that a short    \
     * k loop does not wait for them (prefetches never fault, past C's end included). */          \
    for (int64_t u = 0; u < cols; u++)                                                            \
      for (int q = 0; q < 2; q++)                                                                 \
        _mm_prefetch((const char *)(c + 2 * (u * ldc + q * LANES)), _MM_HINT_T0);                 \
    V acc_r[W][R], acc_i[W][R];                                                                   \
    for (int u = 0; u < (W); u++)                                                                 \
      for (int q = 0; q < (R); q++) acc_r[u][q] = acc_i[u][q] = ZERO();                           \
    _Pragma("GCC unroll 4") for (int64_t p = 0; p < kc; p++, pa += 4 * LANES, pb += 2 * NR) {     \
      V av[R];                                                                                    \
      for (int q = 0; q < (R); q++) av[q] = LOADU(pa + 2 * LANES * q);                            \
      for (int u = 0; u < (W); u++) {                                                             \
        const V br = SET1(pb[2 * u]);                                                             \
        for (int q = 0; q < (R); q++) acc_r[u][q] = FMADD(av[q], br, acc_r[u][q]);                \
        const V bi = SET1(pb[2 * u + 1]);                                                         \
        for (int q = 0; q < (R); q++) acc_i[u][q] = FMADD(av[q], bi, acc_i[u][q]);                \
      }                                                                                           \
    }                                                                                             \
    MASK mask[R];                                                                                 \
    for (int q = 0; q < (R); q++) {                                                               \
      const int64_t left = rows - q * LANES, here = left < 0 ? 0 : left < LANES ? left : LANES;   \
      mask[q] = (MASK)(((uint32_t)1 << (2 * here)) - 1u);                                         \
    }                                                                                             \
    /* A whole group of columns stores in one unrolled pass (the accumulators stay in             \
     * registers; a loop that may stop early made the compiler spill them first). */              \
    const int64_t stored = cols < (W) ? cols : (W);                                               \
    _Pragma("GCC unroll 6") for (int u = 0; u < (W); u++) for (int q = 0; q < (R); q++) {         \
      T *z = c + 2 * (u * ldc + q * LANES);                                                       \
      if (stored == (W) || u < stored)                                                            \
        MASK_STOREU(z, mask[q], FINISH(acc_r[u][q], acc_i[u][q], s, mask[q], z));                 \
    }                                                                                             \
  }

/* The tiles of R registers of rows, in the three widths. */
#define TL__PACKED_TILE_WIDTHS(NAME, R, ...)             \
  TL__PACKED_TILE(NAME##_tile##R##x2, R, 2, __VA_ARGS__) \
  TL__PACKED_TILE(NAME##_tile##R##x4, R, 4, __VA_ARGS__) \
  TL__PACKED_TILE(NAME##_tile##R##x6, R, 6, __VA_ARGS__)

#if TL_X86_KERNELS
/* Lines [0, lines) of a c128 panel whose numbers run contiguous along k (kstep 1; line r
 * starts `step` numbers after line r - 1) into groups of `width` numbers per k at out, as
 * NAME##_pack below lays them out. Four k at a time, the lines go four at a time (a 4 x 4
 * transpose of 128-bit lanes: four loads, eight shuffles, four stores), then two, then one.
 * The numbers are moved, never computed on. Returns 1 (the panel is packed). */
__attribute__((target("avx512f"))) static int pack_lines_c128(int64_t width, int64_t lines,
                                                              int64_t kc, const double *x,
                                                              int64_t step, double *out) {
  const int64_t row = 2 * width; /* doubles per k in out */
  const int64_t s2 = 2 * step;   /* doubles between lines */
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    double *o = out + p * row;
    const double *v = x + 2 * p;
    int64_t r = 0;
    for (; r + 4 <= lines; r += 4, v += 4 * s2) {
      const __m512d l0 = _mm512_loadu_pd(v), l1 = _mm512_loadu_pd(v + s2);
      const __m512d l2 = _mm512_loadu_pd(v + 2 * s2), l3 = _mm512_loadu_pd(v + 3 * s2);
      const __m512d t0 = _mm512_shuffle_f64x2(l0, l1, 0x44),
                    t1 = _mm512_shuffle_f64x2(l2, l3, 0x44);
      const __m512d t2 = _mm512_shuffle_f64x2(l0, l1, 0xEE),
                    t3 = _mm512_shuffle_f64x2(l2, l3, 0xEE);
      _mm512_storeu_pd(o + 2 * r, _mm512_shuffle_f64x2(t0, t1, 0x88));
      _mm512_storeu_pd(o + row + 2 * r, _mm512_shuffle_f64x2(t0, t1, 0xDD));
      _mm512_storeu_pd(o + 2 * row + 2 * r, _mm512_shuffle_f64x2(t2, t3, 0x88));
      _mm512_storeu_pd(o + 3 * row + 2 * r, _mm512_shuffle_f64x2(t2, t3, 0xDD));
    }
    for (; r + 2 <= lines; r += 2, v += 2 * s2) {
      const __m512d l0 = _mm512_loadu_pd(v), l1 = _mm512_loadu_pd(v + s2);
      const __m512d u0 = _mm512_shuffle_f64x2(l0, l1, 0x44),
                    u1 = _mm512_shuffle_f64x2(l0, l1, 0xEE);
      _mm256_storeu_pd(o + 2 * r, _mm512_castpd512_pd256(_mm512_shuffle_f64x2(u0, u0, 0x08)));
      _mm256_storeu_pd(o + row + 2 * r, _mm512_castpd512_pd256(_mm512_shuffle_f64x2(u0, u0, 0x0D)));
      _mm256_storeu_pd(o + 2 * row + 2 * r,
                       _mm512_castpd512_pd256(_mm512_shuffle_f64x2(u1, u1, 0x08)));
      _mm256_storeu_pd(o + 3 * row + 2 * r,
                       _mm512_castpd512_pd256(_mm512_shuffle_f64x2(u1, u1, 0x0D)));
    }
    for (; r < lines; r++, v += s2)
      for (int q = 0; q < 4; q++) _mm_storeu_pd(o + q * row + 2 * r, _mm_loadu_pd(v + 2 * q));
  }
  for (; p < kc; p++)
    for (int64_t r = 0; r < lines; r++)
      _mm_storeu_pd(out + p * row + 2 * r, _mm_loadu_pd(x + 2 * (r * step + p)));
  return 1;
}
/* The c64 twin: a number is 64 bits, so four k of four lines are a 4 x 4 transpose of
 * doubles' bit patterns in 256-bit registers (unpacks, then 128-bit halves), then two
 * lines, then one. */
__attribute__((target("avx2"))) static int pack_lines_c64(int64_t width, int64_t lines, int64_t kc,
                                                          const float *xf, int64_t step,
                                                          float *outf) {
  const double *x = (const double *)(const void *)xf; /* one double's bits per number */
  double *out = (double *)(void *)outf;
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    double *o = out + p * width;
    const double *v = x + p;
    int64_t r = 0;
    for (; r + 4 <= lines; r += 4, v += 4 * step) {
      const __m256d l0 = _mm256_loadu_pd(v), l1 = _mm256_loadu_pd(v + step);
      const __m256d l2 = _mm256_loadu_pd(v + 2 * step), l3 = _mm256_loadu_pd(v + 3 * step);
      const __m256d t0 = _mm256_unpacklo_pd(l0, l1), t1 = _mm256_unpackhi_pd(l0, l1);
      const __m256d t2 = _mm256_unpacklo_pd(l2, l3), t3 = _mm256_unpackhi_pd(l2, l3);
      _mm256_storeu_pd(o + r, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(o + width + r, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(o + 2 * width + r, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(o + 3 * width + r, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
    for (; r + 2 <= lines; r += 2, v += 2 * step) {
      const __m256d l0 = _mm256_loadu_pd(v), l1 = _mm256_loadu_pd(v + step);
      const __m256d u0 = _mm256_unpacklo_pd(l0, l1), u1 = _mm256_unpackhi_pd(l0, l1);
      _mm_storeu_pd(o + r, _mm256_castpd256_pd128(u0));
      _mm_storeu_pd(o + width + r, _mm256_castpd256_pd128(u1));
      _mm_storeu_pd(o + 2 * width + r, _mm256_extractf128_pd(u0, 1));
      _mm_storeu_pd(o + 3 * width + r, _mm256_extractf128_pd(u1, 1));
    }
    for (; r < lines; r++, v += step)
      for (int q = 0; q < 4; q++) memcpy(o + q * width + r, v + q, sizeof(double));
  }
  for (; p < kc; p++)
    for (int64_t r = 0; r < lines; r++)
      memcpy(out + p * width + r, x + r * step + p, sizeof(double));
  return 1;
}
#endif

/* One type's panel packer (T: float or double; PACK_LINES: the lines-along-k packer). */
#define TL__PACKED_PANEL(NAME, T, PACK_LINES)                                                    \
  /* A panel of `count` lines (rows of A, or columns of B) by k [0, kc) into groups of           \
   * `width` lines, each group stored k after k, zero past `count`. Line i, step p is at         \
   * x + 2 (i step + p kstep). A of rows stride rsa packs as (step rsa, kstep csa); B packs      \
   * as its transpose, (step csb, kstep rsb). With unit step, the whole groups are copied k      \
   * by k, each k's run of numbers read once from end to end (group by group it would read a     \
   * short piece of every k's run, kc runs apart, which the hardware prefetchers do not follow). \
   * The zeros only meet lanes that are never stored; they spare those lanes stale bits. */      \
  static void NAME##_pack(int64_t width, int64_t count, int64_t kc, const T *x, int64_t step,    \
                          int64_t kstep, T *out) {                                               \
    int64_t i = 0;                                                                               \
    if (step == 1 && count >= width) {                                                           \
      const int64_t whole = count / width * width;                                               \
      for (int64_t p = 0; p < kc; p++) {                                                         \
        const T *v = x + 2 * p * kstep;                                                          \
        T *o = out + 2 * p * width;                                                              \
        for (int64_t g = 0; g < whole; g += width, o += 2 * width * kc)                          \
          memcpy(o, v + 2 * g, sizeof(T) * 2 * (size_t)width);                                   \
      }                                                                                          \
      out += 2 * whole * kc;                                                                     \
      i = whole;                                                                                 \
    }                                                                                            \
    for (; i < count; i += width) {                                                              \
      const int64_t lines = count - i < width ? count - i : width;                               \
      const T *xi = x + 2 * i * step;                                                            \
      if (kstep == 1 && PACK_LINES(width, lines, kc, xi, step, out)) {                           \
        for (int64_t p = 0; p < kc && lines < width; p++)                                        \
          for (int64_t r = lines; r < width; r++)                                                \
            out[2 * (p * width + r)] = out[2 * (p * width + r) + 1] = 0;                         \
        out += 2 * width * kc;                                                                   \
        continue;                                                                                \
      }                                                                                          \
      for (int64_t p = 0; p < kc; p++, out += 2 * width) {                                       \
        int64_t r = 0;                                                                           \
        for (; r < lines; r++) {                                                                 \
          const T *v = xi + 2 * (r * step + p * kstep);                                          \
          out[2 * r] = v[0], out[2 * r + 1] = v[1];                                              \
        }                                                                                        \
        for (; r < width; r++) out[2 * r] = out[2 * r + 1] = 0;                                  \
      }                                                                                          \
    }                                                                                            \
  }

/* One type's panel packer (TL__PACKED_PANEL), micro-kernel and driver. LANES complex numbers per
 * register, MR = 2 LANES rows per tile. */
#define TL__PACKED_COMPLEX(NAME, T, V, MASK, LANES, KC, MC, SET1, LOADU, MASKZ_LOADU, MASK_STOREU, \
                           FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO, PACK_LINES)                      \
  TL__PACKED_PANEL(NAME, T, PACK_LINES)                                                            \
  typedef struct NAME##_scale {                                                                    \
    int alpha_one, alpha_real;                                                                     \
    int beta_kind; /* 0: beta 0 (C not read), 1: beta 1, 2: other real, 3: any other */            \
    T alr, ali, ber, bei;                                                                          \
  } NAME##_scale;                                                                                  \
  /* alpha times one register of finished products, plus beta times what C held. */                \
  __attribute__((target("avx512f"))) static inline V NAME##_finish(                                \
      V acc_r, V acc_i, const NAME##_scale *s, MASK mask, const T *z) {                            \
    V v = FMADDSUB(acc_r, SET1((T)1), SWAP(acc_i));                                                \
    /* a real alpha or beta scales each part alone, so an infinite part stays infinite */          \
    if (s->alpha_real && !s->alpha_one) v = MUL(v, SET1(s->alr));                                  \
    if (!s->alpha_real) v = FMADDSUB(v, SET1(s->alr), MUL(SWAP(v), SET1(s->ali)));                 \
    if (s->beta_kind == 0) return v;                                                               \
    const V old = MASKZ_LOADU(mask, z);                                                            \
    if (s->beta_kind == 1) return ADD(v, old);                                                     \
    if (s->beta_kind == 2) return ADD(v, MUL(old, SET1(s->ber)));                                  \
    return ADD(v, FMADDSUB(old, SET1(s->ber), MUL(SWAP(old), SET1(s->bei))));                      \
  }                                                                                                \
  TL__PACKED_TILE_WIDTHS(NAME, 1, T, V, MASK, LANES, SET1, LOADU, MASK_STOREU, FMADD, ZERO,        \
                         NAME##_finish, NAME##_scale)                                              \
  TL__PACKED_TILE_WIDTHS(NAME, 2, T, V, MASK, LANES, SET1, LOADU, MASK_STOREU, FMADD, ZERO,        \
                         NAME##_finish, NAME##_scale)                                              \
  typedef void (*NAME##_tile_fn)(int64_t, const T *, const T *, T *, int64_t, int64_t, int64_t,    \
                                 const NAME##_scale *);                                            \
  /* [one register of rows or two][at most 2, 4 or NR columns] */                                  \
  static NAME##_tile_fn const NAME##_tiles[2][3] = {                                               \
      {NAME##_tile1x2, NAME##_tile1x4, NAME##_tile1x6},                                            \
      {NAME##_tile2x2, NAME##_tile2x4, NAME##_tile2x6}};                                           \
  /* C (column-major, column stride ldc) = alpha A B + beta C. */                                  \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const T *a, int64_t rsa,      \
                   int64_t csa, const T *b, int64_t rsb, int64_t csb, tl_scalar beta, T *c,        \
                   int64_t ldc, T *pack) {                                                         \
    const int64_t mr = 2 * LANES, kc_most = at_most(k, KC);                                        \
    const int64_t mc_most = block_rows(kc_most, KC, MC, mr);                                       \
    T *pa = pack, *pb = pack + 2 * kc_most * at_most(round_up(m, mr), mc_most);                    \
    NAME##_scale s;                                                                                \
    s.alpha_one = alpha.re == 1.0 && alpha.im == 0.0, s.alpha_real = alpha.im == 0.0;              \
    s.alr = (T)alpha.re, s.ali = (T)alpha.im, s.ber = (T)beta.re, s.bei = (T)beta.im;              \
    const int first_beta = beta.re == 0.0 && beta.im == 0.0   ? 0                                  \
                           : beta.re == 1.0 && beta.im == 0.0 ? 1                                  \
                           : beta.im == 0.0                   ? 2                                  \
                                                              : 3;                                                   \
    /* B's columns run along k: pack each group just before the first row block's tiles            \
     * use it (still in L1 then); otherwise the groups are packed together, k by k. */             \
    const int b_by_group = rsb == 1;                                                               \
    for (int64_t jc = 0; jc < n; jc += NC_COLS) {                                                  \
      const int64_t nc = n - jc < NC_COLS ? n - jc : NC_COLS;                                      \
      for (int64_t pc = 0; pc < k; pc += KC) {                                                     \
        const int64_t kc = k - pc < KC ? k - pc : KC;                                              \
        s.beta_kind = pc == 0 ? first_beta : 1;                                                    \
        if (!b_by_group) NAME##_pack(NR, nc, kc, b + 2 * (pc * rsb + jc * csb), csb, rsb, pb);     \
        for (int64_t ic = 0; ic < m; ic += mc_most) {                                              \
          const int64_t mc = m - ic < mc_most ? m - ic : mc_most;                                  \
          NAME##_pack(mr, mc, kc, a + 2 * (ic * rsa + pc * csa), rsa, csa, pa);                    \
          for (int64_t jr = 0; jr < nc; jr += NR) {                                                \
            const int64_t cols = nc - jr < NR ? nc - jr : NR;                                      \
            if (b_by_group && ic == 0)                                                             \
              NAME##_pack(NR, cols, kc, b + 2 * (pc * rsb + (jc + jr) * csb), csb, rsb,            \
                          pb + 2 * jr * kc);                                                       \
            for (int64_t ir = 0; ir < mc; ir += mr)                                                \
              NAME##_tiles[mc - ir > LANES][(cols - 1) / 2](                                       \
                  kc, pa + 2 * ir * kc, pb + 2 * jr * kc, c + 2 * (ic + ir + (jc + jr) * ldc),     \
                  ldc, mc - ir < mr ? mc - ir : mr, cols, &s);                                     \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

#if TL_X86_KERNELS
#define TL__SWAP_PAIRS_PD(v) _mm512_permute_pd((v), 0x55)
#define TL__SWAP_PAIRS_PS(v) _mm512_permute_ps((v), 0xB1)
TL__PACKED_COMPLEX(packed_c128, double, __m512d, __mmask8, 4, KC_C128, MC_C128, _mm512_set1_pd,
                   _mm512_loadu_pd, _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, _mm512_fmadd_pd,
                   _mm512_fmaddsub_pd, _mm512_mul_pd, _mm512_add_pd, TL__SWAP_PAIRS_PD,
                   _mm512_setzero_pd, pack_lines_c128)
TL__PACKED_COMPLEX(packed_c64, float, __m512, __mmask16, 8, KC_C64, MC_C64, _mm512_set1_ps,
                   _mm512_loadu_ps, _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps, _mm512_fmadd_ps,
                   _mm512_fmaddsub_ps, _mm512_mul_ps, _mm512_add_ps, TL__SWAP_PAIRS_PS,
                   _mm512_setzero_ps, pack_lines_c64)
#endif

int tl__gemm_packed_complex(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                            const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                            int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc,
                            void *pack) {
#if !TL_X86_KERNELS
  /* No AVX-512 kernel in this build; tl__gemm_packed_complex_takes is never asked to enable
   * it (the provider's choice needs AVX-512F). */
  (void)dtype, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)rsa, (void)csa, (void)b;
  (void)rsb, (void)csb, (void)beta, (void)c, (void)rsc, (void)csc, (void)pack;
  return 0;
#else
  if (pack == NULL || (dtype != TL_C64 && dtype != TL_C128)) return 0;
  if (m <= 0 || n <= 0 || k <= 0 || (alpha.re == 0.0 && alpha.im == 0.0)) return 0;
  /* Extent-1 dimensions never step, so any stride serves; then C must be column-major, or
   * row-major through C^T = B^T A^T. */
  if (m == 1) rsc = 1;
  if (n == 1) csc = 1;
  if (rsc != 1) {
    if (csc != 1) return 0;
    const void *t = a;
    int64_t s = rsa;
    a = b, b = t;
    rsa = csb, csb = s;
    s = csa, csa = rsb, rsb = s;
    s = m, m = n, n = s;
    csc = rsc;
  }
  if (dtype == TL_C128)
    packed_c128(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, csc, pack);
  else
    packed_c64(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, csc, pack);
  return 1;
#endif
}
