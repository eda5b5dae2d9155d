/* The consumer's own dgemm_ (own_blas.c) and the count of its calls. */
#ifndef OWN_BLAS_H
#define OWN_BLAS_H

extern int own_dgemm_calls;
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc);

#endif
