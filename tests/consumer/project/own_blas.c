/* A consumer's own BLAS, reduced to one routine: a column-major dgemm_ (no transposes) that
 * counts its calls. check.sh archives it (libownblas.a) and links it after a static
 * libtenlane.a, as a program that brings its own static BLAS would. */
#include "own_blas.h"

int own_dgemm_calls;

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc) {
  (void)transa;
  (void)transb;
  own_dgemm_calls++;
  for (int j = 0; j < *n; j++)
    for (int i = 0; i < *m; i++) {
      double sum = 0.0;
      for (int p = 0; p < *k; p++) sum += a[i + p * *lda] * b[p + j * *ldb];
      c[i + j * *ldc] = *alpha * sum + *beta * c[i + j * *ldc];
    }
}
