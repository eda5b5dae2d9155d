/* src/kernels/elementwise_core.c: the row kernels of the elementwise routes.
 *
 * One kernel per (operation, dtype), generated from one macro per operation shape so the
 * four dtypes cannot drift apart. Each kernel has a unit-stride branch (which the compiler
 * vectorises: `restrict` holds because routes refuse outputs that overlap inputs), branches
 * for a broadcast (stride-0) input, and a general-stride fallback. Complex products are
 * written out (no __muldc3 call per element); complex quotients use C's own division,
 * which guards against overflow. */
#include "kernels.h"

#include <complex.h>
#include <math.h>

typedef float _Complex tl__c64;
typedef double _Complex tl__c128;

/* Complex values are built with __builtin_complex (GCC, and clang from 12), which stays in
 * vector registers; building them through a union of two reals, as an earlier version did
 * (clang's use of glibc's <complex.h> has no CMPLX), sent every c64 product through general
 * registers and kept the loops scalar. */
static inline tl__c64 make_c64(float re, float im) { return __builtin_complex(re, im); }
static inline tl__c128 make_c128(double re, double im) { return __builtin_complex(re, im); }

/* Per-dtype helpers: multiply, scalar from tl_scalar. */
static inline float mul_f32(float x, float y) { return x * y; }
static inline double mul_f64(double x, double y) { return x * y; }
static inline tl__c64 mul_c64(tl__c64 x, tl__c64 y) {
  float xr = crealf(x), xi = cimagf(x), yr = crealf(y), yi = cimagf(y);
  return make_c64(xr * yr - xi * yi, xr * yi + xi * yr);
}
static inline tl__c128 mul_c128(tl__c128 x, tl__c128 y) {
  double xr = creal(x), xi = cimag(x), yr = creal(y), yi = cimag(y);
  return make_c128(xr * yr - xi * yi, xr * yi + xi * yr);
}
static inline float scal_f32(tl_scalar s) { return (float)s.re; }
static inline double scal_f64(tl_scalar s) { return s.re; }
static inline tl__c64 scal_c64(tl_scalar s) { return make_c64((float)s.re, (float)s.im); }
static inline tl__c128 scal_c128(tl_scalar s) { return make_c128(s.re, s.im); }

/* ---- binary: o = a OP b --------------------------------------------------------------- */
#define TL__BINARY(NAME, T, EXPR)                                                     \
  static void NAME(int64_t n, char *const *p, const int64_t *s, const void *params) { \
    (void)params;                                                                     \
    T *restrict o = (T *)p[0];                                                        \
    const T *restrict a = (const T *)p[1];                                            \
    const T *restrict b = (const T *)p[2];                                            \
    const int64_t so = s[0], sa = s[1], sb = s[2];                                    \
    if (so == 1 && sa == 1 && sb == 1) {                                              \
      for (int64_t i = 0; i < n; i++) {                                               \
        T x = a[i], y = b[i];                                                         \
        o[i] = EXPR;                                                                  \
      }                                                                               \
    } else if (so == 1 && sa == 1 && sb == 0) {                                       \
      const T y = b[0];                                                               \
      for (int64_t i = 0; i < n; i++) {                                               \
        T x = a[i];                                                                   \
        o[i] = EXPR;                                                                  \
      }                                                                               \
    } else if (so == 1 && sa == 0 && sb == 1) {                                       \
      const T x = a[0];                                                               \
      for (int64_t i = 0; i < n; i++) {                                               \
        T y = b[i];                                                                   \
        o[i] = EXPR;                                                                  \
      }                                                                               \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) {                                               \
        T x = a[i * sa], y = b[i * sb];                                               \
        o[i * so] = EXPR;                                                             \
      }                                                                               \
    }                                                                                 \
  }

#define TL__BINARY_ALL(SUFFIX, T)                   \
  TL__BINARY(add_##SUFFIX, T, x + y)                \
  TL__BINARY(sub_##SUFFIX, T, x - y)                \
  TL__BINARY(mul_k_##SUFFIX, T, mul_##SUFFIX(x, y)) \
  TL__BINARY(div_##SUFFIX, T, x / y)

TL__BINARY_ALL(f32, float)
TL__BINARY_ALL(f64, double)
TL__BINARY_ALL(c64, tl__c64)
TL__BINARY(add_c128, tl__c128, x + y)
TL__BINARY(sub_c128, tl__c128, x - y)
TL__BINARY(mul_k_c128_any, tl__c128, mul_c128(x, y))
TL__BINARY(div_c128, tl__c128, x / y)

/* Complex double products of contiguous rows (either input possibly broadcast) take the
 * vector kernels of elementwise_complex.c, which give mul_c128's bits. */
static void mul_k_c128(int64_t n, char *const *p, const int64_t *s, const void *params) {
  const int64_t sa = s[1], sb = s[2];
  if (s[0] == 1 && n >= 4 && (sa == 1 || sb == 1) && (sa | sb) == 1) {
    tl__mul_c128_rows(tl__isa_level(), n, (double *)p[0], (const double *)p[1], sa,
                      (const double *)p[2], sb);
    return;
  }
  mul_k_c128_any(n, p, s, params);
}

tl__row_fn tl__ew_binary_kernel(tl_binary_op op, tl_dtype dtype) {
  static const tl__row_fn table[4][TL_DTYPE_COUNT] = {
      {add_f32, add_f64, add_c64, add_c128},
      {sub_f32, sub_f64, sub_c64, sub_c128},
      {mul_k_f32, mul_k_f64, mul_k_c64, mul_k_c128},
      {div_f32, div_f64, div_c64, div_c128},
  };
  if ((unsigned)op >= 4 || (unsigned)dtype >= TL_DTYPE_COUNT) return NULL;
  return table[op][dtype];
}

/* ---- unary: o = f(x); O may differ from T (abs of complex) ----------------------------- */
#define TL__UNARY(NAME, T, O, EXPR)                                                   \
  static void NAME(int64_t n, char *const *p, const int64_t *s, const void *params) { \
    (void)params;                                                                     \
    O *restrict o = (O *)p[0];                                                        \
    const T *restrict a = (const T *)p[1];                                            \
    const int64_t so = s[0], sa = s[1];                                               \
    if (so == 1 && sa == 1) {                                                         \
      for (int64_t i = 0; i < n; i++) {                                               \
        T x = a[i];                                                                   \
        o[i] = EXPR;                                                                  \
      }                                                                               \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) {                                               \
        T x = a[i * sa];                                                              \
        o[i * so] = EXPR;                                                             \
      }                                                                               \
    }                                                                                 \
  }

TL__UNARY(neg_f32, float, float, -x)
TL__UNARY(neg_f64, double, double, -x)
TL__UNARY(neg_c64, tl__c64, tl__c64, -x)
TL__UNARY(neg_c128, tl__c128, tl__c128, -x)
TL__UNARY(copy_f32, float, float, x)
TL__UNARY(copy_f64, double, double, x)
TL__UNARY(copy_c64, tl__c64, tl__c64, x)
TL__UNARY(copy_c128, tl__c128, tl__c128, x)
TL__UNARY(conj_c64, tl__c64, tl__c64, conjf(x))
TL__UNARY(conj_c128, tl__c128, tl__c128, conj(x))
TL__UNARY(abs_f32, float, float, fabsf(x))
TL__UNARY(abs_f64, double, double, fabs(x))
TL__UNARY(abs_c64, tl__c64, float, cabsf(x))
TL__UNARY(abs_c128, tl__c128, double, cabs(x))
TL__UNARY(exp_f32, float, float, expf(x))
TL__UNARY(exp_f64, double, double, exp(x))
TL__UNARY(exp_c64, tl__c64, tl__c64, cexpf(x))
TL__UNARY(exp_c128, tl__c128, tl__c128, cexp(x))
TL__UNARY(log_f32, float, float, logf(x))
TL__UNARY(log_f64, double, double, log(x))
TL__UNARY(log_c64, tl__c64, tl__c64, clogf(x))
TL__UNARY(log_c128, tl__c128, tl__c128, clog(x))
TL__UNARY(sqrt_f32, float, float, sqrtf(x))
TL__UNARY(sqrt_f64, double, double, sqrt(x))
TL__UNARY(sqrt_c64, tl__c64, tl__c64, csqrtf(x))
TL__UNARY(sqrt_c128, tl__c128, tl__c128, csqrt(x))

tl__row_fn tl__ew_unary_kernel(tl_unary_op op, tl_dtype dtype) {
  static const tl__row_fn table[7][TL_DTYPE_COUNT] = {
      {neg_f32, neg_f64, neg_c64, neg_c128},     {copy_f32, copy_f64, conj_c64, conj_c128},
      {abs_f32, abs_f64, abs_c64, abs_c128},     {exp_f32, exp_f64, exp_c64, exp_c128},
      {log_f32, log_f64, log_c64, log_c128},     {sqrt_f32, sqrt_f64, sqrt_c64, sqrt_c128},
      {copy_f32, copy_f64, copy_c64, copy_c128},
  };
  if ((unsigned)op >= 7 || (unsigned)dtype >= TL_DTYPE_COUNT) return NULL;
  return table[op][dtype];
}

/* ---- scale, axpby, fill ------------------------------------------------------------- */
#define TL__SCALE(SUFFIX, T)                                                                       \
  static void scale_##SUFFIX(int64_t n, char *const *p, const int64_t *s, const void *params) {    \
    const tl__ew_params *prm = (const tl__ew_params *)params;                                      \
    const T alpha = scal_##SUFFIX(prm->alpha);                                                     \
    T *restrict o = (T *)p[0];                                                                     \
    const T *restrict x = (const T *)p[1];                                                         \
    const int64_t so = s[0], sx = s[1];                                                            \
    if (so == 1 && sx == 1) {                                                                      \
      for (int64_t i = 0; i < n; i++) o[i] = mul_##SUFFIX(alpha, x[i]);                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++) o[i * so] = mul_##SUFFIX(alpha, x[i * sx]);                  \
    }                                                                                              \
  }                                                                                                \
  static void axpby_##SUFFIX(int64_t n, char *const *p, const int64_t *s, const void *params) {    \
    const tl__ew_params *prm = (const tl__ew_params *)params;                                      \
    const T alpha = scal_##SUFFIX(prm->alpha), beta = scal_##SUFFIX(prm->beta);                    \
    T *o = (T *)p[0];                                                                              \
    const T *x = (const T *)p[1];                                                                  \
    const T *y = (const T *)p[2];                                                                  \
    const int64_t so = s[0], sx = s[1], sy = s[2];                                                 \
    if (so == 1 && sx == 1 && sy == 1) {                                                           \
      for (int64_t i = 0; i < n; i++) o[i] = mul_##SUFFIX(alpha, x[i]) + mul_##SUFFIX(beta, y[i]); \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i * so] = mul_##SUFFIX(alpha, x[i * sx]) + mul_##SUFFIX(beta, y[i * sy]);                \
    }                                                                                              \
  }                                                                                                \
  static void fill_##SUFFIX(int64_t n, char *const *p, const int64_t *s, const void *params) {     \
    const tl__ew_params *prm = (const tl__ew_params *)params;                                      \
    const T alpha = scal_##SUFFIX(prm->alpha);                                                     \
    T *restrict o = (T *)p[0];                                                                     \
    const int64_t so = s[0];                                                                       \
    if (so == 1) {                                                                                 \
      for (int64_t i = 0; i < n; i++) o[i] = alpha;                                                \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++) o[i * so] = alpha;                                           \
    }                                                                                              \
  }

TL__SCALE(f32, float)
TL__SCALE(f64, double)
TL__SCALE(c64, tl__c64)
TL__SCALE(c128, tl__c128)

tl__row_fn tl__ew_scale_kernel(tl_dtype dtype) {
  static const tl__row_fn table[TL_DTYPE_COUNT] = {scale_f32, scale_f64, scale_c64, scale_c128};
  return (unsigned)dtype < TL_DTYPE_COUNT ? table[dtype] : NULL;
}

tl__row_fn tl__ew_axpby_kernel(tl_dtype dtype, int beta_zero) {
  static const tl__row_fn table[TL_DTYPE_COUNT] = {axpby_f32, axpby_f64, axpby_c64, axpby_c128};
  if ((unsigned)dtype >= TL_DTYPE_COUNT) return NULL;
  /* beta 0: y is not read, so the route passes the plan without y and uses scale. */
  return beta_zero ? tl__ew_scale_kernel(dtype) : table[dtype];
}

tl__row_fn tl__ew_fill_kernel(tl_dtype dtype) {
  static const tl__row_fn table[TL_DTYPE_COUNT] = {fill_f32, fill_f64, fill_c64, fill_c128};
  return (unsigned)dtype < TL_DTYPE_COUNT ? table[dtype] : NULL;
}
