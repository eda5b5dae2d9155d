/* src/kernels/gemm_tiny_nk.c: rows of a GEMM whose B is tiny (n and k of a few elements),
 * as the last step of a tensor-network permutation has (2^18 rows of a times a 4 x 3 B).
 *
 * A provider's GEMM (or the small kernels) on such a product spends its time packing and
 * padding a 4 x 3 B into its register tile, call after call; here each row of C is n dot
 * products of k terms straight from A's row, with B held in locals. The contraction's
 * blocked route (contract.c) calls it on each gathered block of A's rows, writing C in place.
 *
 * B is held padded with zeros to a fixed width (4, 8 or 16 columns; complex: 2, 4, 8 or 16
 * pairs), so each row is k multiply-adds of whole short vectors the compiler unrolls, and
 * only the n real columns are stored. Each element of C is a[0] b[0][j], then plus a[p]
 * b[p][j] for p = 1 .. k-1 in order, in the dtype's precision (complex: each term is
 * (a_re b_re + a_im (-b_im), a_re b_im + a_im b_re), added to the running pair), then times
 * alpha (a product by 1 is exact; a complex alpha of 1 multiplies each part by 1 alone),
 * then beta c added unless beta is 0 (C is not read then). The operations depend on n and k alone,
 * never on which rows a call is given, so a row's bits do not depend on how the rows were cut into
 * calls or which thread ran them. */
#include "kernels.h"

int tl__gemm_tiny_nk_fits(tl_dtype dtype, int64_t n, int64_t k) {
  if (dtype != TL_F32 && dtype != TL_F64 && dtype != TL_C64 && dtype != TL_C128) return 0;
  return n >= 1 && k >= 1 && n <= TL__TINY_NK_MAX && k <= TL__TINY_NK_MAX &&
         n * k <= TL__TINY_NK_MAX_ELEMENTS;
}

/* Real dtypes: T the element type, W the padded width; bt[p * W + j] = B(p, j), 0 past n. */
#define TL__TINY_REAL(NAME, T, W)                                                                 \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *av, int64_t rsa, \
                   const void *bv, int64_t rsb, int64_t csb, tl_scalar beta, void *cv,            \
                   int64_t rsc, int64_t csc) {                                                    \
    const T *a = av, *b = bv;                                                                     \
    T *c = cv;                                                                                    \
    T bt[TL__TINY_NK_MAX * (W)];                                                                  \
    int64_t p = 0; /* k >= 1 (_fits): the first row is always filled */                           \
    do {                                                                                          \
      for (int64_t j = 0; j < (W); j++) bt[p * (W) + j] = j < n ? b[p * rsb + j * csb] : (T)0;    \
    } while (++p < k);                                                                            \
    const int beta_zero = beta.re == 0.0;                                                         \
    const T al = (T)alpha.re, be = (T)beta.re;                                                    \
    for (int64_t r = 0; r < m; r++) {                                                             \
      const T *x = a + r * rsa;                                                                   \
      T acc[W];                                                                                   \
      for (int j = 0; j < (W); j++) acc[j] = x[0] * bt[j];                                        \
      for (p = 1; p < k; p++) {                                                                   \
        const T xp = x[p];                                                                        \
        for (int j = 0; j < (W); j++) acc[j] += xp * bt[p * (W) + j];                             \
      }                                                                                           \
      T *y = c + r * rsc;                                                                         \
      if (beta_zero) {                                                                            \
        for (int64_t j = 0; j < n; j++) y[j * csc] = al * acc[j];                                 \
      } else {                                                                                    \
        for (int64_t j = 0; j < n; j++) y[j * csc] = al * acc[j] + be * y[j * csc];               \
      }                                                                                           \
    }                                                                                             \
  }

TL__TINY_REAL(tiny_f64_4, double, 4)
TL__TINY_REAL(tiny_f64_8, double, 8)
TL__TINY_REAL(tiny_f64_16, double, 16)
TL__TINY_REAL(tiny_f32_4, float, 4)
TL__TINY_REAL(tiny_f32_8, float, 8)
TL__TINY_REAL(tiny_f32_16, float, 16)

/* Complex dtypes: T the part type, W the padded width in pairs; elements are (re, im) pairs,
 * strides count elements. bp holds B's pairs (re, im) and bs the swapped ones (-im, re), so
 * a term is x_re bp + x_im bs over 2 W parts. */
#define TL__TINY_COMPLEX(NAME, T, W)                                                              \
  static void NAME(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *av, int64_t rsa, \
                   const void *bv, int64_t rsb, int64_t csb, tl_scalar beta, void *cv,            \
                   int64_t rsc, int64_t csc) {                                                    \
    const T *a = av, *b = bv;                                                                     \
    T *c = cv;                                                                                    \
    T bp[TL__TINY_NK_MAX * 2 * (W)], bs[TL__TINY_NK_MAX * 2 * (W)];                               \
    int64_t p = 0; /* k >= 1 (_fits): the first row is always filled */                           \
    do {                                                                                          \
      for (int64_t j = 0; j < (W); j++) {                                                         \
        T re = j < n ? b[2 * (p * rsb + j * csb)] : (T)0;                                         \
        T im = j < n ? b[2 * (p * rsb + j * csb) + 1] : (T)0;                                     \
        bp[p * 2 * (W) + 2 * j] = re;                                                             \
        bp[p * 2 * (W) + 2 * j + 1] = im;                                                         \
        bs[p * 2 * (W) + 2 * j] = -im;                                                            \
        bs[p * 2 * (W) + 2 * j + 1] = re;                                                         \
      }                                                                                           \
    } while (++p < k);                                                                            \
    const int unit_alpha = alpha.re == 1.0 && alpha.im == 0.0;                                    \
    const int beta_zero = beta.re == 0.0 && beta.im == 0.0;                                       \
    const T ar = (T)alpha.re, ai = (T)alpha.im, er = (T)beta.re, ei = (T)beta.im;                 \
    for (int64_t r = 0; r < m; r++) {                                                             \
      const T *x = a + 2 * r * rsa;                                                               \
      T acc[2 * (W)];                                                                             \
      for (int q = 0; q < 2 * (W); q++) acc[q] = x[0] * bp[q] + x[1] * bs[q];                     \
      for (p = 1; p < k; p++) {                                                                   \
        const T xr = x[2 * p], xi = x[2 * p + 1];                                                 \
        for (int q = 0; q < 2 * (W); q++)                                                         \
          acc[q] += xr * bp[p * 2 * (W) + q] + xi * bs[p * 2 * (W) + q];                          \
      }                                                                                           \
      T *y = c + 2 * r * rsc;                                                                     \
      for (int64_t j = 0; j < n; j++) {                                                           \
        T re = acc[2 * j], im = acc[2 * j + 1];                                                   \
        T vr = unit_alpha ? re * ar : ar * re - ai * im;                                          \
        T vi = unit_alpha ? im * ar : ar * im + ai * re;                                          \
        T *out = y + 2 * j * csc;                                                                 \
        if (!beta_zero) {                                                                         \
          T cr = out[0], ci = out[1];                                                             \
          vr += er * cr - ei * ci;                                                                \
          vi += er * ci + ei * cr;                                                                \
        }                                                                                         \
        out[0] = vr;                                                                              \
        out[1] = vi;                                                                              \
      }                                                                                           \
    }                                                                                             \
  }

TL__TINY_COMPLEX(tiny_c128_2, double, 2)
TL__TINY_COMPLEX(tiny_c128_4, double, 4)
TL__TINY_COMPLEX(tiny_c128_8, double, 8)
TL__TINY_COMPLEX(tiny_c128_16, double, 16)
TL__TINY_COMPLEX(tiny_c64_2, float, 2)
TL__TINY_COMPLEX(tiny_c64_4, float, 4)
TL__TINY_COMPLEX(tiny_c64_8, float, 8)
TL__TINY_COMPLEX(tiny_c64_16, float, 16)

/* One kernel per dtype and padded width; a row's entries are for n <= 2, 4, 8 and 16 (the real
 * dtypes pad n <= 2 to 4). */
typedef void tiny_kernel(int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                         int64_t rsa, const void *b, int64_t rsb, int64_t csb, tl_scalar beta,
                         void *c, int64_t rsc, int64_t csc);
static tiny_kernel *const tiny_f32[4] = {tiny_f32_4, tiny_f32_4, tiny_f32_8, tiny_f32_16};
static tiny_kernel *const tiny_f64[4] = {tiny_f64_4, tiny_f64_4, tiny_f64_8, tiny_f64_16};
static tiny_kernel *const tiny_c64[4] = {tiny_c64_2, tiny_c64_4, tiny_c64_8, tiny_c64_16};
static tiny_kernel *const tiny_c128[4] = {tiny_c128_2, tiny_c128_4, tiny_c128_8, tiny_c128_16};

void tl__gemm_tiny_nk(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                      const void *a, int64_t rsa, const void *b, int64_t rsb, int64_t csb,
                      tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  tiny_kernel *const *row = dtype == TL_F64    ? tiny_f64
                            : dtype == TL_F32  ? tiny_f32
                            : dtype == TL_C128 ? tiny_c128
                                               : tiny_c64;
  const int width = n <= 2 ? 0 : n <= 4 ? 1 : n <= 8 ? 2 : 3;
  row[width](m, n, k, alpha, a, rsa, b, rsb, csb, beta, c, rsc, csc);
}
