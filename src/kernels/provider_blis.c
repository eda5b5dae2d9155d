/* src/kernels/provider_blis.c: the provider boundary on BLIS (TL_PROVIDER=blis, the
 * default where Debian's serial BLIS is installed; built only then, cmake/Providers.cmake).
 *
 * Measured on the project's Zen 5 (AVX-512) machine: Debian's BLIS 0.9 does not recognise
 * the CPU and runs its generic kernels (~16 GFLOP/s f64) unless its AVX-512 `skx` context
 * is selected (~60-120 GFLOP/s). So at first use pick BLIS's best context for the CPU's
 * features (tl__provider_choose in provider.c, a pure function of a feature description and
 * of what BLIS's detection saw).
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
 * Version check: bli_gks_lookup_id, the contexts' init functions, the context's kernel slots
 * and block sizes are BLIS 0.9's internals (BLIS 1.x made the context stacks of blocks with
 * a mutex, which a struct copy must not duplicate). They are compiled only when the header
 * has them (TL_BLIS_INTERNALS, a configure check) and used only when the linked library says
 * it is 0.9.x (bli_info_get_version_str); otherwise BLIS keeps the context its own detection
 * chose, untouched, and the provider string says "blis:<arch>[own context, BLIS <version>]".
 * A shared libblis does not export the internals; the static archive does, which is why
 * tenlane links BLIS from its archive.
 *
 * Invariants: every call is single-threaded (serial BLIS, rntm with one thread). */
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "providers.h"

#if TL_BLIS_INTERNALS
extern cntx_t **bli_gks_lookup_id(arch_t id);
#endif
#if TL_BLIS_INTERNALS && TL_X86_KERNELS
/* Turns a copy of the skx native context into its induced-method one (BLIS 0.9; x86 builds
 * of BLIS only). */
extern void bli_cntx_init_skx_ind(ind_t method, cntx_t *cntx);
#endif

static cntx_t *blis_cntx;         /* real dtypes */
static cntx_t *blis_cntx_complex; /* complex dtypes: blis_cntx, or its 1m form */
#if TL_BLIS_INTERNALS && TL_X86_KERNELS
static cntx_t skx_1m;
#endif
#if TL_BLIS_INTERNALS
/* Where tl__prov_setup put tenlane's complex level-1 kernels (tl__prov_own_level1). */
static int level1_added, level1_avx512;
static arch_t level1_arch;
#endif
static rntm_t blis_rntm;
static arch_t blis_native;

static int blis_saw_of(arch_t native) {
  switch (native) {
    case BLIS_ARCH_GENERIC:
      return TL__BLIS_SAW_GENERIC;
    case BLIS_ARCH_ZEN:
    case BLIS_ARCH_ZEN2:
    case BLIS_ARCH_ZEN3:
      return TL__BLIS_SAW_ZEN;
    case BLIS_ARCH_HASWELL:
      return TL__BLIS_SAW_HASWELL;
    default:
      return TL__BLIS_SAW_OTHER;
  }
}

#if TL_BLIS_INTERNALS && TL_X86_KERNELS
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
#endif /* TL_BLIS_INTERNALS && TL_X86_KERNELS */

/* 1 when the linked BLIS is the 0.9 series whose internals this file was written against. */
static int blis_internals_usable(void) {
#if TL_BLIS_INTERNALS
  return strncmp(bli_info_get_version_str(), "0.9.", 4) == 0;
#else
  return 0;
#endif
}

int tl__prov_start(void) {
  bli_init();
  blis_native = bli_arch_query_id();
  return blis_saw_of(blis_native);
}

void tl__prov_setup(const tl__cpu_features *features, tl__provider_choice *choice, char *name,
                    size_t size) {
  const char *arch = bli_arch_string(blis_native);
  const int internals = blis_internals_usable();
#if TL_BLIS_INTERNALS && TL_X86_KERNELS
  cntx_t *chosen = NULL;
  if (!internals) {
    /* another BLIS: its own context, untouched (below) */
  } else if (choice->blis == TL__BLIS_SKX && (chosen = lookup_arch(BLIS_ARCH_SKX)) != NULL) {
    arch = "skx";
  } else if (choice->blis == TL__BLIS_HASWELL &&
             (chosen = lookup_arch(BLIS_ARCH_HASWELL)) != NULL) {
    arch = "haswell";
    choice->complex_1m = 0;
  }
  if (chosen == NULL)
#endif
  {
    choice->blis = TL__BLIS_DETECTED;
    choice->complex_1m = 0;
  }
  blis_cntx_complex = NULL;
#if TL_BLIS_INTERNALS && TL_X86_KERNELS
  if (chosen != NULL) {
    /* BLIS's contexts have reference kernels only for complex level-1 operations. */
    if (features->avx2 && features->fma) {
      level1_arch = choice->blis == TL__BLIS_SKX ? BLIS_ARCH_SKX : BLIS_ARCH_HASWELL;
      level1_avx512 = features->avx512f;
      level1_added = 1;
      tl__blis_add_level1(chosen, level1_arch, level1_avx512);
    }
    if (choice->complex_1m) {
      skx_1m = *chosen;
      bli_cntx_init_skx_ind(BLIS_1M, &skx_1m);
      if (choice->zen_c64_blocks) zen_c64_blocks(&skx_1m);
      blis_cntx_complex = &skx_1m;
    }
    make_process_wide(blis_native, chosen, choice->complex_1m);
    blis_cntx = chosen;
  } else
#endif
  {
    blis_cntx = bli_gks_query_cntx();
#if TL_BLIS_INTERNALS
    /* The detected context is the one LAPACK's BLAS calls use: same complex references. */
    if (internals && features->avx2 && features->fma) {
      level1_arch = blis_native;
      level1_avx512 = features->avx512f;
      level1_added = 1;
      tl__blis_add_level1(blis_cntx, level1_arch, level1_avx512);
    }
#else
    (void)features;
#endif
  }
  if (blis_cntx_complex == NULL) blis_cntx_complex = blis_cntx;
  bli_rntm_init(&blis_rntm);
  bli_rntm_set_num_threads(1, &blis_rntm);
  /* No small-unpacked ("sup") path: where a context has one (haswell, zen), BLIS picks its
   * kernel from the shape, so a block of a product split over a team could round
   * differently from the whole product on one thread (gemm_split_bits at TL_ISA=avx2). */
  bli_rntm_disable_l3_sup(&blis_rntm);
  if (internals)
    snprintf(name, size, "blis:%s%s", arch, choice->complex_1m ? "(1m)" : "");
  else
    snprintf(name, size, "blis:%s[own context, BLIS %s]", arch, bli_info_get_version_str());
}

double tl__prov_nrm2(tl_dtype dtype, int64_t n, const void *x, int64_t incx) {
  /* As BLIS's own nrm2 entries call it: no context or runtime. */
  switch (dtype) {
    case TL_F32: {
      float norm;
      bli_snormfv_ex(n, (float *)x, incx, &norm, NULL, NULL);
      return norm;
    }
    case TL_F64: {
      double norm;
      bli_dnormfv_ex(n, (double *)x, incx, &norm, NULL, NULL);
      return norm;
    }
    case TL_C64: {
      float norm;
      bli_cnormfv_ex(n, (scomplex *)x, incx, &norm, NULL, NULL);
      return norm;
    }
    case TL_C128: {
      double norm;
      bli_znormfv_ex(n, (dcomplex *)x, incx, &norm, NULL, NULL);
      return norm;
    }
  }
  return 0.0;
}

void tl__prov_own_level1(int on) {
  tl__providers_init();
#if TL_BLIS_INTERNALS
  if (!level1_added) return;
  /* Every context that got them: the chosen one, its 1m copy, and the process-wide ones
   * made from those (make_process_wide), each once. */
  cntx_t *all[4] = {blis_cntx, blis_cntx_complex, NULL, NULL};
  cntx_t **detected = bli_gks_lookup_id(blis_native);
  if (detected != NULL) all[2] = detected[BLIS_NAT];
  if (blis_cntx_complex != blis_cntx) all[3] = bli_gks_query_ind_cntx(BLIS_1M, BLIS_DCOMPLEX);
  for (int i = 0; i < 4; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= all[j] == all[i];
    if (all[i] != NULL && !seen) tl__blis_set_level1(all[i], level1_arch, level1_avx512, on);
  }
#else
  (void)on;
#endif
}

/* BLIS keeps the enabled induced methods per thread (thread-local state), so enabling 1m in
 * tl__prov_setup reached only the thread that ran it: every other thread (a pool worker,
 * say) sent its complex GEMMs, and LAPACK's complex BLAS calls, down BLIS's native path
 * instead, slower and with other rounding. Each thread enables 1m for itself on its first
 * call (tl__providers_init). */
void tl__prov_thread(const tl__provider_choice *choice) {
  if (choice->complex_1m) {
    bli_ind_enable_dt(BLIS_1M, BLIS_SCOMPLEX);
    bli_ind_enable_dt(BLIS_1M, BLIS_DCOMPLEX);
  }
}

/* Serial BLIS with a one-thread runtime is safe for concurrent callers (its memory broker
 * takes its own lock, and tenlane's context is only read after set-up): no lock. */
void tl__prov_lock(void) {}
void tl__prov_unlock(void) {}

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

void tl__prov_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
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

void tl__prov_gemv(tl_dtype dtype, int trans, int64_t m, int64_t n, const void *alpha,
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

void tl__prov_gemm_blas(tl_dtype dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                        const void *beta, void *c, int64_t ldc) {
  /* As tl__prov_gemv: no context or runtime, so BLIS takes the process-wide one. */
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

void tl__prov_ger(tl_dtype dtype, int conj_y, int64_t m, int64_t n, const void *alpha,
                  const void *x, int64_t incx, const void *y, int64_t incy, void *a, int64_t lda) {
  /* As tl__prov_gemv: the process-wide context. */
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

void tl__prov_trmm(tl_dtype dtype, int right, int upper, int trans, int unit_diag, int64_t m,
                   int64_t n, const void *alpha, const void *a, int64_t lda, void *b, int64_t ldb) {
  /* As tl__prov_gemv: the process-wide context. */
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

void tl__prov_gemm_block(double *flops, int64_t *min_len) {
  *flops = (double)(1LL << 32);
  *min_len = 128; /* re-packing the shared operand costs under 1% of such a block */
}
