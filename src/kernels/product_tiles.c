/* src/kernels/product_tiles.c: an elementwise product whose output runs across an input's
 * dense axis (einsum's ij,ij->ji, ij,ji->ij, ij,j->ji), made in one pass of tiles, in
 * every dtype on AVX-512 levels.
 *
 * The loop plan (loop.c) puts the output's dense axis first. An input is "across" when it
 * is dense along another loop axis, the plan's `axis`, and "along" when it is dense along
 * axis 0 as the output is. A micro-tile is one cache line by one cache line (16 x 16
 * floats, 8 x 8 doubles or complex floats, 4 x 4 complex doubles): the across inputs'
 * lines are loaded, multiplied and transposed in registers (or transposed and then
 * multiplied by the along input's lines), and each output line is written by one 64-byte
 * store. Tiles go in bands of 128 bytes of the output's dense axis, each band walking the
 * whole of `axis`, so every across input is read as 32, 16 or 8 sequential streams, with
 * software prefetch ahead of them.
 *
 * Output lines are written with streaming stores, so every line written whole must start
 * on a 64-byte boundary: the elements before the first boundary are a head band of their
 * own, and an output whose rows start at different phases is left to the two-pass route.
 * A cached store first reads the line it writes (read for ownership), and here each such
 * read is in another output row, which no prefetcher follows. In a scratch probe on this
 * project's AMD EPYC (1024^2 f64 ij,ij->ji, one core, the same buffers every call) the
 * tiles took 0.7-1.1 ms with cached stores, prefetch for writing included, and 0.48-0.65 ms
 * streamed; streamed and then read back whole they still came out ahead (0.83-0.87 against
 * 0.82-1.18 ms).
 *
 * Loads meet whole lines where they can: a 64-byte load 16 bytes off straddles two lines,
 * and with both inputs so the probe went from 0.48 to 0.9 ms. The columns before the lead
 * across input's first line boundary go to the fringe (col_head); a second across input
 * whose rows lie at another phase (numpy puts large arrays 16 or 48 bytes past a line) is
 * read as two whole lines funnelled into one register (y_back; 0.55-0.64 -> 0.53 ms in the
 * probe, against 0.48 with both on lines).
 *
 * Bits: each element is one product of the row kernels' formula (tl__ew_binary_kernel),
 * which the fringes call directly: no fused multiply-add, complex re = ar br - ai bi and
 * im = ai br + ar bi in the dtype's precision, each product rounded and then summed. So
 * this route, the two-pass route and tl_mul give the same bits on every instruction set.
 * Pure core: never fails, allocates nothing. */
#include <string.h>

#include "base/isa.h"
#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>

#include "cmul512.h"
#include "transpose512.h"
#endif

/* Bytes of the output's dense axis per band, and how far ahead along `axis` the across
 * inputs are prefetched (the same probe: bands of 64, 256 and 512 bytes were slower, and
 * so were distances of 0 and 128 bytes; 512 was slower for f64 and no faster for c128). */
#define TL__PT_BAND_BYTES 128
#define TL__PT_AHEAD_BYTES 256

int tl__product_tiles_plan(tl__product_tiles *plan, const tl_tensor *out, const tl_tensor *a,
                           const tl_tensor *b) {
  memset(plan, 0, sizeof *plan);
#if TL_X86_KERNELS
  if (tl__isa_level() < TL__ISA_AVX512) return 0;
  if (out->dtype != a->dtype || out->dtype != b->dtype) return 0;
  const tl_tensor *ts[3] = {out, a, b};
  tl__loop *loop = &plan->loop;
  tl__loop_plan(loop, 3, ts);
  const int64_t es = loop->esize[0];
  const int64_t line = 64 / es; /* elements per cache line: the micro-tile's side */
  if (loop->rank < 2 || loop->strides[0][0] != 1 || loop->shape[0] < line) return 0;
  /* The lead: the first input that varies along axis 0 but is not dense there; `axis` is
   * where it is dense. An input constant along axis 0 (the a of an outer product i,j->ij)
   * leads nothing: the row kernel writes such products at store bandwidth already. */
  int axis = -1;
  for (int i = 1; i <= 2 && axis < 0; i++) {
    if (loop->strides[i][0] == 1 || loop->strides[i][0] == 0) continue;
    for (int k = 1; k < loop->rank; k++) {
      if (loop->strides[i][k] == 1) {
        axis = k;
        break;
      }
    }
    if (axis < 0) return 0; /* dense nowhere: no line of it is read whole */
  }
  if (axis < 0 || loop->shape[axis] < line) return 0;
  for (int i = 1; i <= 2; i++) {
    plan->across[i - 1] = loop->strides[i][0] != 1;
    if (plan->across[i - 1] && loop->strides[i][axis] != 1) return 0;
  }
  /* Streaming stores need every output line they write to start on a 64-byte boundary:
   * the step along every axis but the dense one a multiple of 64 bytes, and the bands
   * starting where a line does. Cached stores here cost two lines' reads per store when
   * the rows are not aligned (1.5-1.8 ms on the 1024^2 f64 probe, numpy's unaligned out=),
   * more than the two-pass route: such outputs are left to it. */
  const uintptr_t misaligned = (uintptr_t)loop->base[0] % 64;
  if (misaligned % (uintptr_t)es != 0) return 0;
  for (int k = 1; k < loop->rank; k++)
    if ((loop->strides[0][k] * es) % 64 != 0) return 0;
  plan->axis = axis;
  /* The across input's loads: a line's worth that straddles two lines costs both (1024^2
   * f64 from numpy's arrays, 16 bytes past a line: 0.48 -> 0.9 ms in the scratch probe).
   * When every one of its rows starts at the same phase, the columns before its first
   * boundary go to the fringe and the tiles start on whole lines. */
  const int lead = plan->across[0] && loop->strides[1][0] != 0 ? 1 : 2;
  const uintptr_t phase = (uintptr_t)loop->base[lead] % 64;
  int uniform = phase % (uintptr_t)es == 0;
  for (int k = 0; k < loop->rank; k++)
    if (k != axis) uniform &= (loop->strides[lead][k] * es) % 64 == 0;
  plan->col_head = uniform ? (int64_t)((64 - phase) % 64) / es : 0;
  if (plan->col_head > loop->shape[axis]) plan->col_head = loop->shape[axis];
  /* With both inputs across, y's rows at another phase than x's tiles (numpy's arrays lie
   * 16 or 48 bytes past a line): the shifted loads of band_args.y_back, where y's phase is
   * the same on every row. */
  if (plan->across[0] && plan->across[1] && loop->strides[1][0] != 0 && loop->strides[2][0] != 0) {
    const uintptr_t y_phase = ((uintptr_t)loop->base[2] + (uintptr_t)(plan->col_head * es)) % 64;
    int y_uniform = y_phase % (uintptr_t)es == 0;
    for (int k = 0; k < loop->rank; k++)
      if (k != axis) y_uniform &= (loop->strides[2][k] * es) % 64 == 0;
    if (y_uniform && y_phase != 0) {
      const int64_t back = (int64_t)y_phase / es; /* elements */
      plan->y_back = (int64_t)y_phase / (es == 4 ? 4 : 8);
      /* the tile at j reads y's elements [c0 + j - back, c0 + j - back + 2 line) */
      plan->y_lo = back > plan->col_head ? back - plan->col_head : 0;
      plan->y_hi = loop->shape[axis] - plan->col_head + back - 2 * line + 1;
    }
  }
  plan->head = (int64_t)((64 - misaligned) % 64) / es;
  if (plan->head > loop->shape[0]) plan->head = loop->shape[0];
  plan->band = TL__PT_BAND_BYTES / es;
  plan->bands = (plan->head > 0) + (loop->shape[0] - plan->head + plan->band - 1) / plan->band;
  int64_t other = 1;
  for (int k = 1; k < loop->rank; k++)
    if (k != axis) other *= loop->shape[k];
  plan->blocks = plan->bands * other;
  plan->mul = tl__ew_binary_kernel(TL_OP_MUL, out->dtype);
  plan->dtype = out->dtype;
  return 1;
#else
  (void)out, (void)a, (void)b;
  return 0;
#endif
}

#if TL_X86_KERNELS
#define TL_AVX512 __attribute__((target("avx512f")))

/* Complex floats' products (cmul512.h) on the 8-byte elements the tiles move. */
static inline TL_AVX512 __m512d cmul_c64_512(__m512d xd, __m512d yd) {
  return _mm512_castps_pd(tl__cmul_ps512(_mm512_castpd_ps(xd), _mm512_castpd_ps(yd)));
}

/* One band's tiles: output rows j (along `axis`) of elements i0.. (along axis 0), Q lines
 * per micro-tile of Q elements each. o, x, y point at element (i0, 0) of the output and
 * the two inputs; s0/sp are their strides in elements along axis 0 / `axis`. */
typedef struct band_args {
  char *o;
  const char *x, *y;
  int64_t o_sp, x_s0, x_sp, y_s0, y_sp; /* elements */
  int64_t rows;                         /* along axis 0 in this band: a multiple of Q */
  int64_t cols;                         /* along `axis`: a multiple of Q */
  int x_across, y_across;
  /* Both across, y's rows off x's phase: y's lines are read whole from y_back units of T
   * before each tile's (with the next line) and shifted into place, in the tiles
   * [y_lo, y_hi) whose two lines lie inside y's row; all 0: plain loads. */
  int64_t y_back, y_lo, y_hi;
} band_args;

/* One band's kernel; XA, YA: whether x, y are across (constants, so each variant's loop
 * has no branch). Across lines are input rows i + q, along lines output rows j + q. */
/* The micro-tile's loops unrolled, so its lines stay in registers (gcc -O2 kept them as
 * loops over stack arrays). */
#define TL__PT_UNROLL _Pragma("GCC unroll 16")
/* One band's kernel over elements of T, UNITS of T each (a complex double is 2 doubles),
 * Q lines of V per micro-tile. XA, YA: whether x, y are across (constants, so each
 * variant's loop has no branch). Across lines are input rows i + q, along lines output
 * rows j + q; the product is always MUL(x's value, y's value). */
#define TL__PT_BAND_KERNEL(NAME, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT, XA, YA, RA) \
  static TL_AVX512 void NAME(const band_args *g) {                                                \
    const int64_t u = (UNITS), ahead = TL__PT_AHEAD_BYTES / (int64_t)(sizeof(T) * (UNITS));       \
    const T *x = (const T *)g->x, *y = (const T *)g->y;                                           \
    T *o = (T *)g->o;                                                                             \
    /* per line q: x's and y's step between lines, and along `axis` per column */                 \
    const int64_t xl = ((XA) ? g->x_s0 : g->x_sp) * u, yl = ((YA) ? g->y_s0 : g->y_sp) * u;       \
    const int64_t xc = g->x_sp * u, yc = g->y_sp * u, ol = g->o_sp * u;                           \
    const int64_t xr = g->x_s0 * u, yr = g->y_s0 * u;                                             \
    const int64_t xa = ((XA) ? ahead * u : ahead * xc), ya = ((YA) ? ahead * u : ahead * yc);     \
    const int64_t yb = g->y_back;                                                                 \
    for (int64_t j = 0; j < g->cols; j += (Q)) {                                                  \
      const int pf = j + ahead < g->cols, ra = (RA) && j >= g->y_lo && j < g->y_hi;               \
      for (int64_t i = 0; i < g->rows; i += (Q)) {                                                \
        V r[Q];                                                                                   \
        const T *xs = x + i * xr + j * xc, *ys = y + i * yr + j * yc;                             \
        if (pf) {                                                                                 \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) {                                           \
            _mm_prefetch((const char *)(xs + q * xl + xa), _MM_HINT_T0);                          \
            _mm_prefetch((const char *)(ys + q * yl + ya), _MM_HINT_T0);                          \
          }                                                                                       \
        }                                                                                         \
        if ((XA) && (YA) && ra) {                                                                 \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] =                                      \
              MUL(LOAD(xs + q * xl), SHIFT(ys + q * yl - yb, yb));                                \
          TRANSPOSE(r);                                                                           \
        } else if ((XA) && (YA)) {                                                                \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] =                                      \
              MUL(LOAD(xs + q * xl), LOAD(ys + q * yl));                                          \
          TRANSPOSE(r);                                                                           \
        } else if (XA) {                                                                          \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] = LOAD(xs + q * xl);                   \
          TRANSPOSE(r);                                                                           \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] = MUL(r[q], LOAD(ys + q * yl));        \
        } else {                                                                                  \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] = LOAD(ys + q * yl);                   \
          TRANSPOSE(r);                                                                           \
          TL__PT_UNROLL for (int q = 0; q < (Q); q++) r[q] = MUL(LOAD(xs + q * xl), r[q]);        \
        }                                                                                         \
        T *os = o + (i + j * g->o_sp) * u;                                                        \
        TL__PT_UNROLL for (int q = 0; q < (Q); q++) STREAM(os + q * ol, r[q]);                    \
      }                                                                                           \
    }                                                                                             \
  }

#define TL__PT_KERNELS(PREFIX, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT)              \
  TL__PT_BAND_KERNEL(PREFIX##_xyr, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT, 1, 1, 1) \
  TL__PT_BAND_KERNEL(PREFIX##_xy, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT, 1, 1, 0)  \
  TL__PT_BAND_KERNEL(PREFIX##_x, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT, 1, 0, 0)   \
  TL__PT_BAND_KERNEL(PREFIX##_y, T, V, Q, UNITS, LOAD, STREAM, MUL, TRANSPOSE, SHIFT, 0, 1, 0)

/* The line's worth of T that starts `back` units past the aligned p: p's line and the next
 * funnelled into one register (permutex2var picks lanes of both by index). */
static inline TL_AVX512 __m512d shift_pd(const double *p, int64_t back) {
  const __m512i idx =
      _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(back));
  return _mm512_permutex2var_pd(_mm512_load_pd(p), idx, _mm512_load_pd(p + 8));
}
static inline TL_AVX512 __m512 shift_ps(const float *p, int64_t back) {
  const __m512i idx =
      _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                       _mm512_set1_epi32((int)back));
  return _mm512_permutex2var_ps(_mm512_load_ps(p), idx, _mm512_load_ps(p + 16));
}

TL__PT_KERNELS(band_f32, float, __m512, 16, 1, _mm512_loadu_ps, _mm512_stream_ps, _mm512_mul_ps,
               tl__transpose16x16_ps512, shift_ps)
TL__PT_KERNELS(band_f64, double, __m512d, 8, 1, _mm512_loadu_pd, _mm512_stream_pd, _mm512_mul_pd,
               tl__transpose8x8_pd512, shift_pd)
TL__PT_KERNELS(band_c64, double, __m512d, 8, 1, _mm512_loadu_pd, _mm512_stream_pd, cmul_c64_512,
               tl__transpose8x8_pd512, shift_pd)
TL__PT_KERNELS(band_c128, double, __m512d, 4, 2, _mm512_loadu_pd, _mm512_stream_pd, tl__cmul_pd512,
               tl__transpose4x4_c512, shift_pd)

typedef void (*band_fn)(const band_args *g);
/* [tl_dtype][kind]: kind 0 both across, 1 x only, 2 y only, 3 both with y shifted */
static const band_fn band_kernels[4][4] = {{band_f32_xy, band_f32_x, band_f32_y, band_f32_xyr},
                                           {band_f64_xy, band_f64_x, band_f64_y, band_f64_xyr},
                                           {band_c64_xy, band_c64_x, band_c64_y, band_c64_xyr},
                                           {band_c128_xy, band_c128_x, band_c128_y, band_c128_xyr}};
#endif

/* Output row j's elements [i_begin, i_end) along axis 0, by the row kernel. */
static void fringe_row(const tl__product_tiles *plan, char *const *base, int64_t j, int64_t i_begin,
                       int64_t i_end) {
  const tl__loop *loop = &plan->loop;
  const int ax = plan->axis;
  char *p[3];
  int64_t s[3];
  for (int k = 0; k < 3; k++) {
    p[k] = base[k] + (i_begin * loop->strides[k][0] + j * loop->strides[k][ax]) * loop->esize[k];
    s[k] = loop->strides[k][0];
  }
  plan->mul(i_end - i_begin, p, s, NULL);
}

void tl__product_tiles_run(const tl__product_tiles *plan, int64_t begin, int64_t end) {
  const tl__loop *loop = &plan->loop;
  const int ax = plan->axis;
  const int64_t es = loop->esize[0], line = 64 / es;
  const int64_t n0 = loop->shape[0], np = loop->shape[ax];
  /* tiled columns [c0, c1) along `axis`, whole lines of the lead input */
  const int64_t c0 = plan->col_head, c1 = c0 + (np - c0) / line * line;
  for (int64_t block = begin; block < end; block++) {
    const int64_t band = block % plan->bands;
    int64_t rem = block / plan->bands;
    char *base[3];
    for (int k = 0; k < 3; k++) base[k] = loop->base[k];
    for (int a = 1; a < loop->rank; a++) {
      if (a == ax) continue;
      const int64_t idx = rem % loop->shape[a];
      rem /= loop->shape[a];
      for (int k = 0; k < 3; k++) base[k] += idx * loop->strides[k][a] * loop->esize[k];
    }
    /* band 0 is the head (the elements before the first aligned line) when there is one */
    const int64_t h = plan->head;
    const int64_t i0 = h == 0 ? band * plan->band : band == 0 ? 0 : h + (band - 1) * plan->band;
    const int64_t len = h > 0 && band == 0 ? h : plan->band;
    const int64_t i1 = n0 - i0 < len ? n0 : i0 + len;
    int64_t i_full = i0 + (i1 - i0) / line * line;
#if TL_X86_KERNELS
    if (i_full > i0 && c1 > c0) {
      band_args g = {base[0] + (i0 + c0 * loop->strides[0][ax]) * es,
                     base[1] + (i0 * loop->strides[1][0] + c0 * loop->strides[1][ax]) * es,
                     base[2] + (i0 * loop->strides[2][0] + c0 * loop->strides[2][ax]) * es,
                     loop->strides[0][ax],
                     loop->strides[1][0],
                     loop->strides[1][ax],
                     loop->strides[2][0],
                     loop->strides[2][ax],
                     i_full - i0,
                     c1 - c0,
                     plan->across[0],
                     plan->across[1],
                     plan->y_back,
                     plan->y_lo,
                     plan->y_hi};
      const int kind = g.y_back > 0 ? 3 : g.x_across && g.y_across ? 0 : g.x_across ? 1 : 2;
      band_kernels[plan->dtype][kind](&g);
    }
#else
    i_full = i0; /* no plan is made without the x86 kernels: the row kernel does it all */
#endif
    for (int64_t j = 0; j < c0; j++) fringe_row(plan, base, j, i0, i1);
    for (int64_t j = c0; j < c1 && i_full < i1; j++) fringe_row(plan, base, j, i_full, i1);
    for (int64_t j = c1; j < np; j++) fringe_row(plan, base, j, i0, i1);
  }
#if TL_X86_KERNELS
  _mm_sfence(); /* streaming stores are weakly ordered: publish them */
#endif
}
