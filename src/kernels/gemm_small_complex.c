/* src/kernels/gemm_small_complex.c: tiny complex GEMMs (c64, c128) computed in place by a
 * small kernel on the calling thread, without a provider call.
 *
 * Why: a BLIS call costs 1.6-2 us of set-up whatever the size (object set-up, and packing
 * buffers taken from a pool all threads share behind a lock, which lanes running tiny
 * GEMMs side by side contend for), and libxsmm 1.17 has no complex kernels. For m n k up to
 * TL__SMALL_COMPLEX_MNK the product is a few thousand complex multiply-adds, which a
 * register kernel does in well under a microsecond.
 *
 * The AVX2+FMA kernel keeps the complex numbers interleaved: a column piece of A is loaded
 * as it is stored, multiplied by the broadcast real and imaginary parts of one element of B
 * into two accumulators, and the two are combined at the end with one swap and one
 * add-subtract (re = ar br - ai bi, im = ai br + ar bi). It needs unit row strides for A and
 * C (column-major), or, through C^T = B^T A^T, unit column strides for B and C; B's element
 * is broadcast, so B may have any strides. Anything else, and CPUs without AVX2+FMA, take
 * the portable kernel (any strides), limited to smaller products. With AVX-512F the same
 * scheme runs on zmm registers (twice the lanes, masked tails).
 *
 * Pure: no allocation, no shared state, never fails (a 0 return means "not taken"). */
#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "kernels.h"
#if TL_X86_KERNELS
#include <immintrin.h>
#endif

/* The portable kernel's reach: beyond it a provider call is cheaper. */
#define SMALL_PORTABLE_MNK (8 * 8 * 8)

#define TL__PORTABLE_COMPLEX(NAME, T)                                                         \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const T *a, int64_t rsa, \
                   int64_t csa, const T *b, int64_t rsb, int64_t csb, tl_scalar beta, T *c,   \
                   int64_t rsc, int64_t csc) {                                                \
    const T alr = (T)alpha.re, ali = (T)alpha.im, ber = (T)beta.re, bei = (T)beta.im;         \
    const int beta_zero = beta.re == 0.0 && beta.im == 0.0;                                   \
    for (int64_t j = 0; j < n; j++)                                                           \
      for (int64_t i = 0; i < m; i++) {                                                       \
        T sr = 0, si = 0;                                                                     \
        for (int64_t p = 0; p < k; p++) {                                                     \
          const T *x = a + 2 * (i * rsa + p * csa), *y = b + 2 * (p * rsb + j * csb);         \
          sr += x[0] * y[0] - x[1] * y[1];                                                    \
          si += x[0] * y[1] + x[1] * y[0];                                                    \
        }                                                                                     \
        T *z = c + 2 * (i * rsc + j * csc);                                                   \
        /* a real alpha or beta scales each part alone (inf stays inf) */                     \
        T vr = ali == 0 ? alr * sr : alr * sr - ali * si;                                     \
        T vi = ali == 0 ? alr * si : alr * si + ali * sr;                                     \
        if (!beta_zero) {                                                                     \
          vr += bei == 0 ? ber * z[0] : ber * z[0] - bei * z[1];                              \
          vi += bei == 0 ? ber * z[1] : ber * z[1] + bei * z[0];                              \
        }                                                                                     \
        z[0] = vr;                                                                            \
        z[1] = vi;                                                                            \
      }                                                                                       \
  }

TL__PORTABLE_COMPLEX(portable_c64, float)
TL__PORTABLE_COMPLEX(portable_c128, double)

#if TL_X86_KERNELS
/* ---- AVX2 + FMA: a ymm holds two complex doubles or four complex floats ------------------ */

/* The finishing step of the AVX2 kernels: combine the two accumulators into complex
 * products, apply alpha and beta, store. One definition per register type. */
#define TL__FINISH256(FIN, STORE, V, T, SWAP_IMM, ADDSUB, MUL, ADD, PERMUTE, LOADU, STOREU)    \
  typedef struct FIN {                                                                         \
    int alpha_one, alpha_real, beta_zero, beta_one, beta_real;                                 \
    V alr, ali, ber, bei;                                                                      \
  } FIN;                                                                                       \
  __attribute__((target("avx2,fma"))) static inline void STORE(const FIN *f, V acc_r, V acc_i, \
                                                               T *z) {                         \
    V v = ADDSUB(acc_r, PERMUTE(acc_i, SWAP_IMM));                                             \
    if (f->alpha_real && !f->alpha_one) v = MUL(v, f->alr); /* parts alone: inf stays inf */   \
    if (!f->alpha_real) v = ADDSUB(MUL(v, f->alr), MUL(PERMUTE(v, SWAP_IMM), f->ali));         \
    if (f->beta_one) {                                                                         \
      v = ADD(v, LOADU(z));                                                                    \
    } else if (f->beta_real && !f->beta_zero) {                                                \
      v = ADD(v, MUL(LOADU(z), f->ber));                                                       \
    } else if (!f->beta_zero) {                                                                \
      V old = LOADU(z);                                                                        \
      v = ADD(v, ADDSUB(MUL(old, f->ber), MUL(PERMUTE(old, SWAP_IMM), f->bei)));               \
    }                                                                                          \
    STOREU(z, v);                                                                              \
  }

TL__FINISH256(zfinish, z_store256, __m256d, double, 5, _mm256_addsub_pd, _mm256_mul_pd,
              _mm256_add_pd, _mm256_permute_pd, _mm256_loadu_pd, _mm256_storeu_pd)
TL__FINISH256(cfinish, c_store256, __m256, float, 0xB1, _mm256_addsub_ps, _mm256_mul_ps,
              _mm256_add_ps, _mm256_permute_ps, _mm256_loadu_ps, _mm256_storeu_ps)

/* C (m x n, column stride ldc) = alpha A B + beta C, A column-major (column stride lda), B
 * with element strides (rsb, csb); all in complex elements. LANES complex numbers per
 * register; the last m % LANES rows go to the portable kernel.
 *
 * Columns of C are taken three at a time with two registers of rows: twelve accumulators,
 * enough independent FMA chains for two FMA units of latency 4-5, and two loads of A for
 * six broadcasts of B per step. One column at a time with two registers (four chains) ran
 * at about half that speed on Zen 2 (17 against 41 GFLOP/s c128 at 64^3, measured in
 * isolation). Shorter row blocks finish the rows; the last one or two columns take blocks of
 * their own width. The block loops have constant trip counts, so at -O3 (cmake/HotFiles.cmake) the
 * accumulator arrays live in registers. */
#define TL__COLUMN_BLOCK(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, NC, R)         \
  do {                                                                                \
    V acc_r[NC][R], acc_i[NC][R];                                                     \
    for (int u = 0; u < NC; u++)                                                      \
      for (int q = 0; q < R; q++) acc_r[u][q] = acc_i[u][q] = ZERO();                 \
    const T *ap = a + 2 * i, *bp = b + 2 * j * csb;                                   \
    for (int64_t p = 0; p < k; p++, ap += 2 * lda, bp += 2 * rsb) {                   \
      V av[R];                                                                        \
      for (int q = 0; q < R; q++) av[q] = LOADU(ap + 2 * LANES * q);                  \
      for (int u = 0; u < NC; u++) {                                                  \
        V bv = SET1(bp[2 * u * csb]);                                                 \
        for (int q = 0; q < R; q++) acc_r[u][q] = FMADD(av[q], bv, acc_r[u][q]);      \
        bv = SET1(bp[2 * u * csb + 1]);                                               \
        for (int q = 0; q < R; q++) acc_i[u][q] = FMADD(av[q], bv, acc_i[u][q]);      \
      }                                                                               \
    }                                                                                 \
    for (int u = 0; u < NC; u++)                                                      \
      for (int q = 0; q < R; q++)                                                     \
        STORE(&f, acc_r[u][q], acc_i[u][q], c + 2 * ((j + u) * ldc + i + LANES * q)); \
    i += R * LANES;                                                                   \
  } while (0)

/* All rows of columns j .. j + NC - 1, row blocks of two registers and then one. */
#define TL__COLUMNS(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, NC)                    \
  do {                                                                                   \
    int64_t i = 0;                                                                       \
    while (i + 2 * LANES <= full)                                                        \
      TL__COLUMN_BLOCK(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, NC, 2);             \
    if (i < full) TL__COLUMN_BLOCK(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, NC, 1); \
  } while (0)

#define TL__SMALL256(NAME, T, V, FIN, STORE, LANES, SET1, LOADU, FMADD, ZERO, TAIL)               \
  __attribute__((target("avx2,fma"))) static void NAME(                                           \
      int64_t m, int64_t n, int64_t k, tl_scalar alpha, const T *a, int64_t lda, const T *b,      \
      int64_t rsb, int64_t csb, tl_scalar beta, T *c, int64_t ldc) {                              \
    FIN f;                                                                                        \
    f.alpha_one = alpha.re == 1.0 && alpha.im == 0.0;                                             \
    f.beta_zero = beta.re == 0.0 && beta.im == 0.0;                                               \
    f.beta_one = beta.re == 1.0 && beta.im == 0.0;                                                \
    f.alpha_real = alpha.im == 0.0, f.beta_real = beta.im == 0.0;                                 \
    f.alr = SET1((T)alpha.re), f.ali = SET1((T)alpha.im);                                         \
    f.ber = SET1((T)beta.re), f.bei = SET1((T)beta.im);                                           \
    const int64_t full = m / LANES * LANES;                                                       \
    int64_t j = 0;                                                                                \
    for (; j + 3 <= n; j += 3) TL__COLUMNS(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, 3);      \
    if (n - j == 2) TL__COLUMNS(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, 2);                 \
    if (n - j == 1) TL__COLUMNS(T, V, LANES, STORE, SET1, LOADU, FMADD, ZERO, 1);                 \
    if (full < m)                                                                                 \
      TAIL(m - full, n, k, alpha, a + 2 * full, 1, lda, b, rsb, csb, beta, c + 2 * full, 1, ldc); \
  }

TL__SMALL256(z_avx2, double, __m256d, zfinish, z_store256, 2, _mm256_set1_pd, _mm256_loadu_pd,
             _mm256_fmadd_pd, _mm256_setzero_pd, portable_c128)
TL__SMALL256(c_avx2, float, __m256, cfinish, c_store256, 4, _mm256_set1_ps, _mm256_loadu_ps,
             _mm256_fmadd_ps, _mm256_setzero_ps, portable_c64)

/* ---- AVX-512F: a zmm holds four complex doubles or eight complex floats ------------------
 * The same scheme as the AVX2 kernels; fmaddsub (x*y -/+ z alternating) stands in for
 * addsub, and a masked load/store takes the last rows. */
/* TL__SMALL512, part 1: alpha and beta applied to a block, and the block written to C. */
#define TL__SMALL512_WRITE(NAME, T, V, MASK, LANES, SET1, LOADU, MASKZ_LOADU, STOREU, MASK_STOREU, \
                           FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO)                                  \
  typedef struct NAME##_fin {                                                                      \
    int alpha_one, alpha_real, beta_kind; /* beta_kind: 0 zero, 1 one, 2 real, 3 general */        \
    V alr, ali, ber, bei, one;                                                                     \
  } NAME##_fin;                                                                                    \
  __attribute__((target("avx512f"))) static inline V NAME##_finish(V acc_r, V acc_i,               \
                                                                   const NAME##_fin *f, V old) {   \
    V v = FMADDSUB(acc_r, f->one, SWAP(acc_i));                                                    \
    if (f->alpha_real && !f->alpha_one) v = MUL(v, f->alr); /* parts alone: inf stays inf */       \
    if (!f->alpha_real) v = FMADDSUB(v, f->alr, MUL(SWAP(v), f->ali));                             \
    if (f->beta_kind == 1) v = ADD(v, old);                                                        \
    if (f->beta_kind == 2) v = ADD(v, MUL(old, f->ber));                                           \
    if (f->beta_kind == 3) v = ADD(v, FMADDSUB(old, f->ber, MUL(SWAP(old), f->bei)));              \
    return v;                                                                                      \
  }                                                                                                \
  __attribute__((target("avx512f"))) static inline void NAME##_put(T *z, V r0, V i0, V r1, V i1,   \
                                                                   const NAME##_fin *f) {          \
    V zero = SET1((T)0);                                                                           \
    V o0 = f->beta_kind ? LOADU(z) : zero, o1 = f->beta_kind ? LOADU(z + 2 * LANES) : zero;        \
    STOREU(z, NAME##_finish(r0, i0, f, o0));                                                       \
    STOREU(z + 2 * LANES, NAME##_finish(r1, i1, f, o1));                                           \
  }                                                                                                \
  __attribute__((target("avx512f"))) static inline void NAME##_put_masked(                         \
      T *z, MASK mask, V r0, V i0, const NAME##_fin *f) {                                          \
    V o0 = f->beta_kind ? MASKZ_LOADU(mask, z) : SET1((T)0);                                       \
    MASK_STOREU(z, mask, NAME##_finish(r0, i0, f, o0));                                            \
  }

/* TL__SMALL512, part 2: the kernel, two columns at a time, then the last one. */
#define TL__SMALL512_KERNEL(NAME, T, V, MASK, LANES, SET1, LOADU, MASKZ_LOADU, STOREU,       \
                            MASK_STOREU, FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO)              \
  __attribute__((target("avx512f"))) static void NAME(                                       \
      int64_t m, int64_t n, int64_t k, tl_scalar alpha, const T *a, int64_t lda, const T *b, \
      int64_t rsb, int64_t csb, tl_scalar beta, T *c, int64_t ldc) {                         \
    NAME##_fin f;                                                                            \
    f.alpha_one = alpha.re == 1.0 && alpha.im == 0.0, f.alpha_real = alpha.im == 0.0;        \
    f.beta_kind = (beta.re == 0.0 && beta.im == 0.0)   ? 0                                   \
                  : (beta.re == 1.0 && beta.im == 0.0) ? 1                                   \
                  : beta.im == 0.0                     ? 2                                   \
                                                       : 3;                                                      \
    f.alr = SET1((T)alpha.re), f.ali = SET1((T)alpha.im), f.ber = SET1((T)beta.re);          \
    f.bei = SET1((T)beta.im), f.one = SET1((T)1);                                            \
    const V zero = ZERO();                                                                   \
    int64_t j = 0;                                                                           \
    /* Two columns at a time: eight independent accumulators hide the FMA latency. */        \
    for (; j + 2 <= n; j += 2) {                                                             \
      const T *b0 = b + 2 * j * csb, *b1 = b0 + 2 * csb;                                     \
      T *c0 = c + 2 * j * ldc, *c1 = c0 + 2 * ldc;                                           \
      int64_t i = 0;                                                                         \
      for (; i + 2 * LANES <= m; i += 2 * LANES) {                                           \
        V r00 = zero, r10 = zero, i00 = zero, i10 = zero;                                    \
        V r01 = zero, r11 = zero, i01 = zero, i11 = zero;                                    \
        const T *ap = a + 2 * i;                                                             \
        for (int64_t p = 0; p < k; p++, ap += 2 * lda) {                                     \
          const T *x = b0 + 2 * p * rsb, *y = b1 + 2 * p * rsb;                              \
          V a0 = LOADU(ap), a1 = LOADU(ap + 2 * LANES);                                      \
          V br = SET1(x[0]), bi = SET1(x[1]);                                                \
          r00 = FMADD(a0, br, r00);                                                          \
          i00 = FMADD(a0, bi, i00);                                                          \
          r10 = FMADD(a1, br, r10);                                                          \
          i10 = FMADD(a1, bi, i10);                                                          \
          br = SET1(y[0]), bi = SET1(y[1]);                                                  \
          r01 = FMADD(a0, br, r01);                                                          \
          i01 = FMADD(a0, bi, i01);                                                          \
          r11 = FMADD(a1, br, r11);                                                          \
          i11 = FMADD(a1, bi, i11);                                                          \
        }                                                                                    \
        NAME##_put(c0 + 2 * i, r00, i00, r10, i10, &f);                                      \
        NAME##_put(c1 + 2 * i, r01, i01, r11, i11, &f);                                      \
      }                                                                                      \
      for (; i < m; i += LANES) {                                                            \
        int64_t rows = m - i < LANES ? m - i : LANES;                                        \
        MASK mask = (MASK)((1u << (2 * rows)) - 1u);                                         \
        V r0 = zero, i0 = zero, r1 = zero, i1 = zero;                                        \
        const T *ap = a + 2 * i;                                                             \
        for (int64_t p = 0; p < k; p++, ap += 2 * lda) {                                     \
          const T *x = b0 + 2 * p * rsb, *y = b1 + 2 * p * rsb;                              \
          V a0 = MASKZ_LOADU(mask, ap);                                                      \
          r0 = FMADD(a0, SET1(x[0]), r0);                                                    \
          i0 = FMADD(a0, SET1(x[1]), i0);                                                    \
          r1 = FMADD(a0, SET1(y[0]), r1);                                                    \
          i1 = FMADD(a0, SET1(y[1]), i1);                                                    \
        }                                                                                    \
        NAME##_put_masked(c0 + 2 * i, mask, r0, i0, &f);                                     \
        NAME##_put_masked(c1 + 2 * i, mask, r1, i1, &f);                                     \
      }                                                                                      \
    }                                                                                        \
    if (j < n) {                                                                             \
      const T *bj = b + 2 * j * csb;                                                         \
      T *cj = c + 2 * j * ldc;                                                               \
      for (int64_t i = 0; i < m; i += LANES) {                                               \
        int64_t rows = m - i < LANES ? m - i : LANES;                                        \
        MASK mask = (MASK)((1u << (2 * rows)) - 1u);                                         \
        V r0 = zero, i0 = zero, r1 = zero, i1 = zero;                                        \
        const T *ap = a + 2 * i, *bp = bj;                                                   \
        int64_t p = 0;                                                                       \
        /* Two chains per part over alternate p, for the same latency reason. */             \
        for (; p + 2 <= k; p += 2, ap += 4 * lda, bp += 4 * rsb) {                           \
          V a0 = MASKZ_LOADU(mask, ap), a1 = MASKZ_LOADU(mask, ap + 2 * lda);                \
          r0 = FMADD(a0, SET1(bp[0]), r0);                                                   \
          i0 = FMADD(a0, SET1(bp[1]), i0);                                                   \
          r1 = FMADD(a1, SET1(bp[2 * rsb]), r1);                                             \
          i1 = FMADD(a1, SET1(bp[2 * rsb + 1]), i1);                                         \
        }                                                                                    \
        if (p < k) {                                                                         \
          V a0 = MASKZ_LOADU(mask, ap);                                                      \
          r0 = FMADD(a0, SET1(bp[0]), r0);                                                   \
          i0 = FMADD(a0, SET1(bp[1]), i0);                                                   \
        }                                                                                    \
        NAME##_put_masked(cj + 2 * i, mask, ADD(r0, r1), ADD(i0, i1), &f);                   \
      }                                                                                      \
    }                                                                                        \
  }

#define TL__SMALL512(NAME, T, V, MASK, LANES, SET1, LOADU, MASKZ_LOADU, STOREU, MASK_STOREU,  \
                     FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO)                                   \
  TL__SMALL512_WRITE(NAME, T, V, MASK, LANES, SET1, LOADU, MASKZ_LOADU, STOREU, MASK_STOREU,  \
                     FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO)                                   \
  TL__SMALL512_KERNEL(NAME, T, V, MASK, LANES, SET1, LOADU, MASKZ_LOADU, STOREU, MASK_STOREU, \
                      FMADD, FMADDSUB, MUL, ADD, SWAP, ZERO)

#define TL__SWAP_PD(v) _mm512_permute_pd((v), 0x55)
#define TL__SWAP_PS(v) _mm512_permute_ps((v), 0xB1)
TL__SMALL512(z_avx512, double, __m512d, __mmask8, 4, _mm512_set1_pd, _mm512_loadu_pd,
             _mm512_maskz_loadu_pd, _mm512_storeu_pd, _mm512_mask_storeu_pd, _mm512_fmadd_pd,
             _mm512_fmaddsub_pd, _mm512_mul_pd, _mm512_add_pd, TL__SWAP_PD, _mm512_setzero_pd)
TL__SMALL512(c_avx512, float, __m512, __mmask16, 8, _mm512_set1_ps, _mm512_loadu_ps,
             _mm512_maskz_loadu_ps, _mm512_storeu_ps, _mm512_mask_storeu_ps, _mm512_fmadd_ps,
             _mm512_fmaddsub_ps, _mm512_mul_ps, _mm512_add_ps, TL__SWAP_PS, _mm512_setzero_ps)

/* ---- dispatch ---------------------------------------------------------------------------- */

/* The largest operand the mixed-layout case copies: 256 complex numbers, 4 KiB. */
#define SMALL_PACK 256
union small_pack {
  double z[2 * SMALL_PACK];
  float c[2 * SMALL_PACK];
};

/* Copies the rows x cols complex matrix at src (row stride srs, column stride scs, in
 * elements of es bytes) to dst (strides drs, dcs). */
static void copy_complex(size_t es, int64_t rows, int64_t cols, const void *src, int64_t srs,
                         int64_t scs, void *dst, int64_t drs, int64_t dcs) {
  const char *s = src;
  char *d = dst;
  for (int64_t q = 0; q < cols; q++)
    for (int64_t r = 0; r < rows; r++) {
      char *to = d + (r * drs + q * dcs) * (int64_t)es;
      const char *from = s + (r * srs + q * scs) * (int64_t)es;
      if (es == 16) /* constant sizes: each copy compiles to a move */
        memcpy(to, from, 16);
      else
        memcpy(to, from, 8);
    }
}

/* x (strides rs, cs) into dst column by column, leading dimension rows. */
static void pack_complex(size_t es, int64_t rows, int64_t cols, const void *x, int64_t rs,
                         int64_t cs, union small_pack *dst) {
  copy_complex(es, rows, cols, x, rs, cs, dst, 1, rows);
}

static int run_vector(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                      const void *a, int64_t lda, const void *b, int64_t rsb, int64_t csb,
                      tl_scalar beta, void *c, int64_t ldc) {
  if (kernel == TL__SMALL_COMPLEX_AVX512) {
    if (dtype == TL_C128)
      z_avx512(m, n, k, alpha, a, lda, b, rsb, csb, beta, c, ldc);
    else
      c_avx512(m, n, k, alpha, a, lda, b, rsb, csb, beta, c, ldc);
  } else if (dtype == TL_C128) {
    z_avx2(m, n, k, alpha, a, lda, b, rsb, csb, beta, c, ldc);
  } else {
    c_avx2(m, n, k, alpha, a, lda, b, rsb, csb, beta, c, ldc);
  }
  return 1;
}
#endif /* TL_X86_KERNELS */

int tl__gemm_small_complex_takes(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                                 int64_t rsa, int64_t rsc, int64_t csb, int64_t csc) {
  if (dtype != TL_C64 && dtype != TL_C128) return 0;
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  if (tl__i64_mul3_sat(m, n, k) > TL__SMALL_COMPLEX_MNK) return 0;
#if TL_X86_KERNELS
  if (kernel == TL__SMALL_COMPLEX_AVX2 || kernel == TL__SMALL_COMPLEX_AVX512) {
    if (m == 1) rsa = rsc = 1;
    if (n == 1) csb = csc = 1;
    if ((rsa == 1 && rsc == 1) || (csb == 1 && csc == 1) || (rsa == 1 && csc == 1 && n <= 4))
      return 1;
  }
#else
  (void)kernel, (void)rsa, (void)rsc, (void)csb, (void)csc;
#endif
  return m * n * k <= SMALL_PORTABLE_MNK;
}

int tl__gemm_small_complex(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                           tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                           int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc,
                           int64_t csc) {
  if (!tl__gemm_small_complex_takes(kernel, dtype, m, n, k, rsa, rsc, csb, csc)) return 0;
#if TL_X86_KERNELS
  if (kernel == TL__SMALL_COMPLEX_AVX2 || kernel == TL__SMALL_COMPLEX_AVX512) {
    /* Extent-1 dimensions: their stride is never used to step, so any unit stride fits. */
    if (m == 1) rsa = rsc = 1;
    if (n == 1) csb = csc = 1;
    if (rsa == 1 && rsc == 1)
      return run_vector(kernel, dtype, m, n, k, alpha, a, csa, b, rsb, csb, beta, c, csc);
    /* A column-major A into a row-major C of a few columns (a gate on a physical leg,
     * ajb,jk->akb, laid out [a][b][k]): C^T = B^T A^T below would run the vector kernel down
     * columns of n elements, two for a 2 x 2 gate (c64: 107 us for 200 entries of 200 rows,
     * against 23 us into a column-major C). Instead the rows go through a column-major piece
     * of C on the stack, SMALL_PACK elements at a time (copied in first when beta is read):
     * each element is computed as in a column-major C, whatever m, so row blocks of any size
     * give the same bits. */
    if (rsa == 1 && csc == 1 && n <= 4) {
      const size_t es = tl_dtype_size(dtype);
      const int64_t rows = SMALL_PACK / n;
      const int read_c = beta.re != 0.0 || beta.im != 0.0;
      union small_pack piece;
      for (int64_t r0 = 0; r0 < m; r0 += rows) {
        const int64_t mr = m - r0 < rows ? m - r0 : rows;
        char *c0 = (char *)c + r0 * rsc * (int64_t)es;
        if (read_c) pack_complex(es, mr, n, c0, rsc, 1, &piece);
        run_vector(kernel, dtype, mr, n, k, alpha, (const char *)a + r0 * (int64_t)es, csa, b, rsb,
                   csb, beta, &piece, mr);
        copy_complex(es, mr, n, &piece, 1, mr, c0, rsc, 1);
      }
      return 1;
    }
    /* C^T = B^T A^T: a row-major C and B become column-major. */
    if (csb == 1 && csc == 1)
      return run_vector(kernel, dtype, n, m, k, alpha, b, rsb, a, csa, rsa, beta, c, rsc);
    /* Mixed layouts inside the portable kernel's reach (a row-major A into a column-major C,
     * as einsum's intermediates meet numpy's operands): the operand whose unit stride is
     * missing is copied into a column piece on the stack, then the vector kernel runs. The
     * choice depends on the extents and strides only, so every call of a shape and layout
     * takes the same kernel and gets the same bits. */
    if (m * k <= SMALL_PACK && k * n <= SMALL_PACK) { /* m n k <= SMALL_PORTABLE_MNK (takes) */
      union small_pack pack;
      if (rsc == 1) {
        pack_complex(tl_dtype_size(dtype), m, k, a, rsa, csa, &pack);
        return run_vector(kernel, dtype, m, n, k, alpha, &pack, m, b, rsb, csb, beta, c, csc);
      }
      if (csc == 1) {
        pack_complex(tl_dtype_size(dtype), n, k, b, csb, rsb, &pack);
        return run_vector(kernel, dtype, n, m, k, alpha, &pack, n, a, csa, rsa, beta, c, rsc);
      }
    }
  }
#else
  (void)kernel; /* always TL__SMALL_COMPLEX_PORTABLE here */
#endif
  /* here m n k <= SMALL_PORTABLE_MNK (takes) */
  if (dtype == TL_C128)
    portable_c128(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
  else
    portable_c64(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
  return 1;
}
