/* src/linalg/trmm.c: the triangular matrix products LAPACK asks the BLAS for (strmm_, dtrmm_,
 * ctrmm_, ztrmm_), defined by tenlane in place of BLIS's.
 *
 * Why: every blocked Householder update (dlarfb/zlarfb, under the QR, its Q, the bidiagonal
 * reduction and the application of the SVD's reflectors) multiplies its work block W, which
 * has as many rows as the matrix and one column per reflector (32), by the block's
 * triangular factors from the right: W := W V1, W T and W V1^T. BLIS runs those as a packed
 * trmm, whose set-up and packing cost more than the products at these sizes: perf put
 * BLIS's trmm (its kernel, packing and per-call work) at about 13% of dgesdd at n = 64, and
 * ztrmm at about 0.9 ms of zgeqrf + zungqr at n = 256 against OpenBLAS's 0.65.
 *
 * How (f64 and c128, side 'R', triangle order n <= 128, on AVX-512 CPUs): B := alpha B op(A).
 * A triangle of order above 16 is split in two and the off-diagonal part becomes one product
 * through gemm_blas.c (TL__TRMM_SPLIT); a smaller one is done one block of 8 output columns
 * at a time (TL__TRMM_RIGHT): the rows of alpha op(A) the block needs are written out densely,
 * with explicit zeros and the unit diagonal, into a small buffer, and 96 rows of B at a time
 * go through gemm_narrow.c's rank-k kernel into a scratch tile, which is copied back. Blocks go
 * from the last to the first when op(A) is upper triangular (each output block reads B's
 * columns up to its own) and from the first to the last when it is lower, so every block
 * reads columns not yet overwritten. Everything else (side 'L', f32 and c64, larger
 * triangles, CPUs without AVX-512 or tl__blas_isa_cap 0) goes to BLIS's typed trmm with the
 * context tenlane chose. Against OpenBLAS 0.3.21 serial's trmm on zlarfb's shapes (probe,
 * medians of 201, m = 32 to 512 rows, n = 16 to 64): ztrmm 1.0-1.7x its time where BLIS took
 * 1.3-3.8x, dtrmm 1.4-1.9x where BLIS took 1.7-6.0x (OpenBLAS has trmm kernels of its own;
 * these run the GEMM kernel on dense blocks). Splitting took less time than the
 * blocks alone (0.76-1.02x), most at small m and at n = 64.
 *
 * Contract: the reference BLAS's. An illegal argument calls xerbla_ with its position
 * (1 side, 2 uplo, 3 transa, 4 diag, 5 m, 6 n, 9 lda, 11 ldb) and returns with B untouched;
 * m or n 0 return at once; alpha 0 sets B to zero without reading A or B; A's other triangle
 * (and its diagonal, with diag 'U') is never read. For real types 'C' is 'T'. As in BLIS's
 * packed triangular blocks, a NaN or infinity in B can reach the other columns of its
 * 8-column block through the block's explicit zeros (the reference loops skip zero entries of
 * A instead); LAPACK's callers get finite input from tenlane's routes. Sums are in another
 * order than BLIS's, so results can differ from its in the last bits.
 *
 * Linking: as gemv.c's (tl__trmm_linked). All four are defined here because BLIS's archive
 * member defines all four. Uses 14 KiB of stack (and the products' own), no allocation;
 * thread-safe. */
#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "linalg_int.h"

int tl__trmm_linked(void) { return 1; }

/* Output columns per block, rows of B per kernel call, the largest triangle taken, and the
 * largest one the blocks take without a split. */
#define TRMM_JB 8
#define TRMM_MR 96
#define TRMM_MAX_N 128
#define TRMM_SPLIT_MAX (2 * TRMM_JB)

/* A two-valued argument ('L'/'R', 'U'/'L', 'U'/'N'): 1 for `yes`, 0 for `no`, -1 neither. */
static int flag_of(const char *c, char yes, char no) {
  const char u = tl__blas_letter(c);
  return u == yes ? 1 : u == no ? 0 : -1;
}

/* The reference BLAS's checks: the position of the first bad argument, 0 if none. */
static int check(int left, int upper, int trans, int unit, int m, int n, int lda, int ldb) {
  const int rows_a = left == 1 ? m : n;
  if (left < 0) return 1;
  if (upper < 0) return 2;
  if (trans < 0) return 3;
  if (unit < 0) return 4;
  if (m < 0) return 5;
  if (n < 0) return 6;
  if (lda < (rows_a > 1 ? rows_a : 1)) return 9;
  if (ldb < (m > 1 ? m : 1)) return 11;
  return 0;
}

/* B = 0 over m x n. */
#define TL__TRMM_ZERO(NAME, T)                                 \
  static void NAME(int m, int n, T *b, int ldb) {              \
    for (int j = 0; j < n; j++)                                \
      for (int i = 0; i < m; i++) b[i + (int64_t)j * ldb] = 0; \
  }
TL__TRMM_ZERO(zero_s, float)
TL__TRMM_ZERO(zero_d, double)
TL__TRMM_ZERO(zero_c, float complex)
TL__TRMM_ZERO(zero_z, double complex)

/* The right-side product on a triangle of order n <= TRMM_SPLIT_MAX: T the element type, CONJ
 * its conjugate, NARROW the rank-k call. op(A)[l, j] is A[l + j lda] for trans 0 and
 * A[j + l lda] (conjugated for 2) otherwise; it is upper triangular when `upper` differs from
 * `trans != 0`. */
#define TL__TRMM_RIGHT(NAME, T, CONJ, NARROW)                                                  \
  static void NAME(int upper, int trans, int unit, int m, int n, T alpha, const T *a, int lda, \
                   T *b, int ldb) {                                                            \
    const int op_upper = upper != (trans != 0);                                                \
    T tri[TRMM_SPLIT_MAX * TRMM_JB], tile[TRMM_MR * TRMM_JB];                                  \
    const int blocks = (n + TRMM_JB - 1) / TRMM_JB;                                            \
    for (int q = 0; q < blocks; q++) {                                                         \
      const int jb0 = (op_upper ? blocks - 1 - q : q) * TRMM_JB;                               \
      const int jb = n - jb0 < TRMM_JB ? n - jb0 : TRMM_JB;                                    \
      /* Rows l0..l1 of op(A) meet these columns: up to the block's end (upper), or from its   \
       * start (lower). */                                                                     \
      const int l0 = op_upper ? 0 : jb0, l1 = op_upper ? jb0 + jb : n, kk = l1 - l0;           \
      for (int jj = 0; jj < jb; jj++) {                                                        \
        const int j = jb0 + jj;                                                                \
        for (int l = l0; l < l1; l++) {                                                        \
          T v = 0; /* the other triangle: an explicit zero */                                  \
          if (l == j && unit)                                                                  \
            v = 1;                                                                             \
          else if (l == j || (op_upper ? l < j : l > j))                                       \
            v = trans == 0 ? a[l + (int64_t)j * lda] : a[j + (int64_t)l * lda];                \
          if (trans == 2) v = CONJ(v);                                                         \
          tri[(l - l0) + jj * kk] = alpha * v;                                                 \
        }                                                                                      \
      }                                                                                        \
      for (int r0 = 0; r0 < m; r0 += TRMM_MR) {                                                \
        const int rows = m - r0 < TRMM_MR ? m - r0 : TRMM_MR;                                  \
        T *b_rows = b + r0;                                                                    \
        NARROW(rows, jb, kk, b_rows + (int64_t)l0 * ldb, ldb, tri, kk, tile, TRMM_MR);         \
        for (int jj = 0; jj < jb; jj++)                                                        \
          memcpy(b_rows + (int64_t)(jb0 + jj) * ldb, tile + jj * TRMM_MR,                      \
                 (size_t)rows * sizeof(T));                                                    \
      }                                                                                        \
    }                                                                                          \
  }

/* C = A B (m x n, inner k) on the rank-k kernel, beta 0. */
static void narrow_d(int m, int n, int k, const double *a, int lda, const double *b, int ldb,
                     double *c, int ldc) {
  tl__gemm_narrow_d(0, 0, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}
static void narrow_z(int m, int n, int k, const double complex *a, int lda, const double complex *b,
                     int ldb, double complex *c, int ldc) {
  static const double one[2] = {1.0, 0.0}, zero[2] = {0.0, 0.0};
  tl__gemm_narrow_z(0, 0, m, n, k, one, (const double *)a, lda, (const double *)b, ldb, zero,
                    (double *)c, ldc);
}
static double conj_d(double v) { return v; }

TL__TRMM_RIGHT(blocks_d, double, conj_d, narrow_d)
TL__TRMM_RIGHT(blocks_z, double complex, conj, narrow_z)

void TL__BLAS_ENTRY(dgemm_)(const char *transa, const char *transb, const int *m, const int *n,
                            const int *k, const double *alpha, const double *a, const int *lda,
                            const double *b, const int *ldb, const double *beta, double *c,
                            const int *ldc, size_t transa_length, size_t transb_length);
void TL__BLAS_ENTRY(zgemm_)(const char *transa, const char *transb, const int *m, const int *n,
                            const int *k, const double complex *alpha, const double complex *a,
                            const int *lda, const double complex *b, const int *ldb,
                            const double complex *beta, double complex *c, const int *ldc,
                            size_t transa_length, size_t transb_length);

/* Larger triangles split in two (n1 a multiple of the block width, n2 the rest): with op(A)
 * upper, B2 := B2 U22, then B2 += alpha B1 U12 (one product through gemm_blas.c), then
 * B1 := B1 U11; with op(A) lower, B1 := B1 L11, B1 += alpha B2 L21, B2 := B2 L22. Each step
 * reads only columns the steps before it left as they were. The products are exact; only
 * the diagonal blocks of BLOCKS carry explicit zeros. */
#define TL__TRMM_SPLIT(NAME, T, BLOCKS, GEMM)                                                  \
  static void NAME(int upper, int trans, int unit, int m, int n, T alpha, const T *a, int lda, \
                   T *b, int ldb) {                                                            \
    if (n <= TRMM_SPLIT_MAX) {                                                                 \
      BLOCKS(upper, trans, unit, m, n, alpha, a, lda, b, ldb);                                 \
      return;                                                                                  \
    }                                                                                          \
    const int op_upper = upper != (trans != 0);                                                \
    const int n1 = (n / 2 + TRMM_JB - 1) / TRMM_JB * TRMM_JB, n2 = n - n1;                     \
    const T one = 1;                                                                           \
    const char tb = trans == 0 ? 'N' : trans == 1 ? 'T' : 'C';                                 \
    T *b1 = b, *b2 = b + (int64_t)n1 * ldb;                                                    \
    const T *a22 = a + n1 + (int64_t)n1 * lda;                                                 \
    /* op(A)'s off-diagonal block: A's block above the diagonal (upper A) or below it,         \
     * transposed when op(A) is. */                                                            \
    const T *off = upper ? a + (int64_t)n1 * lda : a + n1;                                     \
    if (op_upper) {                                                                            \
      NAME(upper, trans, unit, m, n2, alpha, a22, lda, b2, ldb);                               \
      GEMM("N", &tb, &m, &n2, &n1, &alpha, b1, &ldb, off, &lda, &one, b2, &ldb, 1, 1);         \
      NAME(upper, trans, unit, m, n1, alpha, a, lda, b1, ldb);                                 \
    } else {                                                                                   \
      NAME(upper, trans, unit, m, n1, alpha, a, lda, b1, ldb);                                 \
      GEMM("N", &tb, &m, &n1, &n2, &alpha, b2, &ldb, off, &lda, &one, b1, &ldb, 1, 1);         \
      NAME(upper, trans, unit, m, n2, alpha, a22, lda, b2, ldb);                               \
    }                                                                                          \
  }

TL__TRMM_SPLIT(right_d, double, blocks_d, TL__BLAS_ENTRY(dgemm_))
TL__TRMM_SPLIT(right_z, double complex, blocks_z, TL__BLAS_ENTRY(zgemm_))

/* tenlane's path where it applies: f64 or c128, side 'R', a triangle of at most TRMM_MAX_N,
 * AVX-512F present and not capped. */
static int own(int left, int n) {
  return left == 0 && n <= TRMM_MAX_N && tl__blas_own_kernels(TL__BLAS_OWN_TRMM);
}

/* One type's entry: checks, quick returns, then RIGHT (or NULL for none) or BLIS's trmm. */
#define TL__TRMM_ENTRY(NAME, NAME_UPPER, T, DTYPE, ZERO, RIGHT, IS_REAL)                          \
  void TL__BLAS_ENTRY(NAME)(const char *side, const char *uplo, const char *transa,               \
                            const char *diag, const int *m, const int *n, const T *alpha,         \
                            const T *a, const int *lda, T *b, const int *ldb, size_t side_length, \
                            size_t uplo_length, size_t transa_length, size_t diag_length);        \
  void TL__BLAS_ENTRY(NAME)(const char *side, const char *uplo, const char *transa,               \
                            const char *diag, const int *m, const int *n, const T *alpha,         \
                            const T *a, const int *lda, T *b, const int *ldb, size_t side_length, \
                            size_t uplo_length, size_t transa_length, size_t diag_length) {       \
    (void)side_length, (void)uplo_length, (void)transa_length, (void)diag_length;                 \
    const int left = flag_of(side, 'L', 'R'), upper = flag_of(uplo, 'U', 'L');                    \
    const int unit = flag_of(diag, 'U', 'N');                                                     \
    int trans = tl__blas_trans(transa);                                                           \
    const int bad = check(left, upper, trans, unit, *m, *n, *lda, *ldb);                          \
    if (bad != 0) {                                                                               \
      xerbla_(NAME_UPPER, &bad, 6);                                                               \
      return;                                                                                     \
    }                                                                                             \
    if (*m == 0 || *n == 0) return;                                                               \
    if (*alpha == 0) {                                                                            \
      ZERO(*m, *n, b, *ldb);                                                                      \
      return;                                                                                     \
    }                                                                                             \
    if (IS_REAL && trans == 2) trans = 1;                                                         \
    void (*right)(int, int, int, int, int, T, const T *, int, T *, int) = RIGHT;                  \
    if (right != NULL && own(left, *n))                                                           \
      right(upper, trans, unit, *m, *n, *alpha, a, *lda, b, *ldb);                                \
    else                                                                                          \
      tl__prov_trmm(DTYPE, !left, upper, trans, unit, *m, *n, alpha, a, *lda, b, *ldb);           \
  }

TL__TRMM_ENTRY(strmm_, "STRMM ", float, TL_F32, zero_s, NULL, 1)
TL__TRMM_ENTRY(dtrmm_, "DTRMM ", double, TL_F64, zero_d, right_d, 1)
TL__TRMM_ENTRY(ctrmm_, "CTRMM ", float complex, TL_C64, zero_c, NULL, 0)
TL__TRMM_ENTRY(ztrmm_, "ZTRMM ", double complex, TL_C128, zero_z, right_z, 0)
