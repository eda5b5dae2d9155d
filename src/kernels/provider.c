/* src/kernels/provider.c: the GEMM providers and the choice between them.
 *
 * Measured on the project's Zen 5 (AVX-512) machine: Debian's BLIS 0.9 does not recognise
 * the CPU and runs its generic kernels (~16 GFLOP/s f64) unless its AVX-512 `skx` context
 * is selected (~60-120 GFLOP/s); libxsmm's JIT kernels are the fastest for small shapes
 * (8x8x8 in ~15 ns, 64^3 at ~110 GFLOP/s) while BLIS costs microseconds per call there.
 * So: at first use pick BLIS's best context for the CPU's features (tl__provider_choose,
 * a pure function of a feature description and of what BLIS's detection saw), and send small
 * f32/f64 GEMMs to small_gemm.c (libxsmm once a shape has been seen a few times, a hand kernel
 * before), and tiny complex GEMMs to tenlane's own kernel (gemm_small_complex.c).
 *
 * The chosen context is also made BLIS's process-wide one: tenlane links reference LAPACK
 * and BLIS from their archives, so LAPACK's internal BLAS calls (which pass no context and
 * get the one BLIS detected itself) land in this BLIS; overwriting the detected context's
 * contents with the chosen one's gives them the same kernels. BLIS 0.9's skx context has
 * real kernels only, so complex GEMM runs BLIS's induced method 1m (complex products as real
 * ones of twice the size, on the skx kernels): ~120 GFLOP/s c128 at n=256 here, against
 * ~17 with the reference complex kernels. BLIS 0.9 takes a Zen 4 (AVX-512) for a Zen 3 and
 * runs its AVX2 kernels there; measured on a Zen 4, skx with 1m was faster for GEMM (f64
 * n = 256/1024 by about 10%, c128 n = 1024 by about 15%) and for the larger factorisations
 * (docs/design/kernels.md), so a Zen context on a CPU with skx's AVX-512 subsets is
 * replaced too.
 *
 * Invariants: every provider call here is single-threaded (serial BLIS, rntm with one
 * thread; libxsmm never threads), so the only numerical threads are the pool's workers
 * and the callers; and the calls never fail (shapes were checked by the route).
 *
 * bli_gks_lookup_id and the contexts' init functions are internal to BLIS: a shared libblis
 * does not export them, the static archive does, which is why tenlane links BLIS from its
 * archive (cmake/Providers.cmake). */
#include <pthread.h>
#include <string.h>

#include "kernels.h"
#include "providers.h"

extern cntx_t **bli_gks_lookup_id(arch_t id);
#if TL_X86_KERNELS
/* Turns a copy of the skx native context into its induced-method one (BLIS 0.9; x86 builds
 * of BLIS only). */
extern void bli_cntx_init_skx_ind(ind_t method, cntx_t *cntx);
#endif

static pthread_once_t providers_once = PTHREAD_ONCE_INIT;
static cntx_t *blis_cntx;         /* real dtypes */
static cntx_t *blis_cntx_complex; /* complex dtypes: blis_cntx, or its 1m form */
#if TL_X86_KERNELS
static cntx_t skx_1m;
#endif
static rntm_t blis_rntm;
static tl__provider_choice provider_choice;
static int provider_blis_saw;
static char provider_name[64];

tl__provider_choice tl__provider_choose(const tl__cpu_features *f, int blis_saw) {
  tl__provider_choice choice;
  memset(&choice, 0, sizeof choice);
  choice.small_complex = f->avx512f && f->fma ? TL__SMALL_COMPLEX_AVX512
                         : f->avx2 && f->fma  ? TL__SMALL_COMPLEX_AVX2
                                              : TL__SMALL_COMPLEX_PORTABLE;
  /* BLIS 0.9 has no AVX-512 complex micro-kernel; tenlane's needs AVX-512F only. */
  choice.packed_complex = f->avx512f && f->fma;
  /* BLIS's skx configuration needs the same AVX-512 subsets its own detection asks for. */
  int skx = f->avx512f && f->avx512dq && f->avx512cd && f->avx512bw && f->avx512vl && f->fma;
  if (blis_saw == TL__BLIS_SAW_OTHER || (blis_saw == TL__BLIS_SAW_ZEN && !skx)) {
    /* BLIS's own detection knows the CPU: keep its context and its induced-method choice. */
    choice.blis = TL__BLIS_DETECTED;
    return choice;
  }
  if (skx) {
    /* Generic, or a Zen context on a Zen with AVX-512 (newer than BLIS 0.9 knows). */
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
#endif /* elsewhere none of these: BLIS's own context, tenlane's portable kernels */
  /* TL_ISA caps what the kernels and the BLIS context may use (isa.c). */
  const int level = tl__isa_level();
  if (level < TL__ISA_AVX512) f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = 0;
  if (level < TL__ISA_AVX2) f.avx2 = f.fma = 0;
  return f;
}

static int blis_saw_of(arch_t native) {
  switch (native) {
    case BLIS_ARCH_GENERIC:
      return TL__BLIS_SAW_GENERIC;
    case BLIS_ARCH_ZEN:
    case BLIS_ARCH_ZEN2:
    case BLIS_ARCH_ZEN3:
      return TL__BLIS_SAW_ZEN;
    default:
      return TL__BLIS_SAW_OTHER;
  }
}

#if TL_X86_KERNELS
static cntx_t *lookup_arch(arch_t id) {
  cntx_t **entry = bli_gks_lookup_id(id);
  return entry != NULL ? entry[BLIS_NAT] : NULL;
}

/* Make `chosen` BLIS's process-wide context (the one calls without a context get, which is
 * how LAPACK's BLAS calls reach BLIS), with 1m for complex when `complex_1m`. Runs once,
 * before any other BLIS call of tenlane's (BLIS is private to libtenlane). */
static void make_process_wide(arch_t native, const cntx_t *chosen, int complex_1m) {
  cntx_t **detected = bli_gks_lookup_id(native);
  if (detected == NULL || detected[BLIS_NAT] == NULL) return;
  *detected[BLIS_NAT] = *chosen;
  if (!complex_1m) return;
  bli_ind_enable_dt(BLIS_1M, BLIS_SCOMPLEX);
  bli_ind_enable_dt(BLIS_1M, BLIS_DCOMPLEX);
  /* The detected architecture's 1m context, made now from the overwritten native one, then
   * given the chosen architecture's 1m contents. */
  cntx_t *induced = bli_gks_query_ind_cntx(BLIS_1M, BLIS_DCOMPLEX);
  if (induced != NULL && induced != detected[BLIS_NAT]) *induced = skx_1m;
}

/* c64 through 1m on the skx kernel takes skx's float blocks halved (KC 192, MC 240). On a
 * Zen 4 (1 MiB L2), KC 512 and MC 144 (A's block 576 KiB) took 0.91-0.95x the time at
 * n = 512, 1024 and 2048 and the same at 256 and 700 (a probe against the halved blocks,
 * alternated, medians); c128's blocks showed no such difference and stay. */
static void zen_c64_blocks(cntx_t *cntx) {
  blksz_t *kc = bli_cntx_get_blksz(BLIS_KC, cntx), *mc = bli_cntx_get_blksz(BLIS_MC, cntx);
  bli_blksz_set_def(512, BLIS_SCOMPLEX, kc);
  bli_blksz_set_max(512, BLIS_SCOMPLEX, kc);
  bli_blksz_set_def(144, BLIS_SCOMPLEX, mc);
  bli_blksz_set_max(144, BLIS_SCOMPLEX, mc);
}
#endif /* TL_X86_KERNELS */

static void providers_init_once(void) {
  bli_init();
  arch_t native = bli_arch_query_id();
  tl__cpu_features features = cpu_features();
  provider_blis_saw = blis_saw_of(native);
  tl__provider_choice choice = tl__provider_choose(&features, provider_blis_saw);
  const char *arch = bli_arch_string(native);
#if TL_X86_KERNELS
  cntx_t *chosen = NULL;
  if (choice.blis == TL__BLIS_SKX && (chosen = lookup_arch(BLIS_ARCH_SKX)) != NULL) {
    arch = "skx";
  } else if (choice.blis == TL__BLIS_HASWELL && (chosen = lookup_arch(BLIS_ARCH_HASWELL)) != NULL) {
    arch = "haswell";
    choice.complex_1m = 0;
  } else
#endif
  {
    choice.blis = TL__BLIS_DETECTED;
    choice.complex_1m = 0;
  }
  blis_cntx_complex = NULL;
#if TL_X86_KERNELS
  if (chosen != NULL) {
    /* BLIS's contexts have reference kernels only for complex level-1 operations. */
    if (features.avx2 && features.fma)
      tl__blis_add_level1(chosen, choice.blis == TL__BLIS_SKX ? BLIS_ARCH_SKX : BLIS_ARCH_HASWELL,
                          features.avx512f);
    if (choice.complex_1m) {
      skx_1m = *chosen;
      bli_cntx_init_skx_ind(BLIS_1M, &skx_1m);
      if (choice.zen_c64_blocks) zen_c64_blocks(&skx_1m);
      blis_cntx_complex = &skx_1m;
    }
    make_process_wide(native, chosen, choice.complex_1m);
    blis_cntx = chosen;
  } else
#endif
  {
    blis_cntx = bli_gks_query_cntx();
    /* The detected context is the one LAPACK's BLAS calls use: same complex references. */
    if (features.avx2 && features.fma) tl__blis_add_level1(blis_cntx, native, features.avx512f);
  }
  if (blis_cntx_complex == NULL) blis_cntx_complex = blis_cntx;
  provider_choice = choice;
  bli_rntm_init(&blis_rntm);
  bli_rntm_set_num_threads(1, &blis_rntm);
  snprintf(provider_name, sizeof provider_name, "blis:%s%s%s isa:%s", arch,
           choice.complex_1m ? "(1m)" : "", choice.packed_complex ? "+tl-complex" : "",
           tl__isa_name(tl__isa_level()));
}

/* BLIS keeps the enabled induced methods per thread (thread-local state), so enabling 1m in
 * providers_init_once reached only the thread that ran it: every other thread (a pool
 * worker, say) sent its complex GEMMs, and LAPACK's complex BLAS calls, down BLIS's native
 * path instead, slower and with other rounding. Each thread enables 1m for itself on its
 * first call here. */
static _Thread_local int thread_ready;

void tl__providers_init(void) {
  pthread_once(&providers_once, providers_init_once);
  if (thread_ready) return;
  thread_ready = 1;
  if (provider_choice.complex_1m) {
    bli_ind_enable_dt(BLIS_1M, BLIS_SCOMPLEX);
    bli_ind_enable_dt(BLIS_1M, BLIS_DCOMPLEX);
  }
}

tl__provider_choice tl__provider_current(void) {
  tl__providers_init();
  return provider_choice;
}

int tl__provider_blis_saw(void) {
  tl__providers_init();
  return provider_blis_saw;
}

cntx_t *tl__blis_context(void) {
  tl__providers_init();
  return blis_cntx;
}

cntx_t *tl__blis_context_complex(void) {
  tl__providers_init();
  return blis_cntx_complex;
}

rntm_t tl__blis_runtime(void) {
  tl__providers_init();
  return blis_rntm;
}

const char *tl_kernels_provider(void) {
  tl__providers_init();
  return provider_name;
}

void tl__gemm_blis(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  tl__providers_init();
  if (m == 0 || n == 0) return;
  /* BLIS wants non-zero strides even for extent-1 dimensions. */
  if (rsa == 0) rsa = 1;
  if (csa == 0) csa = 1;
  if (rsb == 0) rsb = 1;
  if (csb == 0) csb = 1;
  rntm_t rntm = blis_rntm;
  switch (dtype) {
    case TL_F64: {
      double al = alpha.re, be = beta.re;
      bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &al, (double *)a, rsa, csa,
                   (double *)b, rsb, csb, &be, (double *)c, rsc, csc, blis_cntx, &rntm);
      break;
    }
    case TL_F32: {
      float al = (float)alpha.re, be = (float)beta.re;
      bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &al, (float *)a, rsa, csa,
                   (float *)b, rsb, csb, &be, (float *)c, rsc, csc, blis_cntx, &rntm);
      break;
    }
    case TL_C64: {
      scomplex al = {(float)alpha.re, (float)alpha.im}, be = {(float)beta.re, (float)beta.im};
      bli_cgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &al, (scomplex *)a, rsa, csa,
                   (scomplex *)b, rsb, csb, &be, (scomplex *)c, rsc, csc, blis_cntx_complex, &rntm);
      break;
    }
    case TL_C128: {
      dcomplex al = {alpha.re, alpha.im}, be = {beta.re, beta.im};
      bli_zgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &al, (dcomplex *)a, rsa, csa,
                   (dcomplex *)b, rsb, csb, &be, (dcomplex *)c, rsc, csc, blis_cntx_complex, &rntm);
      break;
    }
  }
}

static trans_t blis_trans(int trans) {
  return trans == 0 ? BLIS_NO_TRANSPOSE : trans == 1 ? BLIS_TRANSPOSE : BLIS_CONJ_TRANSPOSE;
}

void tl__gemv_blis(tl_dtype dtype, int trans, int64_t m, int64_t n, const void *alpha,
                   const void *a, int64_t lda, const void *x, int64_t incx, const void *beta,
                   void *y, int64_t incy) {
  /* As BLIS's own BLAS layer calls it: no context or runtime (the process-wide context, which
   * providers_init made the chosen one), vectors from their first element. */
  const trans_t t = blis_trans(trans);
  switch (dtype) {
    case TL_F32:
      bli_sgemv_ex(t, BLIS_NO_CONJUGATE, m, n, (float *)alpha, (float *)a, 1, lda, (float *)x, incx,
                   (float *)beta, (float *)y, incy, NULL, NULL);
      break;
    case TL_F64:
      bli_dgemv_ex(t, BLIS_NO_CONJUGATE, m, n, (double *)alpha, (double *)a, 1, lda, (double *)x,
                   incx, (double *)beta, (double *)y, incy, NULL, NULL);
      break;
    case TL_C64:
      bli_cgemv_ex(t, BLIS_NO_CONJUGATE, m, n, (scomplex *)alpha, (scomplex *)a, 1, lda,
                   (scomplex *)x, incx, (scomplex *)beta, (scomplex *)y, incy, NULL, NULL);
      break;
    case TL_C128:
      bli_zgemv_ex(t, BLIS_NO_CONJUGATE, m, n, (dcomplex *)alpha, (dcomplex *)a, 1, lda,
                   (dcomplex *)x, incx, (dcomplex *)beta, (dcomplex *)y, incy, NULL, NULL);
      break;
  }
}

void tl__gemm_blas_blis(tl_dtype dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                        const void *beta, void *c, int64_t ldc) {
  /* As tl__gemv_blis: no context or runtime, so BLIS takes the process-wide one. */
  const trans_t tra = blis_trans(ta), trb = blis_trans(tb);
  switch (dtype) {
    case TL_F32:
      bli_sgemm_ex(tra, trb, m, n, k, (float *)alpha, (float *)a, 1, lda, (float *)b, 1, ldb,
                   (float *)beta, (float *)c, 1, ldc, NULL, NULL);
      break;
    case TL_F64:
      bli_dgemm_ex(tra, trb, m, n, k, (double *)alpha, (double *)a, 1, lda, (double *)b, 1, ldb,
                   (double *)beta, (double *)c, 1, ldc, NULL, NULL);
      break;
    case TL_C64:
      bli_cgemm_ex(tra, trb, m, n, k, (scomplex *)alpha, (scomplex *)a, 1, lda, (scomplex *)b, 1,
                   ldb, (scomplex *)beta, (scomplex *)c, 1, ldc, NULL, NULL);
      break;
    case TL_C128:
      bli_zgemm_ex(tra, trb, m, n, k, (dcomplex *)alpha, (dcomplex *)a, 1, lda, (dcomplex *)b, 1,
                   ldb, (dcomplex *)beta, (dcomplex *)c, 1, ldc, NULL, NULL);
      break;
  }
}

void tl__ger_blis(tl_dtype dtype, int conj_y, int64_t m, int64_t n, const void *alpha,
                  const void *x, int64_t incx, const void *y, int64_t incy, void *a, int64_t lda) {
  /* As tl__gemv_blis: the process-wide context. */
  const conj_t cy = conj_y ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE;
  switch (dtype) {
    case TL_F32:
      bli_sger_ex(BLIS_NO_CONJUGATE, cy, m, n, (float *)alpha, (float *)x, incx, (float *)y, incy,
                  (float *)a, 1, lda, NULL, NULL);
      break;
    case TL_F64:
      bli_dger_ex(BLIS_NO_CONJUGATE, cy, m, n, (double *)alpha, (double *)x, incx, (double *)y,
                  incy, (double *)a, 1, lda, NULL, NULL);
      break;
    case TL_C64:
      bli_cger_ex(BLIS_NO_CONJUGATE, cy, m, n, (scomplex *)alpha, (scomplex *)x, incx,
                  (scomplex *)y, incy, (scomplex *)a, 1, lda, NULL, NULL);
      break;
    case TL_C128:
      bli_zger_ex(BLIS_NO_CONJUGATE, cy, m, n, (dcomplex *)alpha, (dcomplex *)x, incx,
                  (dcomplex *)y, incy, (dcomplex *)a, 1, lda, NULL, NULL);
      break;
  }
}

void tl__trmm_blis(tl_dtype dtype, int right, int upper, int trans, int unit_diag, int64_t m,
                   int64_t n, const void *alpha, const void *a, int64_t lda, void *b, int64_t ldb) {
  /* As tl__gemv_blis: the process-wide context. */
  const side_t side = right ? BLIS_RIGHT : BLIS_LEFT;
  const uplo_t uplo = upper ? BLIS_UPPER : BLIS_LOWER;
  const trans_t t = blis_trans(trans);
  const diag_t diag = unit_diag ? BLIS_UNIT_DIAG : BLIS_NONUNIT_DIAG;
  switch (dtype) {
    case TL_F32:
      bli_strmm_ex(side, uplo, t, diag, m, n, (float *)alpha, (float *)a, 1, lda, (float *)b, 1,
                   ldb, NULL, NULL);
      break;
    case TL_F64:
      bli_dtrmm_ex(side, uplo, t, diag, m, n, (double *)alpha, (double *)a, 1, lda, (double *)b, 1,
                   ldb, NULL, NULL);
      break;
    case TL_C64:
      bli_ctrmm_ex(side, uplo, t, diag, m, n, (scomplex *)alpha, (scomplex *)a, 1, lda,
                   (scomplex *)b, 1, ldb, NULL, NULL);
      break;
    case TL_C128:
      bli_ztrmm_ex(side, uplo, t, diag, m, n, (dcomplex *)alpha, (dcomplex *)a, 1, lda,
                   (dcomplex *)b, 1, ldb, NULL, NULL);
      break;
  }
}

void tl__gemm_serial(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                     const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                     int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc, void *pack) {
  if (m == 0 || n == 0) return;
  /* Tiny complex shapes: tenlane's own kernel (gemm_small_complex.c). */
  if (k > 0 && tl__gemm_small_complex(provider_choice.small_complex, dtype, m, n, k, alpha, a, rsa,
                                      csa, b, rsb, csb, beta, c, rsc, csc))
    return;
  /* Larger complex shapes: tenlane's blocked kernel, given its scratch. */
  if (tl__gemm_packed_complex_takes(provider_choice.packed_complex, dtype, m, n, k) &&
      tl__gemm_packed_complex(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc,
                              pack))
    return;
  /* Small real shapes: the hand kernel (small_gemm.c). */
  if (tl__small_gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc)) return;
  tl__gemm_blis(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

size_t tl__gemm_serial_pack_bytes(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  tl__providers_init();
  if (!tl__gemm_packed_complex_takes(provider_choice.packed_complex, dtype, m, n, k)) return 0;
  return tl__gemm_packed_complex_bytes(dtype, m, n, k);
}

size_t tl__gemm_serial_pack_bound(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  tl__providers_init();
  if (!provider_choice.packed_complex || (dtype != TL_C64 && dtype != TL_C128)) return 0;
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  return tl__gemm_packed_complex_bytes(dtype, m, n, k);
}
