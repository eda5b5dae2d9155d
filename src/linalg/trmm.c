/* src/linalg/trmm.c: the triangular matrix products LAPACK asks the BLAS for (strmm_, dtrmm_,
 * ctrmm_, ztrmm_), defined by tenlane in place of BLIS's.
 *
 * Why an entry of tenlane's own: LAPACK's trmm calls (every blocked Householder update,
 * dlarfb/zlarfb) then run on BLIS's typed trmm with the context tenlane chose, and a bad
 * argument reaches tenlane's xerbla_ (which records it and returns) with the reference BLAS's
 * positions.
 *
 * Decided 2026-12-05: the triangle kernel this file carried (f64 and c128 right-side products
 * on gemm_narrow.c's rank-k kernel) is gone. Issue 30's rule keeps a hand-written
 * replacement only for a 15% gain on a user-level route; `make bench-replacements` measured
 * it at most 13.4% (SVD f64 n = 64; QR 3-6%, LU about 1%) in one quiet run
 * (benches/results/2026-12-05-s3-provider-replacements.txt). Every call now goes to the
 * provider's trmm.
 *
 * Contract: the reference BLAS's. An illegal argument calls xerbla_ with its position
 * (1 side, 2 uplo, 3 transa, 4 diag, 5 m, 6 n, 9 lda, 11 ldb) and returns with B untouched;
 * m or n 0 return at once; alpha 0 sets B to zero without reading A or B; A's other triangle
 * (and its diagonal, with diag 'U') is never read. For real types 'C' is 'T'.
 *
 * Linking: as gemv.c's (tl__trmm_linked). All four are defined here because BLIS's archive
 * member defines all four. No allocation; thread-safe. */
#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "linalg_int.h"

int tl__trmm_linked(void) { return 1; }

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

/* One type's entry: checks, quick returns, then the provider's trmm. */
#define TL__TRMM_ENTRY(NAME, NAME_UPPER, T, DTYPE, ZERO, IS_REAL)                                 \
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
    tl__prov_trmm(DTYPE, !left, upper, trans, unit, *m, *n, alpha, a, *lda, b, *ldb);             \
  }

TL__TRMM_ENTRY(strmm_, "STRMM ", float, TL_F32, zero_s, 1)
TL__TRMM_ENTRY(dtrmm_, "DTRMM ", double, TL_F64, zero_d, 1)
TL__TRMM_ENTRY(ctrmm_, "CTRMM ", float complex, TL_C64, zero_c, 0)
TL__TRMM_ENTRY(ztrmm_, "ZTRMM ", double complex, TL_C128, zero_z, 0)
