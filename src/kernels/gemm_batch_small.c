/* src/kernels/gemm_batch_small.c: a stack of small real GEMMs (f32/f64, m and n from 2 to
 * 16, k from 1 to 16, alpha 1, beta 0 or 1; and row vectors times matrices, m 1, beta 0) in
 * one call, for the batched runner (gemm.c).
 *
 * Each entry of such a stack used to be one trip through the runner and the provider switch
 * (batch index decoded by division, thin-GEMM check, provider choice, small-kernel row
 * switch, write-mode selection), about as long as its arithmetic at 4 x 4. Here the shape,
 * the layout and the kernel are chosen once per run of entries, the entries' offsets advance
 * by an odometer, and each entry is one register block per column block, written to C from
 * the registers.
 *
 * Invariant: the bits are those of tl__gemm_serial on the same entry (of gemm_thin.c for a
 * row vector), so a stack gives what a loop of single products gives, on any thread and in
 * any run. Like the hand kernel
 * (small_gemm_core.c), every element of C is one FMA chain over p = 0..k-1 in increasing
 * order from 0 at every vector level, and the plain loop of the portable level (sum += a b
 * from 0) where the hand kernel runs its plain loop; beta 1 adds C after the chain. The level
 * is the hand kernel's (tl__small_gemm_isa). AVX-512 is used only for more than 12 rows (f64)
 * where one 256-bit vector block needs four vectors; below that the AVX2 blocks run (the
 * hand kernel takes AVX-512 from 9 rows; the chains, so the bits, are the same either way,
 * and at 9 to 12 rows three 256-bit vectors waste fewer masked lanes than two 512-bit ones). As the
 * hand kernel, C with a unit column stride is computed as C^T = B^T A^T (the same products, so the
 * same bits). Where the rows fill their last vector, plain loads and stores stand in for
 * the masked ones; a stack of 16 x 16 f64 entries past the last-level cache prefetches the
 * next entry while one is computed (bs_ahead). Neither touches a chain.
 *
 * Thread rules: no state; pure core (never fails, allocates nothing). */
#include <stdint.h>

#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define BS_MAX_EXTENT 16

/* One run's layout after the C^T choice: C has unit row stride, A' unit row stride. */
typedef struct bs_layout {
  int64_t m, n, k;
  int64_t csa, rsb, csb, csc; /* A' column stride, B' strides, C column stride */
  int transposed;             /* 1: A' is g->b and B' is g->a */
  int add;                    /* beta 1: C + the chain */
} bs_layout;

/* 1 for a row vector times a matrix (m 1, n 2..16, beta 0, C and B's rows at unit stride,
 * B's rows apart): the entries gemm_thin.c computes by its axpy passes, where C starts at 0
 * and each row of B adds one fused multiply-add per element, in row order. That is the FMA
 * chain over p from 0 of the blocks below (C^T = B^T A^T, one column), so the same bits, at
 * the vector levels of both (the portable levels' plain loops may be contracted differently
 * by the compiler, so a portable run calls gemm_thin.c itself). */
static int bs_row_vector(const tl__gemm_batch *g) {
  return g->m == 1 && g->n >= 2 && g->beta.re == 0.0 && g->csb == 1 && g->csc == 1 && g->rsb != 1;
}

/* 1 when the layout fits (and fills *lay), 0 otherwise. */
static int bs_layout_make(const tl__gemm_batch *g, bs_layout *lay) {
  if (g->dtype != TL_F64 && g->dtype != TL_F32) return 0;
  if (g->k < 1 || g->m > BS_MAX_EXTENT || g->n > BS_MAX_EXTENT || g->k > BS_MAX_EXTENT) return 0;
  if (g->alpha.re != 1.0 || g->alpha.im != 0.0 || g->beta.im != 0.0) return 0;
  if (g->beta.re != 0.0 && g->beta.re != 1.0) return 0;
  lay->k = g->k;
  lay->add = g->beta.re == 1.0;
  if (bs_row_vector(g)) {
    lay->m = g->n, lay->n = 1, lay->transposed = 1;
    lay->csa = g->rsb, lay->rsb = g->csa, lay->csb = 1, lay->csc = 1;
    return 1;
  }
  if (g->m < 2 || g->n < 2) return 0; /* other thin products are gemm_thin.c's */
  if (g->rsc == 1) {
    if (g->rsa != 1) return 0;
    lay->m = g->m, lay->n = g->n, lay->transposed = 0;
    lay->csa = g->csa, lay->rsb = g->rsb, lay->csb = g->csb, lay->csc = g->csc;
    return 1;
  }
  if (g->csc == 1) {
    if (g->csb != 1) return 0;
    lay->m = g->n, lay->n = g->m, lay->transposed = 1;
    lay->csa = g->rsb, lay->rsb = g->csa, lay->csb = g->rsa, lay->csc = g->rsc;
    return 1;
  }
  return 0;
}

int tl__gemm_batch_small_takes(const tl__gemm_batch *g) {
  bs_layout lay;
  if (!bs_layout_make(g, &lay)) return 0;
  /* a row vector: only where both kernels have their vector levels */
  return !bs_row_vector(g) || (tl__small_gemm_isa() >= 1 && tl__gemm_thin_isa() >= 1);
}

/* Entry offsets (elements) of A, B, C, advanced one entry at a time over the batch axes. */
typedef struct bs_cursor {
  int64_t idx[TL_MAX_RANK];
  int64_t oa, ob, oc;
} bs_cursor;

static void bs_cursor_start(const tl__gemm_batch *g, int64_t entry, bs_cursor *cur) {
  int64_t rem = entry;
  cur->oa = cur->ob = cur->oc = 0;
  for (int r = 0; r < g->batch_rank; r++) {
    cur->idx[r] = rem % g->batch_shape[r];
    rem /= g->batch_shape[r];
    cur->oa += cur->idx[r] * g->batch_strides[0][r];
    cur->ob += cur->idx[r] * g->batch_strides[1][r];
    cur->oc += cur->idx[r] * g->batch_strides[2][r];
  }
}

static inline void bs_cursor_next(const tl__gemm_batch *g, bs_cursor *cur) {
  for (int r = 0; r < g->batch_rank; r++) {
    cur->oa += g->batch_strides[0][r];
    cur->ob += g->batch_strides[1][r];
    cur->oc += g->batch_strides[2][r];
    if (++cur->idx[r] < g->batch_shape[r]) return;
    cur->oa -= g->batch_shape[r] * g->batch_strides[0][r];
    cur->ob -= g->batch_shape[r] * g->batch_strides[1][r];
    cur->oc -= g->batch_shape[r] * g->batch_strides[2][r];
    cur->idx[r] = 0;
  }
}

/* Software prefetch for stacks that stream from memory: while an entry is computed, every
 * line of the next entry's A, B and C (C for writing) is asked for. Taken only where each
 * operand's entry spans BS_PREFETCH_MIN to BS_PREFETCH_MAX bytes (16 x 16 doubles, dense:
 * there the hardware prefetchers, which follow each 4 KiB page on its own, left the loads of
 * the FMA loop waiting on memory) and the stack's operands pass BS_STREAM_BYTES (so they no
 * longer sit in the last-level cache, where the prefetch instructions cost more than they
 * save; smaller entries stream well without them). Prefetches read nothing into registers
 * and never fault, so values and bits are untouched. */
#if TL_X86_KERNELS /* only the x86 kernels below prefetch */
#define BS_PREFETCH_MIN 2048
#define BS_PREFETCH_MAX 4096
#define BS_STREAM_BYTES ((int64_t)24 << 20)

typedef struct bs_ahead {
  int on;          /* 1: prefetch the next entry of the stack */
  int64_t span[3]; /* bytes of A, B, C per entry from the entry's first element */
  bs_cursor cur;   /* the next entry */
} bs_ahead;

/* Bytes from an entry's first element past its last (positive strides), or 0. */
static int64_t bs_span(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t es) {
  if (rs < 0 || cs < 0) return 0;
  return ((rows - 1) * rs + (cols - 1) * cs + 1) * es;
}

static void bs_ahead_start(const tl__gemm_batch *g, int64_t begin, bs_ahead *ah) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  ah->span[0] = bs_span(g->m, g->k, g->rsa, g->csa, es);
  ah->span[1] = bs_span(g->k, g->n, g->rsb, g->csb, es);
  ah->span[2] = bs_span(g->m, g->n, g->rsc, g->csc, es);
  ah->on = begin + 1 < g->batches;
  for (int o = 0; o < 3; o++)
    if (ah->span[o] < BS_PREFETCH_MIN || ah->span[o] > BS_PREFETCH_MAX) ah->on = 0;
  /* only with spans of at most 4 KiB each: no overflow below 2^49 entries */
  if (ah->on && g->batches * (ah->span[0] + ah->span[1] + ah->span[2]) <= BS_STREAM_BYTES)
    ah->on = 0;
  if (ah->on) bs_cursor_start(g, begin + 1, &ah->cur);
}

/* Prefetch the entry at ah->cur and step it on (nothing past the stack's last entry). */
static inline void bs_ahead_next(const tl__gemm_batch *g, bs_ahead *ah, int64_t e) {
  if (!ah->on || e + 1 >= g->batches) return;
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  const char *a = g->a + ah->cur.oa * es, *b = g->b + ah->cur.ob * es;
  const char *c = g->c + ah->cur.oc * es;
  tl__prefetch_span(a, ah->span[0], 0);
  tl__prefetch_span(b, ah->span[1], 0);
  tl__prefetch_span(c, ah->span[2], 1);
  bs_cursor_next(g, &ah->cur);
}
#endif

/* The entry's A', B', C from the cursor. */
#define BS_POINTERS(T)                                                                            \
  const T *ap = (const T *)(lay->transposed ? g->b : g->a) + (lay->transposed ? cur.ob : cur.oa); \
  const T *bp = (const T *)(lay->transposed ? g->a : g->b) + (lay->transposed ? cur.oa : cur.ob); \
  T *cp = (T *)g->c + cur.oc;

/* The portable level: the hand kernel's plain loop (sum += a b from 0, then C + sum for
 * beta 1), element by element. */
#define BS_PLAIN(NAME, T)                                                                       \
  static void NAME(const tl__gemm_batch *g, const bs_layout *lay, int64_t begin, int64_t end) { \
    bs_cursor cur;                                                                              \
    bs_cursor_start(g, begin, &cur);                                                            \
    const int64_t m = lay->m, n = lay->n, k = lay->k, csa = lay->csa, rsb = lay->rsb,           \
                  csb = lay->csb, csc = lay->csc;                                               \
    for (int64_t e = begin; e < end; e++, bs_cursor_next(g, &cur)) {                            \
      BS_POINTERS(T)                                                                            \
      for (int64_t j = 0; j < n; j++)                                                           \
        for (int64_t i = 0; i < m; i++) {                                                       \
          T sum = (T)0;                                                                         \
          for (int64_t p = 0; p < k; p++) sum += ap[i + p * csa] * bp[p * rsb + j * csb];       \
          T *cij = cp + i + j * csc;                                                            \
          *cij = lay->add ? sum + *cij : sum;                                                   \
        }                                                                                       \
    }                                                                                           \
  }

BS_PLAIN(bs_plain_f64, double)
BS_PLAIN(bs_plain_f32, float)

#if TL_X86_KERNELS

/* One register block: MV vectors of rows (the last one masked to the rows that exist) by NC
 * columns, over all of k, written to C. MV and NC are constants where it is inlined, so the
 * loops unroll and the accumulators stay in registers. */
#define BS_BLOCK(NAME, T, TARGET, VT, LANES, MT, SETZERO, LOADU, MLOAD, STOREU, MSTORE, SET1, FMA, \
                 ADD)                                                                              \
  __attribute__((target(TARGET), always_inline)) static inline void NAME##_block(                  \
      const int MV, const int NC, const int FULL, const T *ap, int64_t csa, const T *bp,           \
      int64_t rsb, int64_t csb, T *cp, int64_t csc, int64_t k, MT mask, int add) {                 \
    VT acc[16][4];                                                                                 \
    _Pragma("GCC unroll 16") for (int q = 0; q < NC; q++)                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < MV; v++) acc[q][v] = SETZERO();                \
    for (int64_t p = 0; p < k; p++) {                                                              \
      VT av[4];                                                                                    \
      _Pragma("GCC unroll 4") for (int v = 0; v < MV; v++) av[v] =                                 \
          !(FULL) && v == MV - 1 ? MLOAD(ap + p * csa + v * (LANES), mask)                         \
                                 : LOADU(ap + p * csa + v * (LANES));                              \
      _Pragma("GCC unroll 16") for (int q = 0; q < NC; q++) {                                      \
        const VT s = SET1(bp[p * rsb + q * csb]);                                                  \
        _Pragma("GCC unroll 4") for (int v = 0; v < MV; v++) acc[q][v] = FMA(av[v], s, acc[q][v]); \
      }                                                                                            \
    }                                                                                              \
    _Pragma("GCC unroll 16") for (int q = 0; q < NC; q++) {                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < MV; v++) {                                       \
        T *cv = cp + q * csc + v * (LANES);                                                        \
        VT r = acc[q][v];                                                                          \
        if (!(FULL) && v == MV - 1) {                                                              \
          if (add) r = ADD(MLOAD(cv, mask), r);                                                    \
          MSTORE(cv, mask, r);                                                                     \
        } else {                                                                                   \
          if (add) r = ADD(LOADU(cv), r);                                                          \
          STOREU(cv, r);                                                                           \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

/* The entries [begin, end) with MV vectors of rows: whole blocks of NCMAX columns, then the
 * rest of the columns in one block (a case at or past NCMAX is never reached, and its block
 * is compiled away). FULL: the last vector of rows is whole, so plain loads and stores stand
 * in for the masked ones (same lanes, same chains). */
#define BS_TAIL(NAME, MV, NC, NCMAX, FULL)                                                \
  case NC:                                                                                \
    if ((NC) < (NCMAX))                                                                   \
      NAME##_block(MV, (NC) < (NCMAX) ? (NC) : 1, FULL, ap, csa, bp + j0 * csb, rsb, csb, \
                   cp + j0 * csc, csc, k, mask, add);                                     \
    break;
#define BS_ENTRIES(NAME, T, MV, NCMAX, FULL)                                                       \
  for (int64_t e = begin; e < end; e++, bs_cursor_next(g, &cur)) {                                 \
    BS_POINTERS(T)                                                                                 \
    bs_ahead_next(g, &ahead, e);                                                                   \
    int64_t j0 = 0;                                                                                \
    for (; j0 + (NCMAX) <= n; j0 += (NCMAX))                                                       \
      NAME##_block(MV, NCMAX, FULL, ap, csa, bp + j0 * csb, rsb, csb, cp + j0 * csc, csc, k, mask, \
                   add);                                                                           \
    switch (n - j0) {                                                                              \
      BS_TAIL(NAME, MV, 1, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 2, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 3, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 4, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 5, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 6, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 7, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 8, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 9, NCMAX, FULL)                                                            \
      BS_TAIL(NAME, MV, 10, NCMAX, FULL)                                                           \
      BS_TAIL(NAME, MV, 11, NCMAX, FULL)                                                           \
      default:                                                                                     \
        break;                                                                                     \
    }                                                                                              \
  }
#define BS_ROWS(NAME, T, TARGET, LANES, MT, MASK, MV, NCMAX)                              \
  __attribute__((target(TARGET), noinline)) static void NAME##_rows##MV(                  \
      const tl__gemm_batch *g, const bs_layout *lay, int64_t begin, int64_t end) {        \
    bs_cursor cur;                                                                        \
    bs_cursor_start(g, begin, &cur);                                                      \
    const int64_t n = lay->n, k = lay->k, csa = lay->csa, rsb = lay->rsb, csb = lay->csb, \
                  csc = lay->csc;                                                         \
    const int add = lay->add;                                                             \
    const MT mask = MASK((int)(lay->m - ((MV)-1) * (LANES)));                             \
    bs_ahead ahead;                                                                       \
    bs_ahead_start(g, begin, &ahead);                                                     \
    if (lay->m == (MV) * (LANES)) {                                                       \
      BS_ENTRIES(NAME, T, MV, NCMAX, 1)                                                   \
    } else {                                                                              \
      BS_ENTRIES(NAME, T, MV, NCMAX, 0)                                                   \
    }                                                                                     \
  }

/* Masks of the first r lanes (1 <= r <= lanes). */
#define BS_MASK_PD256(r) _mm256_cmpgt_epi64(_mm256_set1_epi64x(r), _mm256_setr_epi64x(0, 1, 2, 3))
#define BS_MASK_PS256(r) \
  _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define BS_MASK_PD512(r) ((__mmask8)((1u << (r)) - 1u))
#define BS_MLOAD_PD512(p, mask) _mm512_maskz_loadu_pd(mask, p)

/* AVX2 f64: 1 to 4 vectors of 4 rows, at most 12 accumulators (16 registers). */
BS_BLOCK(bs_d256, double, "avx2,fma", __m256d, 4, __m256i, _mm256_setzero_pd, _mm256_loadu_pd,
         _mm256_maskload_pd, _mm256_storeu_pd, _mm256_maskstore_pd, _mm256_set1_pd, _mm256_fmadd_pd,
         _mm256_add_pd)
BS_ROWS(bs_d256, double, "avx2,fma", 4, __m256i, BS_MASK_PD256, 1, 12)
BS_ROWS(bs_d256, double, "avx2,fma", 4, __m256i, BS_MASK_PD256, 2, 6)
BS_ROWS(bs_d256, double, "avx2,fma", 4, __m256i, BS_MASK_PD256, 3, 4)
BS_ROWS(bs_d256, double, "avx2,fma", 4, __m256i, BS_MASK_PD256, 4, 3)
/* AVX2 f32: 1 or 2 vectors of 8 rows. */
BS_BLOCK(bs_s256, float, "avx2,fma", __m256, 8, __m256i, _mm256_setzero_ps, _mm256_loadu_ps,
         _mm256_maskload_ps, _mm256_storeu_ps, _mm256_maskstore_ps, _mm256_set1_ps, _mm256_fmadd_ps,
         _mm256_add_ps)
BS_ROWS(bs_s256, float, "avx2,fma", 8, __m256i, BS_MASK_PS256, 1, 12)
BS_ROWS(bs_s256, float, "avx2,fma", 8, __m256i, BS_MASK_PS256, 2, 6)
/* AVX-512 f64 past 12 rows: 2 vectors of 8 rows by up to 8 columns (16 of 32 registers). */
BS_BLOCK(bs_d512, double, "avx512f", __m512d, 8, __mmask8, _mm512_setzero_pd, _mm512_loadu_pd,
         BS_MLOAD_PD512, _mm512_storeu_pd, _mm512_mask_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd,
         _mm512_add_pd)
BS_ROWS(bs_d512, double, "avx512f", 8, __mmask8, BS_MASK_PD512, 2, 8)

#endif

/* Row-vector entries through gemm_thin.c itself (the portable level). */
static void bs_thin_entries(const tl__gemm_batch *g, int64_t begin, int64_t end) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  bs_cursor cur;
  bs_cursor_start(g, begin, &cur);
  for (int64_t e = begin; e < end; e++, bs_cursor_next(g, &cur))
    (void)tl__gemm_thin(g->dtype, g->m, g->n, g->k, g->alpha, g->a + cur.oa * es, g->rsa, g->csa,
                        g->b + cur.ob * es, g->rsb, g->csb, g->beta, g->c + cur.oc * es, g->rsc,
                        g->csc);
}

void tl__gemm_batch_small(int isa, const tl__gemm_batch *g, int64_t begin, int64_t end) {
  bs_layout lay;
  if (begin >= end || !bs_layout_make(g, &lay)) return;
  const int level = tl__small_gemm_isa();
  if (isa < 0 || isa > level) isa = level;
  if (isa == 0 && bs_row_vector(g)) {
    bs_thin_entries(g, begin, end);
    return;
  }
#if TL_X86_KERNELS
  /* AVX-512 from 13 rows: at 9 to 12 three AVX2 vectors hold the rows with less masked
   * waste (same FMA chains, so the same bits) */
  if (g->dtype == TL_F64 && isa == 2 && lay.m > 12) {
    bs_d512_rows2(g, &lay, begin, end);
    return;
  }
  if (g->dtype == TL_F64 && isa >= 1) {
    switch ((lay.m + 3) / 4) {
      case 1:
        bs_d256_rows1(g, &lay, begin, end);
        break;
      case 2:
        bs_d256_rows2(g, &lay, begin, end);
        break;
      case 3:
        bs_d256_rows3(g, &lay, begin, end);
        break;
      default:
        bs_d256_rows4(g, &lay, begin, end);
        break;
    }
    return;
  }
  if (g->dtype == TL_F32 && isa >= 1) {
    if (lay.m <= 8)
      bs_s256_rows1(g, &lay, begin, end);
    else
      bs_s256_rows2(g, &lay, begin, end);
    return;
  }
#else
  (void)isa;
#endif
  if (g->dtype == TL_F64)
    bs_plain_f64(g, &lay, begin, end);
  else
    bs_plain_f32(g, &lay, begin, end);
}
