/* src/kernels/provider.c: the provider-neutral half of the provider boundary: the choice
 * between tenlane's own GEMM kernels and the provider's, the one-time set-up, and the
 * provider string.
 *
 * The provider itself sits behind the tl__prov_* functions (kernels.h), defined by exactly
 * one file of the build: provider_blis.c (BLIS's typed API, the context tenlane picks) or
 * provider_blas.c (a plain Fortran BLAS: reference BLAS or OpenBLAS). cmake/Providers.cmake
 * picks the file (TL_PROVIDER); nothing else in src/ names a provider. Routes and the BLAS
 * replacements of src/linalg call the boundary, never a provider.
 *
 * Small f32/f64 GEMMs go to small_gemm.c, tiny complex GEMMs to gemm_small_complex.c and
 * larger complex ones, on AVX-512 CPUs, to gemm_packed_complex.c, whatever the provider;
 * the rest to the provider (tl__prov_gemm).
 *
 * Invariants: every provider call is single-threaded (serial BLIS with a one-thread
 * runtime, OpenBLAS's serial build, reference BLAS), so the only numerical threads are the
 * pool's workers and the callers; and the calls never fail (shapes were checked by the
 * route). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* 1 sends the complex GEMMs gemm_packed_complex.c would take to the provider instead
 * (bench_providers' earn-its-place row; set it only while no GEMM runs). */
int tl__packed_complex_off = 0;

static pthread_once_t providers_once = PTHREAD_ONCE_INIT;
static tl__provider_choice provider_choice;
static int provider_blis_saw;
static char provider_name[96];

tl__provider_choice tl__provider_choose(const tl__cpu_features *f, int blis_saw) {
  tl__provider_choice choice;
  memset(&choice, 0, sizeof choice);
  choice.small_complex = f->avx512f && f->fma ? TL__SMALL_COMPLEX_AVX512
                         : f->avx2 && f->fma  ? TL__SMALL_COMPLEX_AVX2
                                              : TL__SMALL_COMPLEX_PORTABLE;
  /* BLIS 0.9 has no AVX-512 complex micro-kernel; tenlane's needs AVX-512F only. */
  choice.packed_complex = f->avx512f && f->fma;
  /* BLIS (sup off, provider_blis.c) and reference BLAS compute an element of C the same way
   * in any block; a provider that does not says so in tl__prov_setup. */
  choice.provider_split = 1;
  /* BLIS's skx configuration needs the same AVX-512 subsets its own detection asks for. */
  int skx = f->avx512f && f->avx512dq && f->avx512cd && f->avx512bw && f->avx512vl && f->fma;
  if (blis_saw == TL__BLIS_SAW_OTHER ||
      ((blis_saw == TL__BLIS_SAW_ZEN || blis_saw == TL__BLIS_SAW_HASWELL) && !skx)) {
    /* BLIS's own detection knows the CPU (or the provider is not BLIS): keep its choice. */
    choice.blis = TL__BLIS_DETECTED;
    return choice;
  }
  if (skx) {
    /* Generic; a Zen context on a Zen with AVX-512 (newer than BLIS 0.9 knows); or haswell
     * on a CPU with skx's subsets, where BLIS 0.9 could not count two AVX-512 FMA units in
     * the brand string. With two (every Xeon Gold and Platinum, and the cloud VMs that hide
     * the tier) skx's kernels have twice haswell's peak; with one they have the same. */
    choice.blis = TL__BLIS_SKX;
    choice.complex_1m = 1; /* skx has no complex micro-kernels in BLIS 0.9 */
    choice.zen_c64_blocks = blis_saw == TL__BLIS_SAW_ZEN;
  } else if (f->avx2 && f->fma) {
    choice.blis = TL__BLIS_HASWELL; /* with its own complex micro-kernels */
  } else {
    choice.blis = TL__BLIS_DETECTED; /* generic: nothing better to offer */
  }
  return choice;
}

static tl__cpu_features cpu_features(void) {
  tl__cpu_features f;
  memset(&f, 0, sizeof f);
#if TL_X86_KERNELS
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") != 0;
  f.fma = __builtin_cpu_supports("fma") != 0;
  f.avx512f = __builtin_cpu_supports("avx512f") != 0;
  f.avx512dq = __builtin_cpu_supports("avx512dq") != 0;
  f.avx512cd = __builtin_cpu_supports("avx512cd") != 0;
  f.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
  f.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
#endif /* elsewhere none of these: the provider's own choice, tenlane's portable kernels */
  /* TL_ISA caps what the kernels and the provider's set-up may use (isa.c). */
  const int level = tl__isa_level();
  if (level < TL__ISA_AVX512) f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = 0;
  if (level < TL__ISA_AVX2) f.avx2 = f.fma = 0;
  return f;
}

static void providers_init_once(void) {
  provider_blis_saw = tl__prov_start();
  tl__cpu_features features = cpu_features();
  tl__provider_choice choice = tl__provider_choose(&features, provider_blis_saw);
  char prov[64];
  tl__prov_setup(&features, &choice, prov, sizeof prov);
  provider_choice = choice;
  snprintf(provider_name, sizeof provider_name, "%s%s isa:%s", prov,
           choice.packed_complex ? "+tl-complex" : "", tl__isa_name(tl__isa_level()));
}

void tl__providers_init(void) {
  static _Thread_local int thread_ready;
  pthread_once(&providers_once, providers_init_once);
  if (thread_ready) return;
  thread_ready = 1;
  tl__prov_thread(&provider_choice);
}

tl__provider_choice tl__provider_current(void) {
  tl__providers_init();
  return provider_choice;
}

int tl__provider_blis_saw(void) {
  tl__providers_init();
  return provider_blis_saw;
}

const char *tl_kernels_provider(void) {
  tl__providers_init();
  return provider_name;
}

static int packed_complex_on(void) {
  return provider_choice.packed_complex && !tl__packed_complex_off;
}

int tl__gemm_serial_kernel(tl_dtype dtype, int64_t m, int64_t n, int64_t k, int64_t rsa,
                           int64_t rsc, int64_t csb, int64_t csc) {
  /* Tiny complex shapes: tenlane's own kernel (gemm_small_complex.c). */
  if (tl__gemm_small_complex_takes(provider_choice.small_complex, dtype, m, n, k, rsa, rsc, csb,
                                   csc))
    return TL__SERIAL_SMALL_COMPLEX;
  /* Larger complex shapes: tenlane's blocked kernel, given its scratch. */
  if (tl__gemm_packed_complex_takes(packed_complex_on(), dtype, m, n, k))
    return TL__SERIAL_PACKED_COMPLEX;
  /* Small real shapes: the hand kernel (small_gemm.c). */
  if (tl__small_gemm_fits(dtype, m, n, k)) return TL__SERIAL_SMALL_REAL;
  return TL__SERIAL_PROVIDER;
}

void tl__gemm_serial_on(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                        tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                        int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc,
                        void *pack) {
  if (m == 0 || n == 0) return;
  if (kernel == TL__SERIAL_SMALL_COMPLEX &&
      tl__gemm_small_complex(provider_choice.small_complex, dtype, m, n, k, alpha, a, rsa, csa, b,
                             rsb, csb, beta, c, rsc, csc))
    return;
  if (kernel == TL__SERIAL_PACKED_COMPLEX &&
      tl__gemm_packed_complex(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc,
                              pack))
    return;
  if (kernel == TL__SERIAL_SMALL_REAL &&
      tl__small_gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc))
    return;
  tl__prov_gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

void tl__gemm_serial(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                     const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                     int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc, void *pack) {
  if (m == 0 || n == 0) return;
  tl__gemm_serial_on(tl__gemm_serial_kernel(dtype, m, n, k, rsa, rsc, csb, csc), dtype, m, n, k,
                     alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc, pack);
}

size_t tl__gemm_serial_pack_bytes(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  tl__providers_init();
  if (!tl__gemm_packed_complex_takes(packed_complex_on(), dtype, m, n, k)) return 0;
  return tl__gemm_packed_complex_bytes(dtype, m, n, k);
}

size_t tl__gemm_serial_pack_bound(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  tl__providers_init();
  if (!packed_complex_on() || (dtype != TL_C64 && dtype != TL_C128)) return 0;
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  return tl__gemm_packed_complex_bytes(dtype, m, n, k);
}
