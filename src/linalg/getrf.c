/* src/linalg/getrf.c: LU with partial pivoting, tenlane's own (tl__getrf), on raw
 * column-major buffers, with LAPACK getrf's contract (1-based pivots, info > 0 at the first
 * exactly zero pivot, the factorization completed anyway).
 *
 * Why not reference LAPACK's getrf: its blocked loop and getrf2's recursion make a BLAS call
 * for every small piece (idamax, swap, scal, trsm and gemm on a few columns), and each BLIS
 * call costs about a microsecond of set-up and takes process-wide locks; measured here,
 * n = 64 f64 took 0.21 ms against OpenBLAS serial's 12 us, n = 256 1.1-1.3 ms against
 * 0.29 ms. Here the recursion (split the columns in two, factor the left half, solve and
 * update the right half, factor its lower part) sends every update to tenlane's serial
 * GEMM (tl__gemm_serial: its small kernels up to 64^3 / 80^3, BLIS beyond), and the narrow
 * panels and small triangles run in plain loops the compiler vectorises.
 *
 * Pure core: no allocation, no thread, never fails; same pivot choice as LAPACK (largest
 * |re| + |im|, first on ties) up to rounding. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "linalg_int.h"

/* ---- the pivot search ------------------------------------------------------------------ *
 * The offset of the first largest |x| (|re| + |im| for complex) among x[0..len) of a column,
 * NaNs never chosen; 0 with *best = -1 when every entry is NaN (the plain loop's answer too).
 * One plain loop for every instruction-set level. (An AVX2 build of the search, the
 * interchanges and the panel loops was removed on 2026-12-05: it gained at most 11.7% on
 * the LU route, below the 15% a replacement must show;
 * benches/results/2026-12-05-late-provider-replacements.txt.) */
#define TL__PIVOT_PLAIN(NAME, R, ABS)                                  \
  static lapack_int NAME(lapack_int len, const R *x, int w, R *best) { \
    lapack_int p = 0;                                                  \
    R top = -1;                                                        \
    for (lapack_int i = 0; i < len; i++) {                             \
      R v = ABS(x[w * i]);                                             \
      if (w == 2) v += ABS(x[w * i + 1]);                              \
      if (v > top) top = v, p = i;                                     \
    }                                                                  \
    *best = top;                                                       \
    return p;                                                          \
  }
TL__PIVOT_PLAIN(pivot_plain_d, double, fabs)
TL__PIVOT_PLAIN(pivot_plain_f, float, fabsf)

/* Columns factored by the plain panel loop (real, complex), and the order up to which a
 * triangle is solved through its explicit inverse. Measured (n = 64..256, f64 and c128):
 * wider panels leave more of the work in loops that vectorise poorly. */
#define PANEL_COLUMNS_REAL 8
#define PANEL_COLUMNS_COMPLEX 4
#define TRSM_BASE 8

/* One dtype's panel and triangle loops. R: the real type; C: 1 for complex (interleaved
 * re, im), 0 for real. An element (i, j) is at a + W * (i + j * lda), W = 1 + C. */
#define TL__GETRF_LOOPS(SUFFIX, R, C, PIVOT)                                                       \
  static lapack_int panel_##SUFFIX(lapack_int m, lapack_int n, void *av, lapack_int lda,           \
                                   lapack_int *ipiv) {                                             \
    const int w = 1 + C;                                                                           \
    R *a = av;                                                                                     \
    lapack_int info = 0, k = m < n ? m : n;                                                        \
    for (lapack_int j = 0; j < k; j++) {                                                           \
      R *col = a + (size_t)w * ((size_t)j * (size_t)lda);                                          \
      R best;                                                                                      \
      lapack_int p = j + PIVOT(m - j, col + w * j, w, &best);                                      \
      ipiv[j] = p + 1;                                                                             \
      if (best == 0) {                                                                             \
        if (info == 0) info = j + 1;                                                               \
        continue;                                                                                  \
      }                                                                                            \
      if (p != j)                                                                                  \
        for (lapack_int c = 0; c < n; c++) {                                                       \
          R *x = a + (size_t)w * ((size_t)j + (size_t)c * (size_t)lda);                            \
          R *y = a + (size_t)w * ((size_t)p + (size_t)c * (size_t)lda);                            \
          for (int q = 0; q < w; q++) {                                                            \
            R t = x[q];                                                                            \
            x[q] = y[q];                                                                           \
            y[q] = t;                                                                              \
          }                                                                                        \
        }                                                                                          \
      /* Scale the column below the pivot by 1 / pivot (Smith's form: no overflow in |p|^2). */    \
      R pr = col[w * j], pi = C ? col[w * j + C] : 0, rr, ri;                                      \
      if ((pr < 0 ? -pr : pr) >= (pi < 0 ? -pi : pi)) {                                            \
        R q = pi / pr, d = pr + pi * q;                                                            \
        rr = 1 / d, ri = -q / d;                                                                   \
      } else {                                                                                     \
        R q = pr / pi, d = pi + pr * q;                                                            \
        rr = q / d, ri = -1 / d;                                                                   \
      }                                                                                            \
      for (lapack_int i = j + 1; i < m; i++) {                                                     \
        R xr = col[w * i], xi = C ? col[w * i + C] : 0;                                            \
        col[w * i] = xr * rr - xi * ri;                                                            \
        if (C) col[w * i + C] = xr * ri + xi * rr;                                                 \
      }                                                                                            \
      /* Rank-one update of the rest of the panel. */                                              \
      for (lapack_int c = j + 1; c < n; c++) {                                                     \
        R *dst = a + (size_t)w * ((size_t)c * (size_t)lda);                                        \
        R tr = dst[w * j], ti = C ? dst[w * j + C] : 0;                                            \
        for (lapack_int i = j + 1; i < m; i++) {                                                   \
          R xr = col[w * i], xi = C ? col[w * i + C] : 0;                                          \
          dst[w * i] -= xr * tr - xi * ti;                                                         \
          if (C) dst[w * i + C] -= xr * ti + xi * tr;                                              \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    return info;                                                                                   \
  }                                                                                                \
  /* b (k x n, ldb) = L^-1 b for the unit lower triangle L (k x k, lda). */                        \
  static void lunit_##SUFFIX(lapack_int k, lapack_int n, const void *lv, lapack_int lda, void *bv, \
                             lapack_int ldb) {                                                     \
    const int w = 1 + C;                                                                           \
    const R *l = lv;                                                                               \
    R *b = bv;                                                                                     \
    for (lapack_int c = 0; c < n; c++) {                                                           \
      R *x = b + (size_t)w * ((size_t)c * (size_t)ldb);                                            \
      for (lapack_int p = 0; p < k; p++) {                                                         \
        const R *lp = l + (size_t)w * ((size_t)p * (size_t)lda);                                   \
        R tr = x[w * p], ti = C ? x[w * p + C] : 0;                                                \
        for (lapack_int i = p + 1; i < k; i++) {                                                   \
          R yr = lp[w * i], yi = C ? lp[w * i + C] : 0;                                            \
          x[w * i] -= yr * tr - yi * ti;                                                           \
          if (C) x[w * i + C] -= yr * ti + yi * tr;                                                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

TL__GETRF_LOOPS(s, float, 0, pivot_plain_f)
TL__GETRF_LOOPS(d, double, 0, pivot_plain_d)
TL__GETRF_LOOPS(c, float, 1, pivot_plain_f)
TL__GETRF_LOOPS(z, double, 1, pivot_plain_d)

typedef struct lu_ops {
  tl_dtype dtype;
  size_t esize;
  lapack_int panel_columns;
  lapack_int (*panel)(lapack_int m, lapack_int n, void *a, lapack_int lda, lapack_int *ipiv);
  void (*lunit)(lapack_int k, lapack_int n, const void *l, lapack_int lda, void *b, lapack_int ldb);
  void *pack; /* scratch for tl__gemm_serial's packed complex kernel, or NULL */
} lu_ops;

static char *at(const lu_ops *ops, void *a, lapack_int lda, lapack_int i, lapack_int j) {
  return (char *)a + ops->esize * ((size_t)i + (size_t)j * (size_t)lda);
}

/* c -= a b through tenlane's serial GEMM (column-major, leading dimension lda for all). */
static void update(const lu_ops *ops, lapack_int m, lapack_int n, lapack_int k, const void *a,
                   const void *b, void *c, lapack_int lda) {
  /* Cancelled (tl_exec_cancel): the trailing updates are skipped, the rest of the recursion
   * is panel work of O(n^2), and the route drops the factors (tl__la_cancelled). */
  if (m == 0 || n == 0 || k == 0 || tl__exec_current_cancelled()) return;
  tl__gemm_serial(ops->dtype, m, n, k, tl_scalar_real(-1.0), a, 1, lda, b, 1, lda,
                  tl_scalar_real(1.0), c, 1, lda, ops->pack);
}

/* Columns of b per GEMM in solve_base (its copy lives on the stack). */
#define SOLVE_CHUNK 64

/* b (k x n) = L^-1 b for k <= TRSM_BASE: L^-1 is formed once (a unit lower triangle of
 * order <= TRSM_BASE, whose entries partial pivoting keeps <= 1 in size) and applied by
 * GEMM, a chunk of columns at a time. Solving each column by loops runs vectors of length
 * k at most, which is what made the triangles the largest cost of the factorization. */
static void solve_base(const lu_ops *ops, lapack_int k, lapack_int n, const void *l, void *b,
                       lapack_int lda) {
  _Alignas(64) char inverse[TRSM_BASE * TRSM_BASE * 16];
  _Alignas(64) char chunk[TRSM_BASE * SOLVE_CHUNK * 16];
  memset(inverse, 0, ops->esize * (size_t)k * (size_t)k);
  double one = 1.0;
  for (lapack_int i = 0; i < k; i++) {
    char *d = inverse + ops->esize * (size_t)(i + i * k);
    if (ops->dtype == TL_F32 || ops->dtype == TL_C64) {
      float onef = 1.0f;
      memcpy(d, &onef, sizeof onef);
    } else {
      memcpy(d, &one, sizeof one);
    }
  }
  ops->lunit(k, k, l, lda, inverse, k);
  for (lapack_int c0 = 0; c0 < n; c0 += SOLVE_CHUNK) {
    lapack_int w = n - c0 < SOLVE_CHUNK ? n - c0 : SOLVE_CHUNK;
    for (lapack_int c = 0; c < w; c++)
      memcpy(chunk + ops->esize * (size_t)(c * k), at(ops, b, lda, 0, c0 + c),
             ops->esize * (size_t)k);
    tl__gemm_serial(ops->dtype, k, w, k, tl_scalar_real(1.0), inverse, 1, k, chunk, 1, k,
                    tl_scalar_real(0.0), at(ops, b, lda, 0, c0), 1, lda, ops->pack);
  }
}

/* b (k x n) = L^-1 b, L unit lower k x k: halves recursively, the off-diagonal block by GEMM. */
static void solve_lower(const lu_ops *ops, lapack_int k, lapack_int n, void *l, void *b,
                        lapack_int lda) {
  if (k <= TRSM_BASE) {
    if (n <= 2)
      ops->lunit(k, n, l, lda, b, lda);
    else
      solve_base(ops, k, n, l, b, lda);
    return;
  }
  lapack_int h = k / 2;
  solve_lower(ops, h, n, l, b, lda);
  update(ops, k - h, n, h, at(ops, l, lda, h, 0), b, at(ops, b, lda, h, 0), lda);
  solve_lower(ops, k - h, n, at(ops, l, lda, h, h), at(ops, b, lda, h, 0), lda);
}

/* Row interchanges ipiv[0..count) (1-based, relative to row 0) on columns [0, n). Elements
 * move as whole words of their size (4, 8 or 16 bytes): a memcpy of a size known only at run
 * time was a library call per element, a tenth of an n = 256 factorization. Four columns
 * take each interchange together (one read of the pivot, four independent swaps): one column
 * at a time, each swap waited on the one before it, and the interchanges were still a tenth
 * of an f64 LU at n = 256. */
#define TL__SWAP_ROWS(NAME, T, WORDS)                                                       \
  static void NAME(void *a, lapack_int lda, lapack_int n, const lapack_int *ipiv,           \
                   lapack_int count) {                                                      \
    const size_t step = (size_t)WORDS * (size_t)lda;                                        \
    lapack_int c = 0;                                                                       \
    for (; c + 4 <= n; c += 4) {                                                            \
      T *c0 = (T *)a + step * (size_t)c, *c1 = c0 + step, *c2 = c1 + step, *c3 = c2 + step; \
      for (lapack_int i = 0; i < count; i++) {                                              \
        lapack_int p = ipiv[i] - 1;                                                         \
        if (p == i) continue;                                                               \
        for (int q = 0; q < WORDS; q++) {                                                   \
          const size_t x = (size_t)WORDS * (size_t)i + (size_t)q;                           \
          const size_t y = (size_t)WORDS * (size_t)p + (size_t)q;                           \
          T t0 = c0[x], t1 = c1[x], t2 = c2[x], t3 = c3[x];                                 \
          c0[x] = c0[y], c1[x] = c1[y], c2[x] = c2[y], c3[x] = c3[y];                       \
          c0[y] = t0, c1[y] = t1, c2[y] = t2, c3[y] = t3;                                   \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
    for (; c < n; c++) {                                                                    \
      T *col = (T *)a + step * (size_t)c;                                                   \
      for (lapack_int i = 0; i < count; i++) {                                              \
        lapack_int p = ipiv[i] - 1;                                                         \
        if (p == i) continue;                                                               \
        for (int q = 0; q < WORDS; q++) {                                                   \
          T t = col[WORDS * i + q];                                                         \
          col[WORDS * i + q] = col[WORDS * p + q];                                          \
          col[WORDS * p + q] = t;                                                           \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
TL__SWAP_ROWS(swap_rows_4, uint32_t, 1)
TL__SWAP_ROWS(swap_rows_8, uint64_t, 1)
TL__SWAP_ROWS(swap_rows_16, uint64_t, 2)

static void swap_rows(const lu_ops *ops, void *a, lapack_int lda, lapack_int n,
                      const lapack_int *ipiv, lapack_int count) {
  if (ops->esize == 4)
    swap_rows_4(a, lda, n, ipiv, count);
  else if (ops->esize == 8)
    swap_rows_8(a, lda, n, ipiv, count);
  else
    swap_rows_16(a, lda, n, ipiv, count);
}

static lapack_int factor(const lu_ops *ops, lapack_int m, lapack_int n, void *a, lapack_int lda,
                         lapack_int *ipiv) {
  lapack_int k = m < n ? m : n;
  if (k <= ops->panel_columns) return ops->panel(m, n, a, lda, ipiv);
  lapack_int n1 = k / 2, n2 = n - n1;
  lapack_int info = factor(ops, m, n1, a, lda, ipiv);
  void *a12 = at(ops, a, lda, 0, n1), *a21 = at(ops, a, lda, n1, 0), *a22 = at(ops, a, lda, n1, n1);
  swap_rows(ops, a12, lda, n2, ipiv, n1);
  solve_lower(ops, n1, n2, a, a12, lda);
  update(ops, m - n1, n2, n1, a21, a12, a22, lda);
  lapack_int info2 = factor(ops, m - n1, n2, a22, lda, ipiv + n1);
  if (info == 0 && info2 > 0) info = info2 + n1;
  lapack_int rest = k - n1;
  swap_rows(ops, a21, lda, n1, ipiv + n1, rest);
  for (lapack_int i = n1; i < k; i++) ipiv[i] += n1;
  return info;
}

size_t tl__getrf_pack_bytes(tl_dtype dtype, lapack_int m, lapack_int n) {
  /* Every product here is at most m x n by min(m, n). */
  return tl__gemm_serial_pack_bound(dtype, m, n, m < n ? m : n);
}

lapack_int tl__getrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                     lapack_int *ipiv, void *pack) {
  lu_ops ops;
  ops.dtype = dtype;
  ops.pack = pack;
  ops.esize = tl_dtype_size(dtype);
  ops.panel_columns = tl_dtype_is_complex(dtype) ? PANEL_COLUMNS_COMPLEX : PANEL_COLUMNS_REAL;
  switch (dtype) {
    case TL_F32:
      ops.panel = panel_s, ops.lunit = lunit_s;
      break;
    case TL_F64:
      ops.panel = panel_d, ops.lunit = lunit_d;
      break;
    case TL_C64:
      ops.panel = panel_c, ops.lunit = lunit_c;
      break;
    default:
      ops.panel = panel_z, ops.lunit = lunit_z;
      break;
  }
  if (m <= 0 || n <= 0) return 0;
  return factor(&ops, m, n, a, lda, ipiv);
}
