/* tests/kernels/test_providers.c: the provider choice (a pure function of a CPU feature
 * description, fed every feature set it distinguishes), the choice this process made, and
 * the no-provider-thread invariant across complex GEMM, contraction and LAPACK calls, with
 * every provider; and, with BLIS 0.9 (TL_BLIS_INTERNALS), the level-1 kernels tenlane puts
 * into BLIS's contexts (skipped with any other provider). */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kernels/kernels.h"
#if TL_PROVIDER_BLIS
#include "kernels/providers.h"
#endif
#include "tenlane/tenlane.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

/* A CPU feature of this machine (x86 builds; elsewhere none of these exists). */
#if TL_X86_KERNELS
#define CPU_HAS(feature) (__builtin_cpu_init(), __builtin_cpu_supports(feature) != 0)
#else
#define CPU_HAS(feature) 0
#endif

#if TL_PROVIDER_BLIS
#define TL_PROVIDER_DESC "BLIS without them"
#else
#define TL_PROVIDER_DESC TL_PROVIDER_NAME
#endif

static tl__cpu_features features(int avx2, int fma, int avx512) {
  tl__cpu_features f;
  memset(&f, 0, sizeof f);
  f.avx2 = avx2;
  f.fma = fma;
  f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = avx512;
  return f;
}

static void provider_choice_covers_each_feature_set(void) {
  /* Full AVX-512 on a CPU BLIS does not recognise: skx, complex through 1m. */
  tl__cpu_features f = features(1, 1, 1);
  tl__provider_choice c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_SKX && c.complex_1m == 1);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX512 && c.packed_complex == 1);
  /* AVX-512F without BW (or any other subset skx needs): haswell, its complex kernels. */
  f.avx512bw = 0;
  c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_HASWELL && c.complex_1m == 0);
  /* the tiny and the blocked complex kernels need F only */
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX512 && c.packed_complex == 1);
  f = features(1, 1, 1);
  f.avx512vl = 0;
  TH_CHECK(tl__provider_choose(&f, TL__BLIS_SAW_GENERIC).blis == TL__BLIS_HASWELL);
  /* AVX-512 without FMA reported cannot take skx's FMA kernels. */
  f = features(1, 0, 1);
  c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.small_complex == TL__SMALL_COMPLEX_PORTABLE);
  TH_CHECK(c.packed_complex == 0);
  /* AVX2 + FMA only. */
  f = features(1, 1, 0);
  c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_HASWELL && c.complex_1m == 0);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX2 && c.packed_complex == 0);
  /* AVX2 without FMA, and nothing at all: BLIS's own context, portable tiny kernel. */
  f = features(1, 0, 0);
  c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.complex_1m == 0);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_PORTABLE);
  f = features(0, 0, 0);
  c = tl__provider_choose(&f, TL__BLIS_SAW_GENERIC);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.small_complex == TL__SMALL_COMPLEX_PORTABLE);
  /* A CPU BLIS recognised (not as a Zen) keeps BLIS's choice whatever the features. */
  f = features(1, 1, 1);
  c = tl__provider_choose(&f, TL__BLIS_SAW_OTHER);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.complex_1m == 0);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX512 && c.packed_complex == 1);
  f = features(1, 1, 0);
  TH_CHECK(tl__provider_choose(&f, TL__BLIS_SAW_OTHER).blis == TL__BLIS_DETECTED);
  /* Seen as haswell: skx where the CPU has skx's subsets (BLIS 0.9 could not count its
   * AVX-512 FMA units), BLIS's haswell context where it does not. */
  f = features(1, 1, 1);
  c = tl__provider_choose(&f, TL__BLIS_SAW_HASWELL);
  TH_CHECK(c.blis == TL__BLIS_SKX && c.complex_1m == 1 && c.zen_c64_blocks == 0);
  f.avx512dq = 0;
  c = tl__provider_choose(&f, TL__BLIS_SAW_HASWELL);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.complex_1m == 0);
  f = features(1, 1, 0);
  TH_CHECK(tl__provider_choose(&f, TL__BLIS_SAW_HASWELL).blis == TL__BLIS_DETECTED);
  /* Seen as a Zen: a Zen with skx's AVX-512 subsets (Zen 4, which BLIS 0.9 takes for a
   * Zen 3) gets skx and 1m; without them (Zen 1-3) BLIS's Zen context stays. */
  f = features(1, 1, 1);
  c = tl__provider_choose(&f, TL__BLIS_SAW_ZEN);
  TH_CHECK(c.blis == TL__BLIS_SKX && c.complex_1m == 1 && c.zen_c64_blocks == 1);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX512);
  /* The Zen 4 cache blocks for c64 only there: not on a CPU BLIS did not recognise. */
  TH_CHECK(tl__provider_choose(&f, TL__BLIS_SAW_GENERIC).zen_c64_blocks == 0);
  f.avx512bw = 0;
  c = tl__provider_choose(&f, TL__BLIS_SAW_ZEN);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.complex_1m == 0);
  f = features(1, 1, 0);
  c = tl__provider_choose(&f, TL__BLIS_SAW_ZEN);
  TH_CHECK(c.blis == TL__BLIS_DETECTED && c.complex_1m == 0);
  TH_CHECK(c.small_complex == TL__SMALL_COMPLEX_AVX2);
}

/* The choice made here agrees with the pure function on this CPU's own features, and the
 * provider string names it. */
static void provider_choice_of_this_process_follows_its_features(void) {
  tl__cpu_features f;
  memset(&f, 0, sizeof f);
  f.avx2 = CPU_HAS("avx2") != 0;
  f.fma = CPU_HAS("fma") != 0;
  f.avx512f = CPU_HAS("avx512f") != 0;
  f.avx512dq = CPU_HAS("avx512dq") != 0;
  f.avx512cd = CPU_HAS("avx512cd") != 0;
  f.avx512bw = CPU_HAS("avx512bw") != 0;
  f.avx512vl = CPU_HAS("avx512vl") != 0;
  /* TL_ISA caps the features the choice sees (base/isa.c). */
  if (tl__isa_level() < TL__ISA_AVX512)
    f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = 0;
  if (tl__isa_level() < TL__ISA_AVX2) f.avx2 = f.fma = 0;
  tl__provider_choice now = tl__provider_current();
  const char *name = tl_kernels_provider();
#if TL_PROVIDER_BLIS
  TH_CHECK(strncmp(name, "blis:", 5) == 0);
#else
  TH_CHECK(strncmp(name, TL_PROVIDER_NAME, strlen(TL_PROVIDER_NAME)) == 0);
  TH_CHECK(now.blis == TL__BLIS_DETECTED && now.complex_1m == 0);
#endif
  /* The provider string names the instruction-set level in use. */
  char isa[32];
  snprintf(isa, sizeof isa, " isa:%s", tl__isa_name(tl__isa_level()));
  TH_CHECK(strstr(name, isa) != NULL);
  TH_CHECK(now.small_complex == tl__provider_choose(&f, TL__BLIS_SAW_GENERIC).small_complex);
  TH_CHECK(now.packed_complex == tl__provider_choose(&f, TL__BLIS_SAW_GENERIC).packed_complex);
  TH_CHECK((strstr(name, "+tl-complex") != NULL) == (now.packed_complex == 1));
  if (now.blis == TL__BLIS_SKX) {
    TH_CHECK(strstr(name, "skx") != NULL);
    TH_CHECK(now.complex_1m == 1 && strstr(name, "(1m)") != NULL);
    TH_CHECK(now.zen_c64_blocks == tl__provider_choose(&f, tl__provider_blis_saw()).zen_c64_blocks);
#if TL_BLIS_INTERNALS
    if (now.zen_c64_blocks)
      TH_CHECK(bli_cntx_get_blksz_def_dt(BLIS_SCOMPLEX, BLIS_KC, tl__blis_context_complex()) ==
               512);
#endif
  }
  if (now.blis == TL__BLIS_HASWELL) TH_CHECK(strstr(name, "haswell") != NULL);
  if (strstr(name, "[own context") != NULL) {
    /* A BLIS without the 0.9 internals (TL_BLIS_INTERNALS 0, or another version at run
     * time): tenlane chooses nothing, BLIS's own detected context runs. */
    TH_CHECK(now.blis == TL__BLIS_DETECTED && now.complex_1m == 0);
    return;
  }
  /* The process's choice is the pure function's on what BLIS saw here (a context missing
   * from BLIS's build would fall back to the detected one, which the build has none of). */
  tl__provider_choice pure = tl__provider_choose(&f, tl__provider_blis_saw());
  TH_CHECK(pure.blis == now.blis && pure.complex_1m == now.complex_1m);
}

/* ---- the tiny complex kernels against a naive product ---------------------------------- */
/* Element (i, j) of a complex matrix with strides (rs, cs), as double complex. */
static double complex get_c(tl_dtype dt, const void *base, int64_t i, int64_t j, int64_t rs,
                            int64_t cs) {
  int64_t at = 2 * (i * rs + j * cs);
  if (dt == TL_C64) return ((const float *)base)[at] + I * ((const float *)base)[at + 1];
  return ((const double *)base)[at] + I * ((const double *)base)[at + 1];
}

static void fill_random(tl_dtype dt, void *base, int64_t count, unsigned *seed) {
  for (int64_t i = 0; i < 2 * count; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    double v = (double)(*seed >> 8) / 16777216.0 - 0.5;
    if (dt == TL_C64)
      ((float *)base)[i] = (float)v;
    else
      ((double *)base)[i] = v;
  }
}

static int kernel_available(int kernel) {
  if (kernel == TL__SMALL_COMPLEX_AVX512) return CPU_HAS("avx512f") && CPU_HAS("fma");
  if (kernel == TL__SMALL_COMPLEX_AVX2) return CPU_HAS("avx2") && CPU_HAS("fma");
  return 1;
}

static void small_complex_kernels_match_naive(void) {
  const int64_t shapes[][3] = {{1, 1, 1},
                               {2, 3, 4},
                               {3, 5, 2},
                               {4, 4, 4},
                               {5, 1, 7},
                               {7, 9, 3},
                               {8, 8, 8},
                               {9, 2, 16},
                               {13, 11, 5},
                               {16, 16, 16},
                               {17, 3, 9},
                               {1, 12, 6},
                               {31, 7, 33},
                               {80, 80, 80},
                               /* every row remainder of the 2- and 1-register blocks, and
                                  one, two or three last columns */
                               {6, 2, 5},
                               {10, 4, 3},
                               {11, 6, 7},
                               {12, 5, 9},
                               {23, 8, 4},
                               {25, 3, 2},
                               {64, 64, 64},
                               {33, 10, 17},
                               /* a column-major A into a row-major C of a few columns
                                  goes through pieces of C: several pieces, a short last */
                               {200, 2, 2},
                               {130, 4, 3},
                               {70, 1, 5}};
  const tl_scalar alphas[] = {{1.0, 0.0}, {0.5, -0.75}},
                  betas[] = {{0.0, 0.0}, {1.0, 0.0}, {-0.5, 0.25}};
  unsigned seed = 12345u;
  int taken = 0;
  for (int kernel = 0; kernel <= TL__SMALL_COMPLEX_AVX512; kernel++) {
    if (!kernel_available(kernel)) continue;
    for (int di = 0; di < 2; di++) {
      tl_dtype dt = di ? TL_C128 : TL_C64;
      double tol = dt == TL_C64 ? 1e-5 : 1e-13;
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int la = 0; la < 4; la++)
          for (int lc = 0; lc < 4; lc++)
            for (int ab = 0; ab < 6; ab++) {
              int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
              /* big shapes: two layouts, two scalar pairs (keeps sanitizer runs short) */
              if (m * n * k > 4096 && (la != lc || la > 1 || (ab != 0 && ab != 5))) continue;
              if (m * n * k > 512 && kernel == TL__SMALL_COMPLEX_PORTABLE) continue;
              int64_t rsa, csa, rsb, csb, rsc, csc;
              th_num_layout_strides(la, m, k, &rsa, &csa);
              th_num_layout_strides((la + lc) % 4, k, n, &rsb, &csb);
              th_num_layout_strides(lc, m, n, &rsc, &csc);
              size_t es = tl_dtype_size(dt);
              int64_t na = 2 * m * k * 2 + 8, nb = 2 * k * n * 2 + 8, nc = 2 * m * n * 2 + 8;
              void *a = calloc((size_t)na, es), *b = calloc((size_t)nb, es);
              void *c = calloc((size_t)nc, es), *c0 = calloc((size_t)nc, es);
              fill_random(dt, a, na, &seed);
              fill_random(dt, b, nb, &seed);
              fill_random(dt, c, nc, &seed);
              memcpy(c0, c, (size_t)nc * es);
              tl_scalar alpha = alphas[ab % 2], beta = betas[ab / 2];
              int done = tl__gemm_small_complex(kernel, dt, m, n, k, alpha, a, rsa, csa, b, rsb,
                                                csb, beta, c, rsc, csc);
              taken += done;
              double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
              for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) {
                  double complex sum = 0;
                  double scale = 1.0;
                  for (int64_t p = 0; p < k; p++) {
                    double complex x = get_c(dt, a, i, p, rsa, csa),
                                   y = get_c(dt, b, p, j, rsb, csb);
                    sum += x * y;
                    scale += cabs(x * y);
                  }
                  double complex old = get_c(dt, c0, i, j, rsc, csc);
                  double complex want = done ? al * sum + be * old : old;
                  double complex got = get_c(dt, c, i, j, rsc, csc);
                  if (cabs(got - want) > tol * (scale + cabs(old))) {
                    char buf[200];
                    snprintf(buf, sizeof buf,
                             "kernel %d %s %lldx%lldx%lld layouts %d/%d alpha/beta %d: (%lld,%lld) "
                             "got %g%+gi want %g%+gi",
                             kernel, tl_dtype_name(dt), (long long)m, (long long)n, (long long)k,
                             la, lc, ab, (long long)i, (long long)j, creal(got), cimag(got),
                             creal(want), cimag(want));
                    th_test_fail_at(__FILE__, __LINE__, buf);
                  }
                }
              free(a), free(b), free(c), free(c0);
            }
    }
  }
  TH_CHECK(taken > 0);
  /* Real dtypes and products over the kernel's reach are not taken. */
  double x[4] = {0};
  TH_CHECK(tl__gemm_small_complex(TL__SMALL_COMPLEX_PORTABLE, TL_F64, 1, 1, 1, tl_scalar_real(1), x,
                                  1, 1, x, 1, 1, tl_scalar_real(0), x, 1, 1) == 0);
  TH_CHECK(tl__gemm_small_complex(TL__SMALL_COMPLEX_AVX2, TL_C128, 81, 80, 80, tl_scalar_real(1), x,
                                  1, 81, x, 1, 80, tl_scalar_real(0), x, 1, 81) == 0);
  /* Issue 28's audit: m n k past int64 (broadcast operands make it reachable with every
   * extent valid) is over the reach, not a wrapped small product: 4 x 4 x 2^60 wrapped to 0
   * and ran the kernel on k = 2^60 (a crash here); UBSan saw the overflow. */
  const int64_t huge = (int64_t)1 << 60;
  for (int kernel = TL__SMALL_COMPLEX_PORTABLE; kernel <= TL__SMALL_COMPLEX_AVX512; kernel++)
    TH_CHECK(tl__gemm_small_complex(kernel, TL_C128, 4, 4, huge, tl_scalar_real(1), x, 1, 4, x, 0,
                                    0, tl_scalar_real(0), x, 1, 4) == 0);
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C128, 4, 4, huge));
  TH_CHECK(tl__gemm_packed_complex_takes(1, TL_C64, INT64_MAX, INT64_MAX, INT64_MAX));
  TH_CHECK(!tl__small_gemm_fits(TL_F64, 4, 4, huge));
  TH_CHECK(tl__i64_mul3_sat(4, 4, huge) == INT64_MAX && tl__i64_mul3_sat(0, INT64_MAX, 7) == 0);
}

#if TL_BLIS_INTERNALS
/* ---- the complex axpyv kernel tenlane gives BLIS's skx context ---------------------------- */
static void blis_complex_axpyv_matches_naive(void) {
  cntx_t *cntx = tl__blis_context();
  zaxpyv_ker_ft kernel = (zaxpyv_ker_ft)cntx->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX];
  TH_CHECK(kernel != NULL);
  unsigned seed = 99u;
  for (int n = 0; n <= 13; n++)
    for (int conj = 0; conj < 2; conj++)
      for (int inc = 1; inc <= 2; inc++) {
        dcomplex x[32], y[32], y0[32], alpha = {0.75, -1.25};
        fill_random(TL_C128, x, 32, &seed);
        fill_random(TL_C128, y, 32, &seed);
        memcpy(y0, y, sizeof y);
        kernel(conj ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, n, &alpha, x, inc, y, inc, cntx);
        for (int i = 0; i < 32; i++) {
          double complex want = y0[i].real + I * y0[i].imag;
          if (i % inc == 0 && i / inc < n) {
            double complex xv = x[i].real + I * (conj ? -x[i].imag : x[i].imag);
            want += (alpha.real + I * alpha.imag) * xv;
          }
          TH_CHECK(cabs(y[i].real + I * y[i].imag - want) <= 1e-14 * (1.0 + cabs(want)));
        }
      }
}

/* ---- tenlane's complex level-1v/1f kernels: through the context and at every ISA -------- */
typedef long double complex lcplx;

static lcplx lz(dcomplex z) { return (long double)z.real + I * (long double)z.imag; }
static lcplx lz_conj_if(int conj, dcomplex z) { return conj ? conjl(lz(z)) : lz(z); }

#if TL_X86_KERNELS
static int cpu_has_avx2_fma(void) { return CPU_HAS("avx2") && CPU_HAS("fma"); }

static int cpu_has_avx512f(void) { return cpu_has_avx2_fma() && CPU_HAS("avx512f"); }
#endif

/* The kernel sets under test: the context's slots, then each ISA's kernels called directly.
 * A kernel already tested under an earlier set (the same function) is skipped later. */
enum { L1_MAX_SETS = 3 };
typedef struct l1_sets {
  int count;
  const char *name[L1_MAX_SETS];
  tl__blis_level1_kernels k[L1_MAX_SETS];
} l1_sets;

static l1_sets level1_sets(void) {
  l1_sets s;
  memset(&s, 0, sizeof s);
  cntx_t *cntx = tl__blis_context();
  tl__blis_level1_kernels c;
  c.axpyv = (zaxpyv_ker_ft)cntx->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX];
  c.dotxv = (zdotxv_ker_ft)cntx->l1v_kers[BLIS_DOTXV_KER].ptr[BLIS_DCOMPLEX];
  c.scalv = (zscalv_ker_ft)cntx->l1v_kers[BLIS_SCALV_KER].ptr[BLIS_DCOMPLEX];
  c.scal2v = (zscal2v_ker_ft)cntx->l1v_kers[BLIS_SCAL2V_KER].ptr[BLIS_DCOMPLEX];
  c.dotxf = (zdotxf_ker_ft)cntx->l1f_kers[BLIS_DOTXF_KER].ptr[BLIS_DCOMPLEX];
  c.axpyf = (zaxpyf_ker_ft)cntx->l1f_kers[BLIS_AXPYF_KER].ptr[BLIS_DCOMPLEX];
  /* Below AVX2 (the CPU's, or TL_ISA's) the context keeps BLIS's own kernels, whose rules
   * are BLIS's: only tenlane's are held to these. */
  if (tl__isa_level() >= TL__ISA_AVX2) s.name[s.count] = "context", s.k[s.count++] = c;
#if TL_X86_KERNELS
  if (cpu_has_avx2_fma()) s.name[s.count] = "avx2", s.k[s.count++] = tl__blis_level1(0);
  if (cpu_has_avx512f()) s.name[s.count] = "avx512", s.k[s.count++] = tl__blis_level1(1);
#endif
  return s;
}

/* Whether set `at`'s kernel for the op at byte offset `off` was already seen in a set before. */
static int level1_seen(const l1_sets *s, int at, size_t off) {
  void_fp mine, theirs;
  memcpy(&mine, (const char *)&s->k[at] + off, sizeof mine);
  for (int e = 0; e < at; e++) {
    memcpy(&theirs, (const char *)&s->k[e] + off, sizeof theirs);
    if (theirs == mine) return 1;
  }
  return 0;
}

static const int l1_lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100, 257};
enum { L1_LENGTHS = sizeof l1_lengths / sizeof l1_lengths[0] };
static const dcomplex l1_alphas[] = {{0.0, 0.0}, {1.0, 0.0}, {0.75, -1.25}};
static const dcomplex l1_betas[] = {{0.0, 0.0}, {1.0, 0.0}, {-0.5, 0.375}};

/* A strided vector of n complex doubles: the buffer (two guard elements each side), the
 * address of element 0 (the last in memory for a negative increment) and the buffer's size. */
typedef struct l1_vec {
  dcomplex *buf, *v;
  int64_t size;
} l1_vec;

static l1_vec l1_vec_make(int64_t n, int64_t inc, unsigned *seed) {
  l1_vec r;
  int64_t step = inc < 0 ? -inc : inc;
  r.size = (n > 0 ? step * (n - 1) + 1 : 1) + 4;
  r.buf = malloc((size_t)r.size * sizeof(dcomplex));
  fill_random(TL_C128, r.buf, r.size, seed);
  r.v = r.buf + 2 + (inc < 0 ? step * (n - 1) : 0);
  return r;
}

static void l1_fill_nan(dcomplex *z, int64_t n, int64_t inc) {
  for (int64_t i = 0; i < n; i++) z[i * inc].real = z[i * inc].imag = NAN;
}

/* Whether the buffer slot `at` of vector (v, n, inc) inside buf is one of its elements. */
static int l1_in_vec(const l1_vec *x, int64_t at, int64_t n, int64_t inc) {
  int64_t off = (int64_t)(x->buf + at - x->v);
  return n > 0 && off % inc == 0 && off / inc >= 0 && off / inc < n;
}

/* got within rounding of want: a few ulps for each of `terms` summed terms of total
 * magnitude `scale` (exact when scale is 0). */
static int l1_close(dcomplex got, lcplx want, long double scale, int64_t terms) {
  if (!isfinite(got.real) || !isfinite(got.imag)) return 0;
  long double err = cabsl(lz(got) - want);
  return err <= 4.0L * (long double)(terms + 4) * (long double)DBL_EPSILON * scale;
}

static void l1_fail(const char *file, int line, const char *set, const char *what, int64_t n,
                    int64_t bn, int64_t inc1, int64_t inc2, int conj1, int conj2, int ai, int bi,
                    int64_t at) {
  char buf[256];
  snprintf(buf, sizeof buf,
           "%s %s: n %lld b_n %lld incs %lld/%lld conj %d/%d alpha %d beta %d: element %lld", set,
           what, (long long)n, (long long)bn, (long long)inc1, (long long)inc2, conj1, conj2, ai,
           bi, (long long)at);
  th_test_fail_at(file, line, buf);
}

static const int64_t l1_v_incs[][2] = {{1, 1}, {2, 3}, {3, 2}, {1, 2}, {-1, -1}, {-2, 1}, {1, -3}};
enum { L1_V_INCS = sizeof l1_v_incs / sizeof l1_v_incs[0] };

static void check_axpyv(const char *set, zaxpyv_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int ii = 0; ii < L1_V_INCS; ii++)
      for (int cj = 0; cj < 2; cj++)
        for (int ai = 0; ai < 3; ai++) {
          int64_t n = l1_lengths[li], incx = l1_v_incs[ii][0], incy = l1_v_incs[ii][1];
          l1_vec x = l1_vec_make(n, incx, seed), y = l1_vec_make(n, incy, seed);
          if (ai == 0) l1_fill_nan(x.v, n, incx); /* alpha 0 reads no x */
          dcomplex *y0 = malloc((size_t)y.size * sizeof(dcomplex));
          memcpy(y0, y.buf, (size_t)y.size * sizeof(dcomplex));
          dcomplex alpha = l1_alphas[ai];
          kernel(cj ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, n, &alpha, x.v, incx, y.v, incy, cntx);
          for (int64_t at = 0; at < y.size; at++) {
            int ok;
            if (ai == 0 || !l1_in_vec(&y, at, n, incy)) {
              ok = memcmp(&y.buf[at], &y0[at], sizeof(dcomplex)) == 0;
            } else {
              int64_t k = (int64_t)(y.buf + at - y.v) / incy;
              lcplx t = lz(alpha) * lz_conj_if(cj, x.v[k * incx]);
              ok = l1_close(y.buf[at], lz(y0[at]) + t, cabsl(lz(y0[at])) + cabsl(t), 2);
            }
            if (!ok) l1_fail(__FILE__, __LINE__, set, "axpyv", n, 0, incx, incy, cj, 0, ai, 0, at);
          }
          free(x.buf), free(y.buf), free(y0);
        }
}

static void check_dotxv(const char *set, zdotxv_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int ii = 0; ii < L1_V_INCS; ii++)
      for (int cj = 0; cj < 4; cj++)
        for (int ai = 0; ai < 3; ai++)
          for (int bi = 0; bi < 3; bi++) {
            int64_t n = l1_lengths[li], incx = l1_v_incs[ii][0], incy = l1_v_incs[ii][1];
            int cx = cj & 1, cy = cj >> 1;
            l1_vec x = l1_vec_make(n, incx, seed), y = l1_vec_make(n, incy, seed);
            if (ai == 0) l1_fill_nan(x.v, n, incx), l1_fill_nan(y.v, n, incy);
            dcomplex rho = {0.3, -0.6}, alpha = l1_alphas[ai], beta = l1_betas[bi];
            if (bi == 0) rho.real = rho.imag = NAN; /* beta 0 reads no rho */
            lcplx want = bi == 0 ? 0 : lz(beta) * lz(rho);
            long double scale = cabsl(want);
            if (ai != 0) {
              lcplx sum = 0;
              long double mag = 0;
              for (int64_t k = 0; k < n; k++) {
                lcplx t = lz_conj_if(cx, x.v[k * incx]) * lz_conj_if(cy, y.v[k * incy]);
                sum += t, mag += cabsl(t);
              }
              want += lz(alpha) * sum;
              scale += cabsl(lz(alpha)) * mag;
            }
            kernel(cx ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, cy ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE,
                   n, &alpha, x.v, incx, y.v, incy, &beta, &rho, cntx);
            if (!l1_close(rho, want, scale, n))
              l1_fail(__FILE__, __LINE__, set, "dotxv", n, 0, incx, incy, cx, cy, ai, bi, 0);
            free(x.buf), free(y.buf);
          }
}

static void check_scalv(const char *set, zscalv_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  const int64_t incs[] = {1, 2, 3, -1, -2};
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int ii = 0; ii < 5; ii++)
      for (int cj = 0; cj < 2; cj++)
        for (int ai = 0; ai < 3; ai++) {
          int64_t n = l1_lengths[li], incx = incs[ii];
          l1_vec x = l1_vec_make(n, incx, seed);
          if (ai == 0) l1_fill_nan(x.v, n, incx); /* alpha 0 writes zeros, reading nothing */
          dcomplex *x0 = malloc((size_t)x.size * sizeof(dcomplex));
          memcpy(x0, x.buf, (size_t)x.size * sizeof(dcomplex));
          dcomplex alpha = l1_alphas[ai];
          kernel(cj ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, n, &alpha, x.v, incx, cntx);
          for (int64_t at = 0; at < x.size; at++) {
            int ok;
            if (!l1_in_vec(&x, at, n, incx)) {
              ok = memcmp(&x.buf[at], &x0[at], sizeof(dcomplex)) == 0;
            } else {
              lcplx want = lz_conj_if(cj, alpha) * lz(x0[at]);
              ok = ai == 0 ? x.buf[at].real == 0.0 && x.buf[at].imag == 0.0
                           : l1_close(x.buf[at], want, cabsl(want), 2);
            }
            if (!ok) l1_fail(__FILE__, __LINE__, set, "scalv", n, 0, incx, 0, cj, 0, ai, 0, at);
          }
          free(x.buf), free(x0);
        }
}

static void check_scal2v(const char *set, zscal2v_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int ii = 0; ii < L1_V_INCS; ii++)
      for (int cj = 0; cj < 2; cj++)
        for (int ai = 0; ai < 3; ai++) {
          int64_t n = l1_lengths[li], incx = l1_v_incs[ii][0], incy = l1_v_incs[ii][1];
          l1_vec x = l1_vec_make(n, incx, seed), y = l1_vec_make(n, incy, seed);
          l1_fill_nan(y.v, n, incy); /* y is only written */
          if (ai == 0) l1_fill_nan(x.v, n, incx);
          dcomplex *y0 = malloc((size_t)y.size * sizeof(dcomplex));
          memcpy(y0, y.buf, (size_t)y.size * sizeof(dcomplex));
          dcomplex alpha = l1_alphas[ai];
          kernel(cj ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, n, &alpha, x.v, incx, y.v, incy, cntx);
          for (int64_t at = 0; at < y.size; at++) {
            int ok;
            if (!l1_in_vec(&y, at, n, incy)) {
              ok = memcmp(&y.buf[at], &y0[at], sizeof(dcomplex)) == 0;
            } else {
              int64_t k = (int64_t)(y.buf + at - y.v) / incy;
              lcplx want = lz(alpha) * lz_conj_if(cj, x.v[k * incx]);
              ok = ai == 0 ? y.buf[at].real == 0.0 && y.buf[at].imag == 0.0
                           : l1_close(y.buf[at], want, cabsl(want), 2);
            }
            if (!ok) l1_fail(__FILE__, __LINE__, set, "scal2v", n, 0, incx, incy, cj, 0, ai, 0, at);
          }
          free(x.buf), free(y.buf), free(y0);
        }
}

static void blis_level1v_kernels_match_naive(void) {
  l1_sets s = level1_sets();
  cntx_t *cntx = tl__blis_context();
  unsigned seed = 4242u;
  for (int e = 0; e < s.count; e++) {
    TH_CHECK(s.k[e].axpyv != NULL && s.k[e].dotxv != NULL);
    TH_CHECK(s.k[e].scalv != NULL && s.k[e].scal2v != NULL);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, axpyv)))
      check_axpyv(s.name[e], s.k[e].axpyv, cntx, &seed);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, dotxv)))
      check_dotxv(s.name[e], s.k[e].dotxv, cntx, &seed);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, scalv)))
      check_scalv(s.name[e], s.k[e].scalv, cntx, &seed);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, scal2v)))
      check_scal2v(s.name[e], s.k[e].scal2v, cntx, &seed);
  }
}

/* Matrix layouts for the fused kernels, m x b_n: {row stride, column stride, incx, incy},
 * a column stride of -1 meaning m + 3 (padded column-major) and a row stride of 0 meaning
 * row-major (row stride b_n, column stride 1). */
static const int64_t l1_f_layouts[][4] = {
    {1, -1, 1, 1}, {1, -1, 2, 3}, {0, 1, 1, 1}, {2, -1, 3, 2}, {1, -1, 1, 2}};
enum { L1_F_LAYOUTS = sizeof l1_f_layouts / sizeof l1_f_layouts[0] };

static void l1_f_strides(int layout, int64_t m, int64_t bn, int64_t *inca, int64_t *lda) {
  *inca = l1_f_layouts[layout][0] == 0 ? bn : l1_f_layouts[layout][0];
  *lda = l1_f_layouts[layout][1] == -1 ? *inca * m + 3 : l1_f_layouts[layout][1];
}

static void check_dotxf(const char *set, zdotxf_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int64_t bn = 1; bn <= 8; bn++)
      for (int la = 0; la < L1_F_LAYOUTS; la++)
        for (int cj = 0; cj < 4; cj++)
          for (int ai = 0; ai < 3; ai++)
            for (int bi = 0; bi < 3; bi++) {
              int64_t m = l1_lengths[li], inca, lda;
              int64_t incx = l1_f_layouts[la][2], incy = l1_f_layouts[la][3];
              l1_f_strides(la, m, bn, &inca, &lda);
              int ca = cj & 1, cx = cj >> 1;
              int64_t na = m > 0 ? inca * (m - 1) + lda * (bn - 1) + 1 : 1;
              dcomplex *a = malloc((size_t)na * sizeof(dcomplex));
              fill_random(TL_C128, a, na, seed);
              l1_vec x = l1_vec_make(m, incx, seed), y = l1_vec_make(bn, incy, seed);
              if (ai == 0) l1_fill_nan(a, na, 1), l1_fill_nan(x.v, m, incx);
              if (bi == 0) l1_fill_nan(y.v, bn, incy);
              dcomplex *y0 = malloc((size_t)y.size * sizeof(dcomplex));
              memcpy(y0, y.buf, (size_t)y.size * sizeof(dcomplex));
              dcomplex alpha = l1_alphas[ai], beta = l1_betas[bi];
              kernel(ca ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE,
                     cx ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, m, bn, &alpha, a, inca, lda, x.v,
                     incx, &beta, y.v, incy, cntx);
              for (int64_t at = 0; at < y.size; at++) {
                int ok;
                if (!l1_in_vec(&y, at, bn, incy)) {
                  ok = memcmp(&y.buf[at], &y0[at], sizeof(dcomplex)) == 0;
                } else {
                  int64_t j = (int64_t)(y.buf + at - y.v) / incy;
                  lcplx want = bi == 0 ? 0 : lz(beta) * lz(y0[at]);
                  long double scale = cabsl(want);
                  if (ai != 0) {
                    lcplx sum = 0;
                    long double mag = 0;
                    for (int64_t i = 0; i < m; i++) {
                      lcplx t =
                          lz_conj_if(ca, a[i * inca + j * lda]) * lz_conj_if(cx, x.v[i * incx]);
                      sum += t, mag += cabsl(t);
                    }
                    want += lz(alpha) * sum;
                    scale += cabsl(lz(alpha)) * mag;
                  }
                  ok = l1_close(y.buf[at], want, scale, m);
                }
                if (!ok)
                  l1_fail(__FILE__, __LINE__, set, "dotxf", m, bn, inca, lda, ca, cx, ai, bi, at);
              }
              free(a), free(x.buf), free(y.buf), free(y0);
            }
}

static void check_axpyf(const char *set, zaxpyf_ker_ft kernel, cntx_t *cntx, unsigned *seed) {
  for (int li = 0; li < L1_LENGTHS; li++)
    for (int64_t bn = 1; bn <= 8; bn++)
      for (int la = 0; la < L1_F_LAYOUTS; la++)
        for (int cj = 0; cj < 4; cj++)
          for (int ai = 0; ai < 3; ai++) {
            int64_t m = l1_lengths[li], inca, lda;
            /* axpyf's x has b_n elements and y has m: the layout's increments swap roles. */
            int64_t incx = l1_f_layouts[la][3], incy = l1_f_layouts[la][2];
            l1_f_strides(la, m, bn, &inca, &lda);
            int ca = cj & 1, cx = cj >> 1;
            int64_t na = m > 0 ? inca * (m - 1) + lda * (bn - 1) + 1 : 1;
            dcomplex *a = malloc((size_t)na * sizeof(dcomplex));
            fill_random(TL_C128, a, na, seed);
            l1_vec x = l1_vec_make(bn, incx, seed), y = l1_vec_make(m, incy, seed);
            if (ai == 0) l1_fill_nan(a, na, 1), l1_fill_nan(x.v, bn, incx);
            dcomplex *y0 = malloc((size_t)y.size * sizeof(dcomplex));
            memcpy(y0, y.buf, (size_t)y.size * sizeof(dcomplex));
            dcomplex alpha = l1_alphas[ai];
            kernel(ca ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE, cx ? BLIS_CONJUGATE : BLIS_NO_CONJUGATE,
                   m, bn, &alpha, a, inca, lda, x.v, incx, y.v, incy, cntx);
            for (int64_t at = 0; at < y.size; at++) {
              int ok;
              if (ai == 0 || !l1_in_vec(&y, at, m, incy)) {
                ok = memcmp(&y.buf[at], &y0[at], sizeof(dcomplex)) == 0;
              } else {
                int64_t i = (int64_t)(y.buf + at - y.v) / incy;
                lcplx sum = 0;
                long double mag = 0;
                for (int64_t j = 0; j < bn; j++) {
                  lcplx t = lz_conj_if(ca, a[i * inca + j * lda]) * lz_conj_if(cx, x.v[j * incx]);
                  sum += t, mag += cabsl(t);
                }
                lcplx want = lz(y0[at]) + lz(alpha) * sum;
                ok = l1_close(y.buf[at], want, cabsl(lz(y0[at])) + cabsl(lz(alpha)) * mag, bn);
              }
              if (!ok)
                l1_fail(__FILE__, __LINE__, set, "axpyf", m, bn, inca, lda, ca, cx, ai, 0, at);
            }
            free(a), free(x.buf), free(y.buf), free(y0);
          }
}

static void blis_level1f_kernels_match_naive(void) {
  l1_sets s = level1_sets();
  cntx_t *cntx = tl__blis_context();
  unsigned seed = 777u;
  for (int e = 0; e < s.count; e++) {
    TH_CHECK(s.k[e].dotxf != NULL && s.k[e].axpyf != NULL);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, dotxf)))
      check_dotxf(s.name[e], s.k[e].dotxf, cntx, &seed);
    if (!level1_seen(&s, e, offsetof(tl__blis_level1_kernels, axpyf)))
      check_axpyf(s.name[e], s.k[e].axpyf, cntx, &seed);
  }
}

/* On a CPU with AVX2 and FMA every context tenlane uses holds tenlane's complex level-1
 * kernels (BLIS 0.9's own are all references there), the AVX-512 axpyv with AVX-512F. */
static void blis_level1_kernels_installed_in_contexts(void) {
  if (tl__isa_level() < TL__ISA_AVX2)
    th_test_skip(
        "tenlane's level-1 kernels go into the contexts with AVX2 and FMA (CPU or TL_ISA)");
#if !TL_X86_KERNELS
  th_test_skip("tenlane's level-1 kernels for BLIS are x86 (AVX2 and FMA) only");
#else
  tl__blis_level1_kernels k = tl__blis_level1(tl__isa_level() >= TL__ISA_AVX512);
  cntx_t *contexts[2] = {tl__blis_context(), tl__blis_context_complex()};
  for (int c = 0; c < 2; c++) {
    cntx_t *cntx = contexts[c];
    TH_CHECK(cntx->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.axpyv);
    TH_CHECK(cntx->l1v_kers[BLIS_DOTXV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.dotxv);
    TH_CHECK(cntx->l1v_kers[BLIS_SCALV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.scalv);
    TH_CHECK(cntx->l1v_kers[BLIS_SCAL2V_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.scal2v);
    TH_CHECK(cntx->l1f_kers[BLIS_DOTXF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.dotxf);
    TH_CHECK(cntx->l1f_kers[BLIS_AXPYF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.axpyf);
  }
  /* The process-wide context LAPACK's BLAS calls get is the same object or a copy of it. */
  cntx_t *global = bli_gks_query_cntx();
  TH_CHECK(global->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.axpyv);
  TH_CHECK(global->l1f_kers[BLIS_DOTXF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.dotxf);
  TH_CHECK(global->l1f_kers[BLIS_AXPYF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k.axpyf);
#endif
}

#if TL_X86_KERNELS
/* How many of the six slots of `cntx` hold the kernel of `k` for that slot. */
static int level1_held(const cntx_t *cntx, const tl__blis_level1_kernels *k) {
  return (cntx->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->axpyv) +
         (cntx->l1v_kers[BLIS_DOTXV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->dotxv) +
         (cntx->l1v_kers[BLIS_SCALV_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->scalv) +
         (cntx->l1v_kers[BLIS_SCAL2V_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->scal2v) +
         (cntx->l1f_kers[BLIS_DOTXF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->dotxf) +
         (cntx->l1f_kers[BLIS_AXPYF_KER].ptr[BLIS_DCOMPLEX] == (void_fp)k->axpyf);
}
#endif

/* tl__prov_own_level1(0) (the benchmark's switch) takes tenlane's kernels out of every context
 * that got them, BLIS's typed calls still compute (on BLIS's reference kernels), and
 * tl__prov_own_level1(1) puts all six back. */
static void blis_level1_switch_restores_blis_kernels(void) {
  if (tl__isa_level() < TL__ISA_AVX2)
    th_test_skip(
        "tenlane's level-1 kernels go into the contexts with AVX2 and FMA (CPU or TL_ISA)");
#if !TL_X86_KERNELS
  th_test_skip("tenlane's level-1 kernels for BLIS are x86 (AVX2 and FMA) only");
#else
  tl__blis_level1_kernels k = tl__blis_level1(tl__isa_level() >= TL__ISA_AVX512);
  cntx_t *contexts[3] = {tl__blis_context(), tl__blis_context_complex(), bli_gks_query_cntx()};
  for (int c = 0; c < 3; c++) TH_CHECK(level1_held(contexts[c], &k) == 6);
  unsigned seed = 41u;
  for (int on = 0; on <= 1; on++) {
    tl__prov_own_level1(on);
    for (int c = 0; c < 3; c++) TH_CHECK(level1_held(contexts[c], &k) == (on ? 6 : 0));
    for (int c = 0; c < 3; c++) TH_CHECK(contexts[c]->l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX]);
    /* y += alpha x through BLIS's typed API, which takes the process-wide context. */
    dcomplex x[37], y[37], y0[37], alpha = {0.75, -1.25};
    fill_random(TL_C128, x, 37, &seed);
    fill_random(TL_C128, y, 37, &seed);
    memcpy(y0, y, sizeof y);
    bli_zaxpyv(BLIS_NO_CONJUGATE, 37, &alpha, x, 1, y, 1);
    for (int i = 0; i < 37; i++) {
      double complex want =
          y0[i].real + I * y0[i].imag + (alpha.real + I * alpha.imag) * (x[i].real + I * x[i].imag);
      TH_CHECK(cabs(y[i].real + I * y[i].imag - want) <= 1e-14 * (1.0 + cabs(want)));
    }
  }
#endif
}

#else
/* Another provider, or a BLIS without the 0.9 internals: tenlane puts no kernels into it. */
static void blis_only(void) {
  th_test_skip(
      "tenlane's level-1 kernels go into BLIS 0.9's contexts; the provider here "
      "is " TL_PROVIDER_DESC);
}
static void blis_complex_axpyv_matches_naive(void) { blis_only(); }
static void blis_level1v_kernels_match_naive(void) { blis_only(); }
static void blis_level1f_kernels_match_naive(void) { blis_only(); }
static void blis_level1_kernels_installed_in_contexts(void) { blis_only(); }
static void blis_level1_switch_restores_blis_kernels(void) { blis_only(); }
#endif

/* ---- no provider thread --------------------------------------------------------------- */
typedef struct watcher {
  atomic_int stop;
  atomic_int most;
} watcher;

static void *watch_threads(void *arg) {
  watcher *w = arg;
  while (!atomic_load(&w->stop)) {
    int n = th_thread_count();
    if (n > atomic_load(&w->most)) atomic_store(&w->most, n);
  }
  return NULL;
}

static void fill(tl_tensor *t, double seed) {
  int64_t count = tl_tensor_numel(t);
  size_t per = tl_dtype_is_complex(t->dtype) ? 2 : 1;
  for (int64_t i = 0; i < count * (int64_t)per; i++) {
    double v = (double)((i * 7919 + (int64_t)(seed * 131)) % 97) / 97.0 - 0.5 + (i % 13 == 0);
    if (t->dtype == TL_F32 || t->dtype == TL_C64)
      ((float *)t->data)[i] = (float)v;
    else
      ((double *)t->data)[i] = v;
  }
}

static void complex_and_lapack_calls(tl_exec *exec) {
  const tl_dtype dtypes[] = {TL_C64, TL_C128, TL_F64};
  const int64_t sizes[] = {4, 16, 96};
  for (int di = 0; di < 3; di++)
    for (int si = 0; si < 3; si++) {
      int64_t n = sizes[si], shape[2] = {n, n};
      tl_tensor a, b, c, q, r, u, s, vt, lu;
      TH_CHECK_OK(tl_tensor_create(dtypes[di], 2, shape, &a));
      TH_CHECK_OK(tl_tensor_create(dtypes[di], 2, shape, &b));
      fill(&a, 1.0);
      fill(&b, 2.0);
      TH_CHECK_OK(tl_gemm(exec, &a, &b, &c));
      tl_tensor_release(&c);
      const int la[2] = {0, 1}, lb[2] = {1, 2}, lc[2] = {0, 2};
      TH_CHECK_OK(tl_contract(exec, 2, lc, &a, la, &b, lb, &c));
      tl_tensor_release(&c);
      TH_CHECK_OK(tl_qr(exec, &a, &q, &r));
      int64_t rank = 0;
      TH_CHECK_OK(tl_svd(exec, NULL, &a, &u, &s, &vt, &rank));
      int64_t pivots[96];
      TH_CHECK_OK(tl_lu(exec, &a, &lu, pivots));
      tl_tensor_release(&q), tl_tensor_release(&r), tl_tensor_release(&u);
      tl_tensor_release(&s), tl_tensor_release(&vt), tl_tensor_release(&lu);
      tl_tensor_release(&a), tl_tensor_release(&b);
    }
}

static void no_provider_thread_during_complex_and_lapack_calls(void) {
  th_held h;
  th_held_open(&h, 1);
  watcher w;
  atomic_init(&w.stop, 0);
  atomic_init(&w.most, 0);
  th_thread t;
  th_thread_start(&t, watch_threads, &w);
  int before = th_thread_count(); /* the pool's, the caller, the watcher */
  for (int round = 0; round < 3; round++) complex_and_lapack_calls(h.exec);
  int after = th_thread_count();
  atomic_store(&w.stop, 1);
  th_thread_join(&t, 5000);
  if (atomic_load(&w.most) > before || after != before) {
    char buf[128];
    snprintf(buf, sizeof buf, "threads: %d before, at most %d during, %d after", before,
             atomic_load(&w.most), after);
    th_test_fail_at(__FILE__, __LINE__, buf);
  }
  th_held_close(&h);
}

/* TL_ISA is read once per process: the two cases below set it, so each needs a process of its
 * own (ctest runs every case by name). In a run of the whole binary the cases before them
 * have read it already, and they are skipped (they come last, so that they do not cap the
 * others' level). */
static void skip_if_tl_isa_was_read(void) {
  if (tl__isa_was_read())
    th_test_skip(
        "TL_ISA was read already in this process (earlier cases); run this case by "
        "name, alone");
}

/* TL_ISA=portable, set before the first context: the level is portable whatever the CPU,
 * the provider string says so, and no AVX path is chosen. */
static void tl_isa_portable_caps_every_choice(void) {
  skip_if_tl_isa_was_read();
  TH_CHECK(setenv("TL_ISA", "portable", 1) == 0);
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 1;
  tl_context *ctx = NULL;
  TH_CHECK_OK(tl_context_create(&config, &ctx));
  TH_CHECK(tl__isa_level() == TL__ISA_PORTABLE);
  TH_CHECK(strstr(tl_kernels_provider(), " isa:portable") != NULL);
  tl__provider_choice now = tl__provider_current();
  TH_CHECK(now.small_complex == TL__SMALL_COMPLEX_PORTABLE && now.packed_complex == 0);
  TH_CHECK(tl__permute_isa() == TL__ISA_PORTABLE);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

/* TL_ISA holding something else is the context's TL_E_INVALID, with a message naming it. */
static void tl_isa_unknown_value_is_an_error(void) {
  skip_if_tl_isa_was_read();
  TH_CHECK(setenv("TL_ISA", "avx9000", 1) == 0);
  tl_context_config config;
  tl_context_config_init(&config);
  tl_context *ctx = NULL;
  TH_CHECK_STATUS(tl_context_create(&config, &ctx), TL_E_INVALID);
  TH_CHECK(ctx == NULL);
  TH_CHECK(strstr(tl_last_message(), "avx9000") != NULL);
}

TH_TEST_MAIN(TH_CASE(provider_choice_covers_each_feature_set),
             TH_CASE(small_complex_kernels_match_naive), TH_CASE(blis_complex_axpyv_matches_naive),
             TH_CASE(blis_level1v_kernels_match_naive), TH_CASE(blis_level1f_kernels_match_naive),
             TH_CASE(blis_level1_kernels_installed_in_contexts),
             TH_CASE(blis_level1_switch_restores_blis_kernels),
             TH_CASE(provider_choice_of_this_process_follows_its_features),
             TH_CASE(no_provider_thread_during_complex_and_lapack_calls),
             TH_CASE(tl_isa_portable_caps_every_choice), TH_CASE(tl_isa_unknown_value_is_an_error))
