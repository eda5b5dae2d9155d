/* src/linalg/trsm_small.c: triangular solves with a small triangle, in plain loops.
 *
 * BLAS trsm reaches BLIS's level-3 front end, which checks its packing buffers and thread
 * bookkeeping out of BLIS's process-wide pools under a mutex, about seven lock operations
 * per call. For a small triangle (the rank-sized solves of an interpolation step, say) the
 * locks cost more than the arithmetic, and lanes solving at once contend on them. Here the
 * substitution runs as column updates (axpy-shaped, unit stride) and dot products over
 * columns of the triangle: no lock, no allocation, no thread.
 *
 * Invariant: the result is B := op(A)^-1 B (side 'L') or B op(A)^-1 (side 'R'), as trsm
 * with alpha 1 gives it; the caller has ruled out exact zeros on a non-unit diagonal. */
#include <complex.h>

#include "linalg_int.h"

#define TL__TRSM_SMALL(NAME, T, CONJ)                                                              \
  /* op(A)[k, j]: A, A^T or A^H. */                                                                \
  static inline T NAME##_op(char trans, const T *a, lapack_int lda, lapack_int k, lapack_int j) {  \
    if (trans == 'N') return a[k + (int64_t)lda * j];                                              \
    T v = a[j + (int64_t)lda * k];                                                                 \
    return trans == 'C' ? CONJ(v) : v;                                                             \
  }                                                                                                \
  /* X op(A) = B, X m x n, A n x n: column j of X from the columns solved before it. */            \
  static void NAME##_right(char uplo, char trans, int unit, lapack_int m, lapack_int n,            \
                           const T *a, lapack_int lda, T *b, lapack_int ldb) {                     \
    int forward = (uplo == 'U') == (trans == 'N'); /* op(A) upper: j ascending */                  \
    for (lapack_int step = 0; step < n; step++) {                                                  \
      lapack_int j = forward ? step : n - 1 - step;                                                \
      T *xj = b + (int64_t)ldb * j;                                                                \
      lapack_int k0 = forward ? 0 : j + 1, k1 = forward ? j : n;                                   \
      for (lapack_int k = k0; k < k1; k++) {                                                       \
        T c = NAME##_op(trans, a, lda, k, j);                                                      \
        const T *xk = b + (int64_t)ldb * k;                                                        \
        for (lapack_int i = 0; i < m; i++) xj[i] -= c * xk[i];                                     \
      }                                                                                            \
      if (!unit) {                                                                                 \
        T d = NAME##_op(trans, a, lda, j, j);                                                      \
        for (lapack_int i = 0; i < m; i++) xj[i] /= d;                                             \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  /* op(A) X = B, A m x m, X m x n: each column of X by substitution. */                           \
  static void NAME##_left(char uplo, char trans, int unit, lapack_int m, lapack_int n, const T *a, \
                          lapack_int lda, T *b, lapack_int ldb) {                                  \
    for (lapack_int j = 0; j < n; j++) {                                                           \
      T *x = b + (int64_t)ldb * j;                                                                 \
      if (trans == 'N') { /* column updates of A */                                                \
        int lower = uplo == 'L';                                                                   \
        for (lapack_int step = 0; step < m; step++) {                                              \
          lapack_int k = lower ? step : m - 1 - step;                                              \
          const T *ak = a + (int64_t)lda * k;                                                      \
          if (!unit) x[k] /= ak[k];                                                                \
          lapack_int i0 = lower ? k + 1 : 0, i1 = lower ? m : k;                                   \
          for (lapack_int i = i0; i < i1; i++) x[i] -= x[k] * ak[i];                               \
        }                                                                                          \
      } else {                     /* op(A)[i, k] = A[k, i]: dot products with columns of A */     \
        int forward = uplo == 'U'; /* A^T lower: i ascending */                                    \
        for (lapack_int step = 0; step < m; step++) {                                              \
          lapack_int i = forward ? step : m - 1 - step;                                            \
          const T *ai = a + (int64_t)lda * i;                                                      \
          lapack_int k0 = forward ? 0 : i + 1, k1 = forward ? i : m;                               \
          T s = x[i];                                                                              \
          for (lapack_int k = k0; k < k1; k++) s -= (trans == 'C' ? CONJ(ai[k]) : ai[k]) * x[k];   \
          if (!unit) s /= trans == 'C' ? CONJ(ai[i]) : ai[i];                                      \
          x[i] = s;                                                                                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

#define TL__REAL_CONJ(v) (v)
TL__TRSM_SMALL(trsm_s, float, TL__REAL_CONJ)
TL__TRSM_SMALL(trsm_d, double, TL__REAL_CONJ)
TL__TRSM_SMALL(trsm_c, float complex, conjf)
TL__TRSM_SMALL(trsm_z, double complex, conj)

void tl__trsm_small(tl_dtype dtype, char side, char uplo, char trans, char diag, lapack_int m,
                    lapack_int n, const void *a, lapack_int lda, void *b, lapack_int ldb) {
  int unit = diag == 'U', left = side == 'L';
  switch (dtype) {
    case TL_F32:
      (left ? trsm_s_left : trsm_s_right)(uplo, trans, unit, m, n, a, lda, b, ldb);
      break;
    case TL_F64:
      (left ? trsm_d_left : trsm_d_right)(uplo, trans, unit, m, n, a, lda, b, ldb);
      break;
    case TL_C64:
      (left ? trsm_c_left : trsm_c_right)(uplo, trans, unit, m, n, a, lda, b, ldb);
      break;
    case TL_C128:
      (left ? trsm_z_left : trsm_z_right)(uplo, trans, unit, m, n, a, lda, b, ldb);
      break;
  }
}
