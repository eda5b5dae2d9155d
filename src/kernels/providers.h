/* src/kernels/providers.h: the providers' headers (BLIS, libxsmm) behind the warning
 * exceptions they need (they are not warning-clean under tenlane's flags, and they are not
 * tenlane's code), and the BLIS context and one-thread runtime tenlane chose at first use.
 * For src/kernels and the benchmarks that compare against direct provider calls. */
#ifndef TL_KERNELS_PROVIDERS_H
#define TL_KERNELS_PROVIDERS_H

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <blis.h>
#include <libxsmm.h>
#pragma GCC diagnostic pop

/* The BLIS context every tenlane GEMM uses (skx/haswell kernels picked by CPU features when
 * BLIS does not recognise the CPU), initialising the providers on first call. Any thread. */
cntx_t *tl__blis_context(void);
/* The context for complex dtypes: the same, or its induced-method (1m) form. Any thread. */
cntx_t *tl__blis_context_complex(void);
/* Put tenlane's level-1 kernels (blis_level1.c) into the skx context `cntx` in place of
 * BLIS's reference ones (complex axpyv). Once, at provider initialisation; needs AVX-512F. */
void tl__blis_add_level1(cntx_t *cntx);
/* A copy of the one-thread BLIS runtime tenlane passes with it. */
rntm_t tl__blis_runtime(void);

#endif
