/* src/kernels/providers.h: BLIS's header behind the warning exceptions it needs (it is not
 * warning-clean under tenlane's flags, and it is not tenlane's code), and the BLIS context
 * and one-thread runtime tenlane chose at first use (provider_blis.c). BLIS builds only
 * (TL_PROVIDER_BLIS, cmake/Providers.cmake): for provider_blis.c, blis_level1.c and the
 * tests, benchmarks and examples that compare against direct BLIS calls, which include it
 * only under TL_PROVIDER_BLIS. */
#ifndef TL_KERNELS_PROVIDERS_H
#define TL_KERNELS_PROVIDERS_H
#if !TL_PROVIDER_BLIS
#error "kernels/providers.h is BLIS only (TL_PROVIDER=blis)"
#endif

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <blis.h>
#pragma GCC diagnostic pop

/* The BLIS context every tenlane GEMM uses (skx/haswell kernels picked by CPU features when
 * BLIS does not recognise the CPU), initialising the providers on first call. Any thread. */
cntx_t *tl__blis_context(void);
/* The context for complex dtypes: the same, or its induced-method (1m) form. Any thread. */
cntx_t *tl__blis_context_complex(void);
#if TL_BLIS_INTERNALS
/* Put tenlane's complex-double level-1 kernels (blis_level1.c: axpyv, dotxv, scalv, scal2v,
 * dotxf, axpyf) into `cntx`, a context of architecture `arch`, in each slot that holds
 * BLIS's reference kernel for that architecture (BLIS 0.9's x86 contexts have only those for
 * complex types); slots with a tuned kernel are kept. Needs AVX2 and FMA; `avx512` (the CPU
 * has AVX-512F) takes the AVX-512 axpyv. Once, at provider initialisation. */
void tl__blis_add_level1(cntx_t *cntx, arch_t arch, int avx512);
/* tl__blis_add_level1 with `on` 1; with 0, BLIS's reference kernels back in the slots that hold
 * tenlane's (tl__prov_own_level1). Only while no BLAS call uses `cntx`. */
void tl__blis_set_level1(cntx_t *cntx, arch_t arch, int avx512, int on);
/* The kernels tl__blis_add_level1 installs for one ISA, for tests that call them directly:
 * AVX2 + FMA, or with `avx512` the AVX-512F axpyv (the others have AVX2 forms only). */
typedef struct tl__blis_level1_kernels {
  zaxpyv_ker_ft axpyv;
  zdotxv_ker_ft dotxv;
  zscalv_ker_ft scalv;
  zscal2v_ker_ft scal2v;
  zdotxf_ker_ft dotxf;
  zaxpyf_ker_ft axpyf;
} tl__blis_level1_kernels;
tl__blis_level1_kernels tl__blis_level1(int avx512);
#endif
/* A copy of the one-thread BLIS runtime tenlane passes with it. */
rntm_t tl__blis_runtime(void);

#endif
