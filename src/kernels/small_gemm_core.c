/* src/kernels/small_gemm_core.c: a GEMM kernel for small real shapes that needs no code
 * generation, for the calls that come before a shape has earned a libxsmm JIT kernel
 * (small_gemm.c decides which).
 *
 * C = alpha A B + beta C for f32/f64 with any element strides (negative, zero on an
 * extent-1 axis, row- or column-major). The arithmetic is fixed, a function of the shape
 * alone: each element of C is one FMA chain over p = 0..k-1 in increasing order started
 * from 0, then alpha acc + beta C as scalars compute it (alpha acc rounded, beta C rounded,
 * their sum; a product by alpha 1 and the term of beta 0 are left out, as neither changes a
 * bit; no contraction into an FMA under clang either). Blocking, loop order and instruction
 * set only decide which register holds a chain.
 *
 * Scheme (AVX2+FMA; AVX-512 CPUs run the earlier kernel, TL__SMALL_GEMM_WIDE below, for
 * rows beyond AVX2's reach, because this one could not be run on AVX-512 here; both give
 * the same bits). C is cut into register blocks of MV vectors of rows (1 to 4) by NC columns, at
 * most 12 accumulators, each in a register for the whole k loop (a k step: MV loads of A's
 * column, NC broadcasts of B's entries, MV x NC FMAs), written to C once. MV, NC and "the
 * last vector is partial" are compile-time constants of each block's code (the row
 * functions instantiate every combination), so no block computes a column it does not
 * store or loops over its own rows or columns; a partial last vector uses masked loads of
 * A and masked stores to C, so A's and C's rows are never padded or copied for it. With
 * AVX2, row blocks are 4 vectors by 3 columns when A's columns are 32-byte aligned or k <
 * 16, else 2 vectors by 6 columns. The rows left at
 * the end go in one block of up to 3 vectors (by 4 columns) rather than leaving a thin
 * 1-vector block. A with unit-stride rows is read in place; other A is copied one block of
 * at most 2 vectors at a time into `pack` (16 KiB for f64). With rsc 1, alpha 1 and beta 0 or 1 the
 * accumulators go to C from the registers; any other alpha, beta or rsc spills the block to the
 * stack (at most 1.5 KiB) and one out-of-line loop writes it.
 *
 * Why (measured on Zen 2, AVX2 f64, hot operands, alpha 1, beta 0, against libxsmm 1.17's
 * JIT kernel, which was 1.2-2.2x faster than the kernel before this one). That kernel's
 * inner loop was fine; its cost was around it: gcc kept the 12 accumulators in an array on
 * the stack (zeroed and written back through memory at every block), the epilogue looped
 * over a run-time column count through a second stack copy, every n % 6 block computed
 * repeated columns, and the one big function ran ~450 instructions for an 8x6x1 call
 * (valgrind; 333 now). Now, in a probe with calloc'd operands (three runs, each beside
 * one of the old kernel): 32x64x32 1.06-1.09x libxsmm's time (was 1.27-1.46x), 64x64x32
 * 1.03-1.09x (1.22-1.27x), 64x64x9 1.09-1.13x (1.55-1.95x), 16x32x16 1.01-1.15x
 * (1.59-1.85x), 8x16x8 1.27-1.40x (1.91-2.15x; most of what is left is the call itself,
 * ~970 instructions in all for 256 FMAs), 48x96x48 0.96-1.02x, 64x64x64 0.89-1.06x.
 * 4 vectors by 3 columns loads twice the vectors of A per FMA that 2 by 6 does and half
 * the broadcasts: 3-10% faster than 2 by 6 with A's loads aligned, but 10-25% slower from
 * k = 16 up when half of them split cache lines (A's columns off 32 bytes), hence the
 * choice by alignment. Unrolling k (gcc then ran out of registers and spilled) and one
 * call per block (a vzeroupper at every return) measured slower.
 *
 * Without AVX2+FMA a portable scalar loop runs. Pure core: never fails, allocates nothing; k is at
 * most TL__SMALL_GEMM_MAX_K. */
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

#define COLS 6 /* the most columns of a register block (1 or 2 vectors of rows) */

/* gcc: keep the rare spilled path one small scalar copy (at O3 gcc would vectorize and
 * clone it, several KiB each). */
#if defined(__GNUC__) && !defined(__clang__)
#define TL__SG_COLD __attribute__((noinline, noclone, optimize("no-tree-vectorize")))
#else
#define TL__SG_COLD __attribute__((noinline))
#endif

/* One call's operands, as the drivers take them. */
#define TL__SG_ARGS(NAME, T)                       \
  typedef struct NAME {                            \
    const T *a, *b;                                \
    T *c;                                          \
    int64_t m, n, k, rsa, csa, rsb, csb, rsc, csc; \
    T alpha, beta;                                 \
    int mode; /* TL__SG_STORE, ... */              \
  } NAME;
TL__SG_ARGS(tl__sg_dargs, double)
TL__SG_ARGS(tl__sg_sargs, float)

/* How a block reaches C: with rsc 1 and alpha 1, stored (beta 0) or added to C (beta 1)
 * from the registers; else spilled to the stack and written by one out-of-line loop. */
enum { TL__SG_STORE, TL__SG_ADD, TL__SG_SPILLED };

/* Column q of a block (when q < NC), written out for q = 0..5 so that every accumulator is
 * a named variable that compilers keep in a register (an array indexed in loops was left
 * on the stack): one k step (broadcast B's entry, one FMA per vector of rows), the spill,
 * the write to C. */
#define TL__SG_FMA(q, VT, SET1, FMA)           \
  if (NC > q) {                                \
    VT s = SET1(bk[q * csb]);                  \
    c##q##0 = FMA(a0, s, c##q##0);             \
    if (MV > 1) c##q##1 = FMA(a1, s, c##q##1); \
    if (MV > 2) c##q##2 = FMA(a2, s, c##q##2); \
    if (MV > 3) c##q##3 = FMA(a3, s, c##q##3); \
  }
/* Vector v of a 4-vector block's k step (NC <= 3 columns). */
#define TL__SG_VROW(v, VT, LANES, LOADU, MLOAD, FMA)                                     \
  {                                                                                      \
    const VT a = MK && v == 3 ? MLOAD(ap + v * (LANES), mask) : LOADU(ap + v * (LANES)); \
    c0##v = FMA(a, s0, c0##v);                                                           \
    if (NC > 1) c1##v = FMA(a, s1, c1##v);                                               \
    if (NC > 2) c2##v = FMA(a, s2, c2##v);                                               \
  }
#define TL__SG_SPILL(q, LANES, STOREU)                 \
  if (NC > q) {                                        \
    STOREU(out[q], c##q##0);                           \
    if (MV > 1) STOREU(out[q] + (LANES), c##q##1);     \
    if (MV > 2) STOREU(out[q] + 2 * (LANES), c##q##2); \
    if (MV > 3) STOREU(out[q] + 3 * (LANES), c##q##3); \
  }
#define TL__SG_PUT(NAME, T, q, LANES, ADDC)                                       \
  if (NC > q) {                                                                   \
    T *cq = cp + q * csc;                                                         \
    NAME##_put(ADDC, cq, c##q##0, (MK && MV == 1), mask);                         \
    if (MV > 1) NAME##_put(ADDC, cq + (LANES), c##q##1, MK && MV == 2, mask);     \
    if (MV > 2) NAME##_put(ADDC, cq + 2 * (LANES), c##q##2, MK && MV == 3, mask); \
    if (MV > 3) NAME##_put(ADDC, cq + 3 * (LANES), c##q##3, MK && MV == 4, mask); \
  }
#define TL__SG_PUTS(NAME, T, LANES, ADDC) \
  TL__SG_PUT(NAME, T, 0, LANES, ADDC)     \
  TL__SG_PUT(NAME, T, 1, LANES, ADDC)     \
  TL__SG_PUT(NAME, T, 2, LANES, ADDC)     \
  TL__SG_PUT(NAME, T, 3, LANES, ADDC)     \
  TL__SG_PUT(NAME, T, 4, LANES, ADDC) TL__SG_PUT(NAME, T, 5, LANES, ADDC)

/* One block of NC columns at column j0 of a row block. */
#define TL__SG_BLOCK(NAME, MV, MK, NC) \
  NAME##_block(x, MV, MK, NC, ap, astep, mask, mr, b + j0 * csb, c + j0 * csc)

/* A row block of one kind (MV vectors, MK: the last one partial): whole blocks of
 * 12 / MV (at most COLS) columns, then the rest of the columns in one block. */
#define TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, MV, MK)        \
  __attribute__((target(TARGET), noinline)) static void NAME##_row##MV##MK( \
      const ARGS *x, const T *ap, int64_t astep, int64_t mr, T *c) {        \
    enum { NCMAX = MV > 2 ? 12 / MV : COLS };                               \
    const MT mask = MASK((int)(MK ? mr - (MV - 1) * (LANES) : (LANES)));    \
    const T *b = x->b;                                                      \
    const int64_t n = x->n, csb = x->csb, csc = x->csc;                     \
    int64_t j0 = 0;                                                         \
    for (; j0 + NCMAX <= n; j0 += NCMAX) TL__SG_BLOCK(NAME, MV, MK, NCMAX); \
    switch (n - j0) {                                                       \
      case 5:                                                               \
        TL__SG_BLOCK(NAME, MV, MK, 5);                                      \
        break;                                                              \
      case 4:                                                               \
        TL__SG_BLOCK(NAME, MV, MK, 4);                                      \
        break;                                                              \
      case 3:                                                               \
        TL__SG_BLOCK(NAME, MV, MK, 3);                                      \
        break;                                                              \
      case 2:                                                               \
        TL__SG_BLOCK(NAME, MV, MK, 2);                                      \
        break;                                                              \
      case 1:                                                               \
        TL__SG_BLOCK(NAME, MV, MK, 1);                                      \
        break;                                                              \
      default:                                                              \
        break;                                                              \
    }                                                                       \
  }

/* TL__SG_IF1(x) is x, TL__SG_IF0(x) nothing: the 4-vector row blocks exist only where W4. */
#define TL__SG_IF1(x) x
#define TL__SG_IF0(x)

/* TL__SMALL_GEMM_SIMD, part 1: the block size, and writing a block to C (spilled through memory, or
 * a vector at a time). */
#define TL__SG_SIMD_WRITE(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, \
                          STOREU, MSTORE, SET1, FMA, MUL, ADD)                                   \
  enum { NAME##_MB = 4 * (LANES) };                                                              \
  /* A block spilled to out (mr rows by nc columns) written to C: alpha acc + beta C, as         \
   * scalars would compute it (alpha acc, rounded; beta C, rounded; their sum), in vectors       \
   * when rsc is 1, else element by element. */                                                  \
  __attribute__((target(TARGET))) TL__SG_COLD static VT NAME##_spilled(                          \
      VT live, const ARGS *x, const T(*out)[NAME##_MB], int64_t mr, int64_t nc, T *c) {          \
    const T alpha = x->alpha, beta = x->beta;                                                    \
    const int64_t rsc = x->rsc, csc = x->csc;                                                    \
    if (rsc == 1) {                                                                              \
      const VT va = SET1(alpha), vb = SET1(beta);                                                \
      for (int64_t j = 0; j < nc; j++)                                                           \
        for (int64_t i = 0; i < mr; i += (LANES)) {                                              \
          T *cv = c + j * csc + i;                                                               \
          const int part = mr - i < (LANES);                                                     \
          const MT mask = MASK((int)(part ? mr - i : (LANES)));                                  \
          VT v = MUL(va, LOADU(out[j] + i));                                                     \
          if (beta != (T)0) v = ADD(v, MUL(vb, part ? MLOAD(cv, mask) : LOADU(cv)));             \
          if (part)                                                                              \
            MSTORE(cv, mask, v);                                                                 \
          else                                                                                   \
            STOREU(cv, v);                                                                       \
        }                                                                                        \
      return live;                                                                               \
    }                                                                                            \
    for (int64_t j = 0; j < nc; j++) {                                                           \
      T *col = c + j * csc;                                                                      \
      for (int64_t i = 0; i < mr; i++) {                                                         \
        T v = alpha * out[j][i];                                                                 \
        if (beta != (T)0) {                                                                      \
          T w = beta * col[i * rsc];                                                             \
          v = v + w;                                                                             \
        }                                                                                        \
        col[i * rsc] = v;                                                                        \
      }                                                                                          \
    }                                                                                            \
    return live;                                                                                 \
  }                                                                                              \
  /* One vector of a block written to C (its first lanes only when part): acc, or C + acc. */    \
  __attribute__((target(TARGET), always_inline)) static inline void NAME##_put(                  \
      const int addc, T *cv, VT v, const int part, MT mask) {                                    \
    if (addc) v = ADD(part ? MLOAD(cv, mask) : LOADU(cv), v);                                    \
    if (part)                                                                                    \
      MSTORE(cv, mask, v);                                                                       \
    else                                                                                         \
      STOREU(cv, v);                                                                             \
  }

/* TL__SMALL_GEMM_SIMD, part 2: one register block over all of k. */
#define TL__SG_SIMD_BLOCK(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD,  \
                          STOREU, MSTORE, SET1, FMA, MUL, ADD)                                    \
  /* One register block: MV vectors of rows from ap by NC columns from bp, over all of k. */      \
  __attribute__((target(TARGET), always_inline)) static inline void NAME##_block(                 \
      const ARGS *x, const int MV, const int MK, const int NC, const T *ap, int64_t astep,        \
      MT mask, int64_t mr, const T *bp, T *cp) {                                                  \
    const int64_t k = x->k, rsb = x->rsb, csb = x->csb, csc = x->csc;                             \
    VT c00 = SETZERO(), c01 = SETZERO(), c02 = SETZERO(), c03 = SETZERO(), c10 = SETZERO(),       \
       c11 = SETZERO(), c12 = SETZERO(), c13 = SETZERO(), c20 = SETZERO(), c21 = SETZERO(),       \
       c22 = SETZERO(), c23 = SETZERO(), c30 = SETZERO(), c31 = SETZERO(), c32 = SETZERO(),       \
       c33 = SETZERO(), c40 = SETZERO(), c41 = SETZERO(), c42 = SETZERO(), c43 = SETZERO(),       \
       c50 = SETZERO(), c51 = SETZERO(), c52 = SETZERO(), c53 = SETZERO();                        \
    const T *bk = bp;                                                                             \
    for (int64_t p = 0; p < k; p++, ap += astep, bk += rsb) {                                     \
      if (MV == 4 && sizeof(VT) == 32) {                                                          \
        /* 16 registers: NC <= 3 broadcasts, then each vector of A loaded and used at once */     \
        const VT s0 = SET1(bk[0]), s1 = NC > 1 ? SET1(bk[csb]) : s0,                              \
                 s2 = NC > 2 ? SET1(bk[2 * csb]) : s0;                                            \
        TL__SG_VROW(0, VT, LANES, LOADU, MLOAD, FMA)                                              \
        TL__SG_VROW(1, VT, LANES, LOADU, MLOAD, FMA)                                              \
        TL__SG_VROW(2, VT, LANES, LOADU, MLOAD, FMA)                                              \
        TL__SG_VROW(3, VT, LANES, LOADU, MLOAD, FMA)                                              \
      } else {                                                                                    \
        /* MV vectors of A, then each column's broadcast and FMAs (MV + 13 registers; with        \
         * AVX-512's 32 gcc keeps each vector of A in one rather than folding its load into       \
         * every FMA) */                                                                          \
        const VT a0 = MK && MV == 1 ? MLOAD(ap, mask) : LOADU(ap);                                \
        const VT a1 = MV < 2          ? a0                                                        \
                      : MK && MV == 2 ? MLOAD(ap + (LANES), mask)                                 \
                                      : LOADU(ap + (LANES));                                      \
        const VT a2 = MV < 3          ? a0                                                        \
                      : MK && MV == 3 ? MLOAD(ap + 2 * (LANES), mask)                             \
                                      : LOADU(ap + 2 * (LANES));                                  \
        const VT a3 = MV < 4 ? a0 : MK ? MLOAD(ap + 3 * (LANES), mask) : LOADU(ap + 3 * (LANES)); \
        TL__SG_FMA(0, VT, SET1, FMA)                                                              \
        TL__SG_FMA(1, VT, SET1, FMA)                                                              \
        TL__SG_FMA(2, VT, SET1, FMA)                                                              \
        TL__SG_FMA(3, VT, SET1, FMA) TL__SG_FMA(4, VT, SET1, FMA) TL__SG_FMA(5, VT, SET1, FMA)    \
      }                                                                                           \
    }                                                                                             \
    const int mode = x->mode;                                                                     \
    if (mode == TL__SG_STORE) {                                                                   \
      TL__SG_PUTS(NAME, T, LANES, 0)                                                              \
    } else if (mode == TL__SG_ADD) {                                                              \
      TL__SG_PUTS(NAME, T, LANES, 1)                                                              \
    } else {                                                                                      \
      T out[COLS][NAME##_MB];                                                                     \
      TL__SG_SPILL(0, LANES, STOREU)                                                              \
      TL__SG_SPILL(1, LANES, STOREU)                                                              \
      TL__SG_SPILL(2, LANES, STOREU)                                                              \
      TL__SG_SPILL(3, LANES, STOREU)                                                              \
      TL__SG_SPILL(4, LANES, STOREU)                                                              \
      TL__SG_SPILL(5, LANES, STOREU)                                                              \
      /* a vector passed and returned: no vzeroupper on either side of the call (costly on        \
       * Zen 2 with stores in flight); the return value is dead */                                \
      c00 = NAME##_spilled(c00, x, (const T(*)[NAME##_MB])out, mr, NC, cp);                       \
      (void)c00;                                                                                  \
    }                                                                                             \
  }

/* TL__SMALL_GEMM_SIMD, part 3: the row-block functions, one per (vectors, masked), and the switch
 * over them. */
#define TL__SG_SIMD_ROWS(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD,   \
                         STOREU, MSTORE, SET1, FMA, MUL, ADD)                                     \
  TL__SG_IF##W4(TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 4, 0))                       \
      TL__SG_IF##W4(TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 4, 1))                   \
          TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 3, 0)                              \
              TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 3, 1)                          \
                  TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 2, 0)                      \
                      TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 2, 1)                  \
                          TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 1, 0)              \
                              TL__SG_ROWFN(NAME, ARGS, TARGET, T, LANES, MT, MASK, 1,             \
                                           1) /* One row block of mr rows (A's column p at ap + p \
                                               * astep, unit-stride rows). */                     \
      __attribute__((target(TARGET), always_inline)) static inline void NAME##_rows(              \
          const ARGS *x, const T *ap, int64_t astep, int64_t mr, T *ci) {                         \
    const int64_t mv = (mr + (LANES)-1) / (LANES), mk = mr != mv * (LANES);                       \
    switch (mv * 2 + mk) {                                                                        \
      case 8:                                                                                     \
        TL__SG_IF##W4(NAME##_row40(x, ap, astep, mr, ci));                                        \
        break;                                                                                    \
      case 9:                                                                                     \
        TL__SG_IF##W4(NAME##_row41(x, ap, astep, mr, ci));                                        \
        break;                                                                                    \
      case 6:                                                                                     \
        NAME##_row30(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
      case 7:                                                                                     \
        NAME##_row31(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
      case 4:                                                                                     \
        NAME##_row20(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
      case 5:                                                                                     \
        NAME##_row21(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
      case 2:                                                                                     \
        NAME##_row10(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
      default:                                                                                    \
        NAME##_row11(x, ap, astep, mr, ci);                                                       \
        break;                                                                                    \
    }                                                                                             \
  }

/* TL__SMALL_GEMM_SIMD, part 4: the entry, A read in place or packed first. */
#define TL__SG_SIMD_CALL(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD,  \
                         STOREU, MSTORE, SET1, FMA, MUL, ADD)                                    \
  /* A with strided rows: each row block (at most 2 vectors, so that `pack` stays what it        \
   * was) copied into `pack` first, at a column stride of its rows rounded up to whole           \
   * vectors (the lanes past mr are never read: those loads are masked). */                      \
  __attribute__((target(TARGET), noinline)) static void NAME##_packed(const ARGS *x) {           \
    enum { MBP = 2 * (LANES) };                                                                  \
    _Alignas(64) T pack[TL__SMALL_GEMM_MAX_K * MBP];                                             \
    const int64_t m = x->m, k = x->k, rsa = x->rsa, csa = x->csa;                                \
    for (int64_t i0 = 0, mr; i0 < m; i0 += mr) {                                                 \
      mr = m - i0 < MBP ? m - i0 : MBP;                                                          \
      const int64_t ps = (mr + (LANES)-1) / (LANES) * (LANES);                                   \
      const T *ap = x->a + i0 * rsa;                                                             \
      for (int64_t p = 0; p < k; p++) {                                                          \
        const T *src = ap + p * csa;                                                             \
        T *dst = pack + p * ps;                                                                  \
        for (int64_t i = 0; i < mr; i++) dst[i] = src[i * rsa];                                  \
      }                                                                                          \
      NAME##_rows(x, pack, ps, mr, x->c + i0 * x->rsc);                                          \
    }                                                                                            \
  }                                                                                              \
  /* The call, A read in place (rows at unit stride): row blocks of 4 vectors (MB rows) where    \
   * W4 and A's columns are vector-aligned or k < 16, else of 2 (see the top of the file);       \
   * the rows past the last whole block in one block of up to 3 vectors. */                      \
  __attribute__((target(TARGET))) static void NAME(const ARGS *x) {                              \
    if (x->rsa != 1) {                                                                           \
      NAME##_packed(x);                                                                          \
      return;                                                                                    \
    }                                                                                            \
    const int64_t m = x->m, csa = x->csa, rsc = x->rsc;                                          \
    const size_t vbytes = sizeof(VT);                                                            \
    const int wide =                                                                             \
        W4 &&                                                                                    \
        (x->k < 16 || ((uintptr_t)x->a % vbytes == 0 && (size_t)csa * sizeof(T) % vbytes == 0)); \
    for (int64_t i0 = 0, mr; i0 < m; i0 += mr) {                                                 \
      const int64_t left = m - i0;                                                               \
      if (wide)                                                                                  \
        mr = left <= NAME##_MB ? left : left <= NAME##_MB + (LANES) ? 3 * (LANES) : NAME##_MB;   \
      else                                                                                       \
        mr = left <= 3 * (LANES) ? left : 2 * (LANES);                                           \
      NAME##_rows(x, x->a + i0, csa, mr, x->c + i0 * rsc);                                       \
    }                                                                                            \
  }

/* One instance per (element type, vector ISA); MB = 4 vectors of rows. W4: 4-vector row
 * blocks are used (AVX2; with AVX-512 gcc folds the loads of A into each of their FMAs, 15
 * loads per 12 FMAs, and they are unmeasured there, so AVX-512 keeps 2-vector blocks). */
#define TL__SMALL_GEMM_SIMD(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, \
                            STOREU, MSTORE, SET1, FMA, MUL, ADD)                                   \
  TL__SG_SIMD_WRITE(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, STOREU, \
                    MSTORE, SET1, FMA, MUL, ADD)                                                   \
  TL__SG_SIMD_BLOCK(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, STOREU, \
                    MSTORE, SET1, FMA, MUL, ADD)                                                   \
  TL__SG_SIMD_ROWS(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, STOREU,  \
                   MSTORE, SET1, FMA, MUL, ADD)                                                    \
  TL__SG_SIMD_CALL(NAME, W4, ARGS, T, TARGET, VT, LANES, MT, MASK, SETZERO, LOADU, MLOAD, STOREU,  \
                   MSTORE, SET1, FMA, MUL, ADD)

/* Masks of the first r lanes (1 <= r <= lanes). */
#define TL__SG_MASK_PD256(r) \
  _mm256_cmpgt_epi64(_mm256_set1_epi64x(r), _mm256_setr_epi64x(0, 1, 2, 3))
#define TL__SG_MASK_PS256(r) \
  _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))

/* One k step for column q of the register block: broadcast B's entry, two FMAs. */
#define TL__SG_STEP(q, SET1, FMA)    \
  s = SET1(bq[q][o]);                \
  acc[q][0] = FMA(a0, s, acc[q][0]); \
  acc[q][1] = FMA(a1, s, acc[q][1]);

/* The same for a block of at most one vector of rows (the second vector stays zero). */
#define TL__SG_HALF(q, SET1, FMA) acc[q][0] = FMA(a0, SET1(bq[q][o]), acc[q][0]);

/* The AVX-512 kernel, one instance per element type: MB rows = 2 vectors of LANES, COLS
 * columns, 2 x COLS accumulators (kept as it was measured and tested on an AVX-512 machine;
 * the scheme above was tuned and tested on AVX2 only, and no AVX-512 CPU was at hand to
 * test it there). A full block of unit-stride rows is read from A in place; a partial
 * or strided one is first copied into `pack` (zero-padded). */
#define TL__SMALL_GEMM_WIDE(NAME, T, TARGET, VT, LANES, SETZERO, LOADU, STOREU, SET1, FMA, ADD)   \
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

#if TL_X86_KERNELS
TL__SMALL_GEMM_WIDE(dgemm_avx512, double, "avx512f", __m512d, 8, _mm512_setzero_pd, _mm512_loadu_pd,
                    _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd)
TL__SMALL_GEMM_WIDE(sgemm_avx512, float, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps,
                    _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)

TL__SMALL_GEMM_SIMD(dgemm_avx2, 1, tl__sg_dargs, double, "avx2,fma", __m256d, 4, __m256i,
                    TL__SG_MASK_PD256, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_maskload_pd,
                    _mm256_storeu_pd, _mm256_maskstore_pd, _mm256_set1_pd, _mm256_fmadd_pd,
                    _mm256_mul_pd, _mm256_add_pd)
TL__SMALL_GEMM_SIMD(sgemm_avx2, 1, tl__sg_sargs, float, "avx2,fma", __m256, 8, __m256i,
                    TL__SG_MASK_PS256, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_maskload_ps,
                    _mm256_storeu_ps, _mm256_maskstore_ps, _mm256_set1_ps, _mm256_fmadd_ps,
                    _mm256_mul_ps, _mm256_add_ps)
#endif

/* Without AVX2: the plain loops (column of C at a time, accumulated in double or float). */
#define TL__SMALL_GEMM_PLAIN(NAME, ARGS, T)                                                    \
  __attribute__((noinline)) static void NAME(const ARGS *x) {                                  \
    const T *a = x->a, *b = x->b;                                                              \
    T *c = x->c;                                                                               \
    const int64_t rsa = x->rsa, csa = x->csa, rsb = x->rsb, csb = x->csb, rsc = x->rsc,        \
                  csc = x->csc;                                                                \
    const T alpha = x->alpha, beta = x->beta;                                                  \
    for (int64_t j = 0; j < x->n; j++)                                                         \
      for (int64_t i = 0; i < x->m; i++) {                                                     \
        T sum = (T)0;                                                                          \
        for (int64_t p = 0; p < x->k; p++) sum += a[i * rsa + p * csa] * b[p * rsb + j * csb]; \
        T *cij = c + i * rsc + j * csc;                                                        \
        *cij = beta == (T)0 ? alpha * sum : alpha * sum + beta * *cij;                         \
      }                                                                                        \
  }

TL__SMALL_GEMM_PLAIN(dgemm_plain, tl__sg_dargs, double)
TL__SMALL_GEMM_PLAIN(sgemm_plain, tl__sg_sargs, float)

/* 2: AVX-512F, 1: AVX2+FMA, 0: neither. Every thread that finds it unset computes the
 * same value, so a relaxed store is enough. */
static int isa_level(void) {
  static atomic_int level = -1;
  int v = atomic_load_explicit(&level, memory_order_relaxed);
  if (v < 0) {
#if TL_X86_KERNELS
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512f")                                 ? 2
        : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                          : 0;
#else
    v = 0; /* no vector kernels in this build */
#endif
    if (v > tl__isa_level()) v = tl__isa_level(); /* TL_ISA */
    atomic_store_explicit(&level, v, memory_order_relaxed);
  }
  return v;
}

int tl__small_gemm_isa(void) { return isa_level(); }

/* How a call writes C (TL__SG_STORE, ...). */
static int write_mode(double alpha, double beta, int64_t rsc) {
  if (rsc == 1 && alpha == 1.0 && beta == 0.0) return TL__SG_STORE;
  if (rsc == 1 && alpha == 1.0 && beta == 1.0) return TL__SG_ADD;
  return TL__SG_SPILLED;
}

void tl__small_gemm_kernel(int isa, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                           tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                           int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc,
                           int64_t csc) {
  if (m <= 0 || n <= 0) return;
  /* Left to choose: AVX-512 but AVX2 for a block of rows that fits AVX2's (two 256-bit
   * vectors); both give the same bits (one FMA chain per element, in k order). */
  const int level = isa_level();
  if (isa < 0 && level == 2 && m <= (dtype == TL_F64 ? 8 : 16)) isa = 1;
  if (isa < 0 || isa > level) isa = level;
  if (dtype == TL_F64) {
    const tl__sg_dargs x = {a,   b,   c,        m,       n,
                            k,   rsa, csa,      rsb,     csb,
                            rsc, csc, alpha.re, beta.re, write_mode(alpha.re, beta.re, rsc)};
#if TL_X86_KERNELS
    if (isa == 1)
      dgemm_avx2(&x);
    else if (isa == 2)
      dgemm_avx512(m, n, k, alpha.re, a, rsa, csa, b, rsb, csb, beta.re, c, rsc, csc);
    else
#endif
      dgemm_plain(&x);
  } else {
    const float al = (float)alpha.re, be = (float)beta.re;
    const tl__sg_sargs x = {
        a, b, c, m, n, k, rsa, csa, rsb, csb, rsc, csc, al, be, write_mode(al, be, rsc)};
#if TL_X86_KERNELS
    if (isa == 1)
      sgemm_avx2(&x);
    else if (isa == 2)
      sgemm_avx512(m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
    else
#endif
      sgemm_plain(&x);
  }
}
