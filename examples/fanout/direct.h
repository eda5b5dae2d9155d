/* examples/fanout/direct.h: the direct backend's BLAS-level calls, shared by direct.c
 * (the factorizations, through LAPACK) and direct_blas.c (through BLIS and libxsmm). */
#ifndef FANOUT_DIRECT_H
#define FANOUT_DIRECT_H

#include "patch.h"

/* The fan_ops gemm of the direct backend: libxsmm for small f64 shapes (tenlane's bound),
 * BLIS with tenlane's context otherwise. */
int fan_direct_gemm(fan_call *call, int m, int n, int k, const void *a, int lda, const void *b,
                    int ldb, void *c, int ldc);
/* x (m x n, ldx) := x T^-1, T the upper or lower triangle of t (n x n), BLAS trsm. */
void fan_direct_trsm_right(fan_dtype dtype, int lower, int unit, int m, int n, const void *t,
                           int ldt, void *x, int ldx);
/* The 2-norm of x (m reals), BLAS nrm2. */
double fan_direct_norm(int m, const double *x);

#endif
