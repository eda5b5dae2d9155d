/* src/kernels/gemm_thin_core.c: the inner loops of the thin GEMM (gemm_thin.c) at each
 * instruction set: the contiguous dot product of every floating dtype, and the axpy pass
 * that adds s_i u_i to a contiguous c for each row u_i of a matrix (the form a vector-matrix
 * product takes when c runs along u's rows, as numpy's C-ordered i,ij->j does).
 *
 * Memory-bound loops: the axpy pass takes four rows per sweep over c, so c is loaded and
 * stored once per four rows instead of once per row (a 4096-wide c of doubles is all of L1),
 * and the AVX2 and AVX-512 paths read whole vectors with masked tails. Where rows are long
 * (TL__AXPY_FAR_BYTES), each AVX-512 sweep also asks for the line TL__AXPY_AHEAD_BYTES ahead in
 * every row it reads: the hardware's stream prefetchers alone kept the eight-row c128 sweep of a
 * 4096 x 4096 matrix from DRAM at about 20 GB/s, where one contiguous run reads at 33 GB/s.
 *
 * Invariant: the arithmetic of one output depends only on the shape and the instruction
 * set, never on where a block of c starts: the axpy pass adds the rows in order, one fused
 * multiply-add per row and element (masked tails do the same operations), and a dot's
 * partial sums combine in a fixed order. So a GEMM split over a team by blocks of c gives
 * the bits of the unsplit call. Pure core: never fails, allocates nothing. */
#include "kernels.h"
/* The most rows one pass of the row updates (tl__thin_axpy) takes. */
#define TL__AXPY_ROWS_MAX 8
/* How far ahead of the sweep each row's line is asked for, and the shortest row (in bytes)
 * for which it is: a shorter row's lines are next to each other in one run the hardware
 * follows. */
#define TL__AXPY_AHEAD_BYTES 2048
#define TL__AXPY_FAR_BYTES 4096

#if TL_X86_KERNELS
#include <immintrin.h>

#include "cmul512.h"
#endif

/* ---- portable C ---------------------------------------------------------------------- */

#define THIN_LANES 8

static double dot_f64_c(int64_t k, const double *x, const double *y) {
  double acc[THIN_LANES] = {0};
  int64_t i = 0;
  for (; i + THIN_LANES <= k; i += THIN_LANES)
    for (int j = 0; j < THIN_LANES; j++) acc[j] += x[i + j] * y[i + j];
  double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < k; i++) s += x[i] * y[i];
  return s;
}

static float dot_f32_c(int64_t k, const float *x, const float *y) {
  float acc[THIN_LANES] = {0};
  int64_t i = 0;
  for (; i + THIN_LANES <= k; i += THIN_LANES)
    for (int j = 0; j < THIN_LANES; j++) acc[j] += x[i + j] * y[i + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < k; i++) s += x[i] * y[i];
  return s;
}

/* Complex dot (no conjugation) over interleaved pairs: products of x with y give the real
 * part (even minus odd), products of x with y's pairs swapped give the imaginary part. */
static void dot_c128_c(int64_t k, const double *x, const double *y, double *re, double *im) {
  double same[THIN_LANES] = {0}, swapped[THIN_LANES] = {0};
  int64_t n = 2 * k, i = 0;
  for (; i + THIN_LANES <= n; i += THIN_LANES)
    for (int j = 0; j < THIN_LANES; j++) {
      same[j] += x[i + j] * y[i + j];
      swapped[j] += x[i + j] * y[i + (j ^ 1)];
    }
  double sr =
      ((same[0] + same[4]) + (same[2] + same[6])) - ((same[1] + same[5]) + (same[3] + same[7]));
  double si = ((swapped[0] + swapped[4]) + (swapped[1] + swapped[5])) +
              ((swapped[2] + swapped[6]) + (swapped[3] + swapped[7]));
  for (; i < n; i += 2) {
    sr += x[i] * y[i] - x[i + 1] * y[i + 1];
    si += x[i] * y[i + 1] + x[i + 1] * y[i];
  }
  *re = sr;
  *im = si;
}

static void dot_c64_c(int64_t k, const float *x, const float *y, double *re, double *im) {
  float same[THIN_LANES] = {0}, swapped[THIN_LANES] = {0};
  int64_t n = 2 * k, i = 0;
  for (; i + THIN_LANES <= n; i += THIN_LANES)
    for (int j = 0; j < THIN_LANES; j++) {
      same[j] += x[i + j] * y[i + j];
      swapped[j] += x[i + j] * y[i + (j ^ 1)];
    }
  float sr =
      ((same[0] + same[4]) + (same[2] + same[6])) - ((same[1] + same[5]) + (same[3] + same[7]));
  float si = ((swapped[0] + swapped[4]) + (swapped[1] + swapped[5])) +
             ((swapped[2] + swapped[6]) + (swapped[3] + swapped[7]));
  for (; i < n; i += 2) {
    sr += x[i] * y[i] - x[i + 1] * y[i + 1];
    si += x[i] * y[i + 1] + x[i + 1] * y[i];
  }
  *re = sr;
  *im = si;
}

/* c[e] += s u[e] over n reals (a complex vector of count elements is n = 2 count reals
 * with s complex: c += sr u + si i u). */
static void axpy_f64_c(int64_t n, double s, const double *u, double *c) {
  for (int64_t e = 0; e < n; e++) c[e] += s * u[e];
}
static void axpy_f32_c(int64_t n, float s, const float *u, float *c) {
  for (int64_t e = 0; e < n; e++) c[e] += s * u[e];
}
static void axpy_c128_c(int64_t n, double sr, double si, const double *u, double *c) {
  for (int64_t e = 0; e < n; e += 2) {
    c[e] = c[e] + sr * u[e] - si * u[e + 1];
    c[e + 1] = c[e + 1] + sr * u[e + 1] + si * u[e];
  }
}
static void axpy_c64_c(int64_t n, float sr, float si, const float *u, float *c) {
  for (int64_t e = 0; e < n; e += 2) {
    c[e] = c[e] + sr * u[e] - si * u[e + 1];
    c[e + 1] = c[e + 1] + sr * u[e + 1] + si * u[e];
  }
}

/* The portable group of complex dots (tl__thin_group_complex's contract). */
#define TL__GROUP_COMPLEX(NAME, T)                                                        \
  static void NAME(int64_t k, const T *x, int64_t sx, int64_t xl, const T *y, int64_t sy, \
                   int64_t yl, double *out) {                                             \
    T sr[TL__DOT_GROUP] = {0}, si[TL__DOT_GROUP] = {0};                                   \
    for (int64_t i = 0; i < k; i++) {                                                     \
      const T *p0 = x + 2 * i * sx, *q0 = y + 2 * i * sy;                                 \
      for (int l = 0; l < TL__DOT_GROUP; l++) {                                           \
        const T *p = p0 + 2 * l * xl, *q = q0 + 2 * l * yl;                               \
        sr[l] += p[0] * q[0] - p[1] * q[1];                                               \
        si[l] += p[0] * q[1] + p[1] * q[0];                                               \
      }                                                                                   \
    }                                                                                     \
    for (int l = 0; l < TL__DOT_GROUP; l++) {                                             \
      out[2 * l] = sr[l];                                                                 \
      out[2 * l + 1] = si[l];                                                             \
    }                                                                                     \
  }
TL__GROUP_COMPLEX(group_c128_c, double)
TL__GROUP_COMPLEX(group_c64_c, float)

#if TL_X86_KERNELS
/* ---- AVX-512F ------------------------------------------------------------------------ */
#define TL_AVX512 __attribute__((target("avx512f")))
#define TL_AVX2 __attribute__((target("avx2,fma")))

#include "thin_dot512.h"

/* Ask for the line TL__AXPY_AHEAD_BYTES past p in each of `rows` rows, row_bytes apart (a
 * hint: nothing faults at an address past the matrix). */
static inline void rows_ahead(const void *p, int rows, int64_t row_bytes) {
  /* as integers: the address may lie past the matrix, where a pointer may not point */
  uintptr_t q = (uintptr_t)p + TL__AXPY_AHEAD_BYTES;
  for (int r = 0; r < rows; r++, q += (uintptr_t)row_bytes)
    _mm_prefetch((const char *)q, _MM_HINT_T0);
}

/* Lanes summed in a fixed order (pairs, then pairs of pairs); for complex sums the even
 * (real) lanes less the odd ones. */
static inline TL_AVX512 double hsum_pd_512(__m512d v) {
  double l[8];
  _mm512_storeu_pd(l, v);
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}
static inline TL_AVX512 double hsum_even_minus_odd_pd_512(__m512d v) {
  double l[8];
  _mm512_storeu_pd(l, v);
  return ((l[0] + l[4]) + (l[2] + l[6])) - ((l[1] + l[5]) + (l[3] + l[7]));
}
static inline TL_AVX512 float hsum_ps_512(__m512 v, int even_minus_odd) {
  float l[16], even = 0.0f, odd = 0.0f;
  _mm512_storeu_ps(l, v);
  for (int j = 0; j < 16; j += 2) even += l[j], odd += l[j + 1];
  return even_minus_odd ? even - odd : even + odd;
}

/* c[0..n) += sum over `rows` rows r of s[r] u_r, rows at u + r * su apart, in row order;
 * cplx: n counts reals of interleaved pairs, s[2r], s[2r+1] the row's complex scale. */
static TL_AVX512 void axpy_rows_pd_512(int64_t n, int rows, const double *s, const double *u,
                                       int64_t su, double *c, int cplx) {
  __m512d sr[TL__AXPY_ROWS_MAX], si[TL__AXPY_ROWS_MAX];
  for (int r = 0; r < rows; r++) {
    sr[r] = _mm512_set1_pd(cplx ? s[2 * r] : s[r]);
    /* (re, im) lanes: c_re -= si u_im, c_im += si u_re */
    si[r] = cplx ? _mm512_set_pd(s[2 * r + 1], -s[2 * r + 1], s[2 * r + 1], -s[2 * r + 1],
                                 s[2 * r + 1], -s[2 * r + 1], s[2 * r + 1], -s[2 * r + 1])
                 : _mm512_setzero_pd();
  }
  int64_t e = 0;
  const int far = n * 8 >= TL__AXPY_FAR_BYTES;
  if (rows == 4 && !cplx) { /* the bulk of a real product: whole vectors, two per step */
    const double *u0 = u, *u1 = u + su, *u2 = u + 2 * su, *u3 = u + 3 * su;
    for (; e + 16 <= n; e += 16) {
      if (far) rows_ahead(u + e, 4, su * 8), rows_ahead(u + e + 8, 4, su * 8);
      __m512d a = _mm512_loadu_pd(c + e), b = _mm512_loadu_pd(c + e + 8);
      a = _mm512_fmadd_pd(sr[0], _mm512_loadu_pd(u0 + e), a);
      b = _mm512_fmadd_pd(sr[0], _mm512_loadu_pd(u0 + e + 8), b);
      a = _mm512_fmadd_pd(sr[1], _mm512_loadu_pd(u1 + e), a);
      b = _mm512_fmadd_pd(sr[1], _mm512_loadu_pd(u1 + e + 8), b);
      a = _mm512_fmadd_pd(sr[2], _mm512_loadu_pd(u2 + e), a);
      b = _mm512_fmadd_pd(sr[2], _mm512_loadu_pd(u2 + e + 8), b);
      a = _mm512_fmadd_pd(sr[3], _mm512_loadu_pd(u3 + e), a);
      b = _mm512_fmadd_pd(sr[3], _mm512_loadu_pd(u3 + e + 8), b);
      _mm512_storeu_pd(c + e, a);
      _mm512_storeu_pd(c + e + 8, b);
    }
  } else if (rows == 8) { /* complex, eight rows: c is read and written half as often */
    for (; e + 8 <= n; e += 8) {
      if (far) rows_ahead(u + e, 8, su * 8);
      __m512d a = _mm512_loadu_pd(c + e);
      for (int r = 0; r < 8; r++) {
        const __m512d v = _mm512_loadu_pd(u + r * su + e);
        a = _mm512_fmadd_pd(si[r], _mm512_permute_pd(v, 0x55), _mm512_fmadd_pd(sr[r], v, a));
      }
      _mm512_storeu_pd(c + e, a);
    }
  } else if (rows == 4) { /* complex: one vector per step, whole vectors */
    const double *u0 = u, *u1 = u + su, *u2 = u + 2 * su, *u3 = u + 3 * su;
    for (; e + 8 <= n; e += 8) {
      if (far) rows_ahead(u + e, 4, su * 8);
      __m512d a = _mm512_loadu_pd(c + e);
      __m512d v0 = _mm512_loadu_pd(u0 + e), v1 = _mm512_loadu_pd(u1 + e);
      __m512d v2 = _mm512_loadu_pd(u2 + e), v3 = _mm512_loadu_pd(u3 + e);
      a = _mm512_fmadd_pd(si[0], _mm512_permute_pd(v0, 0x55), _mm512_fmadd_pd(sr[0], v0, a));
      a = _mm512_fmadd_pd(si[1], _mm512_permute_pd(v1, 0x55), _mm512_fmadd_pd(sr[1], v1, a));
      a = _mm512_fmadd_pd(si[2], _mm512_permute_pd(v2, 0x55), _mm512_fmadd_pd(sr[2], v2, a));
      a = _mm512_fmadd_pd(si[3], _mm512_permute_pd(v3, 0x55), _mm512_fmadd_pd(sr[3], v3, a));
      _mm512_storeu_pd(c + e, a);
    }
  }
  for (; e < n; e += 8) {
    __mmask8 m = mask8(n - e);
    __m512d acc = _mm512_maskz_loadu_pd(m, c + e);
    for (int r = 0; r < rows; r++) {
      __m512d uv = _mm512_maskz_loadu_pd(m, u + r * su + e);
      acc = _mm512_fmadd_pd(sr[r], uv, acc);
      if (cplx) acc = _mm512_fmadd_pd(si[r], _mm512_permute_pd(uv, 0x55), acc);
    }
    _mm512_mask_storeu_pd(c + e, m, acc);
  }
}

static TL_AVX512 void axpy_rows_ps_512(int64_t n, int rows, const float *s, const float *u,
                                       int64_t su, float *c, int cplx) {
  __m512 sr[4], si[4];
  for (int r = 0; r < rows; r++) {
    sr[r] = _mm512_set1_ps(cplx ? s[2 * r] : s[r]);
    float im = cplx ? s[2 * r + 1] : 0.0f;
    si[r] = _mm512_set_ps(im, -im, im, -im, im, -im, im, -im, im, -im, im, -im, im, -im, im, -im);
  }
  int64_t e = 0;
  const int far = n * 4 >= TL__AXPY_FAR_BYTES;
  if (rows == 4) { /* the bulk: whole vectors */
    const float *u0 = u, *u1 = u + su, *u2 = u + 2 * su, *u3 = u + 3 * su;
    for (; e + 16 <= n; e += 16) {
      if (far) rows_ahead(u + e, 4, su * 4);
      __m512 a = _mm512_loadu_ps(c + e);
      __m512 v0 = _mm512_loadu_ps(u0 + e), v1 = _mm512_loadu_ps(u1 + e);
      __m512 v2 = _mm512_loadu_ps(u2 + e), v3 = _mm512_loadu_ps(u3 + e);
      a = _mm512_fmadd_ps(sr[0], v0, a);
      if (cplx) a = _mm512_fmadd_ps(si[0], _mm512_permute_ps(v0, 0xB1), a);
      a = _mm512_fmadd_ps(sr[1], v1, a);
      if (cplx) a = _mm512_fmadd_ps(si[1], _mm512_permute_ps(v1, 0xB1), a);
      a = _mm512_fmadd_ps(sr[2], v2, a);
      if (cplx) a = _mm512_fmadd_ps(si[2], _mm512_permute_ps(v2, 0xB1), a);
      a = _mm512_fmadd_ps(sr[3], v3, a);
      if (cplx) a = _mm512_fmadd_ps(si[3], _mm512_permute_ps(v3, 0xB1), a);
      _mm512_storeu_ps(c + e, a);
    }
  }
  for (; e < n; e += 16) {
    __mmask16 m = mask16(n - e);
    __m512 acc = _mm512_maskz_loadu_ps(m, c + e);
    for (int r = 0; r < rows; r++) {
      __m512 uv = _mm512_maskz_loadu_ps(m, u + r * su + e);
      acc = _mm512_fmadd_ps(sr[r], uv, acc);
      if (cplx) acc = _mm512_fmadd_ps(si[r], _mm512_permute_ps(uv, 0xB1), acc);
    }
    _mm512_mask_storeu_ps(c + e, m, acc);
  }
}

/* ---- AVX2 + FMA ---------------------------------------------------------------------- */

static inline TL_AVX2 __m256i mask4(int64_t left) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
}
static inline TL_AVX2 __m256i mask8x32(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left > 8 ? 8 : left)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline TL_AVX2 void dot_pd_256(int64_t n, const double *x, const double *y, int cplx,
                                      __m256d *same, __m256d *swapped) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d x0 = _mm256_loadu_pd(x + i), x1 = _mm256_loadu_pd(x + i + 4);
    __m256d y0 = _mm256_loadu_pd(y + i), y1 = _mm256_loadu_pd(y + i + 4);
    a0 = _mm256_fmadd_pd(x0, y0, a0);
    a1 = _mm256_fmadd_pd(x1, y1, a1);
    if (cplx) {
      b0 = _mm256_fmadd_pd(x0, _mm256_permute_pd(y0, 0x5), b0);
      b1 = _mm256_fmadd_pd(x1, _mm256_permute_pd(y1, 0x5), b1);
    }
  }
  for (; i < n; i += 4) {
    __m256i m = mask4(n - i);
    __m256d x0 = _mm256_maskload_pd(x + i, m), y0 = _mm256_maskload_pd(y + i, m);
    a0 = _mm256_fmadd_pd(x0, y0, a0);
    if (cplx) b0 = _mm256_fmadd_pd(x0, _mm256_permute_pd(y0, 0x5), b0);
  }
  *same = _mm256_add_pd(a0, a1);
  *swapped = _mm256_add_pd(b0, b1);
}

static inline TL_AVX2 void dot_ps_256(int64_t n, const float *x, const float *y, int cplx,
                                      __m256 *same, __m256 *swapped) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    __m256 y0 = _mm256_loadu_ps(y + i), y1 = _mm256_loadu_ps(y + i + 8);
    a0 = _mm256_fmadd_ps(x0, y0, a0);
    a1 = _mm256_fmadd_ps(x1, y1, a1);
    if (cplx) {
      b0 = _mm256_fmadd_ps(x0, _mm256_permute_ps(y0, 0xB1), b0);
      b1 = _mm256_fmadd_ps(x1, _mm256_permute_ps(y1, 0xB1), b1);
    }
  }
  for (; i < n; i += 8) {
    __m256i m = mask8x32(n - i);
    __m256 x0 = _mm256_maskload_ps(x + i, m), y0 = _mm256_maskload_ps(y + i, m);
    a0 = _mm256_fmadd_ps(x0, y0, a0);
    if (cplx) b0 = _mm256_fmadd_ps(x0, _mm256_permute_ps(y0, 0xB1), b0);
  }
  *same = _mm256_add_ps(a0, a1);
  *swapped = _mm256_add_ps(b0, b1);
}

static inline TL_AVX2 double hsum_pd_256(__m256d v, int even_minus_odd) {
  double l[4];
  _mm256_storeu_pd(l, v);
  return even_minus_odd ? (l[0] + l[2]) - (l[1] + l[3]) : (l[0] + l[2]) + (l[1] + l[3]);
}
static inline TL_AVX2 float hsum_ps_256(__m256 v, int even_minus_odd) {
  float l[8];
  _mm256_storeu_ps(l, v);
  float even = (l[0] + l[4]) + (l[2] + l[6]), odd = (l[1] + l[5]) + (l[3] + l[7]);
  return even_minus_odd ? even - odd : even + odd;
}

static TL_AVX2 void axpy_rows_pd_256(int64_t n, int rows, const double *s, const double *u,
                                     int64_t su, double *c, int cplx) {
  __m256d sr[4], si[4];
  for (int r = 0; r < rows; r++) {
    sr[r] = _mm256_set1_pd(cplx ? s[2 * r] : s[r]);
    double im = cplx ? s[2 * r + 1] : 0.0;
    si[r] = _mm256_set_pd(im, -im, im, -im);
  }
  int64_t e = 0;
  if (rows == 4) { /* the bulk: whole vectors */
    const double *u0 = u, *u1 = u + su, *u2 = u + 2 * su, *u3 = u + 3 * su;
    for (; e + 4 <= n; e += 4) {
      __m256d a = _mm256_loadu_pd(c + e);
      __m256d v0 = _mm256_loadu_pd(u0 + e), v1 = _mm256_loadu_pd(u1 + e);
      __m256d v2 = _mm256_loadu_pd(u2 + e), v3 = _mm256_loadu_pd(u3 + e);
      a = _mm256_fmadd_pd(sr[0], v0, a);
      if (cplx) a = _mm256_fmadd_pd(si[0], _mm256_permute_pd(v0, 0x5), a);
      a = _mm256_fmadd_pd(sr[1], v1, a);
      if (cplx) a = _mm256_fmadd_pd(si[1], _mm256_permute_pd(v1, 0x5), a);
      a = _mm256_fmadd_pd(sr[2], v2, a);
      if (cplx) a = _mm256_fmadd_pd(si[2], _mm256_permute_pd(v2, 0x5), a);
      a = _mm256_fmadd_pd(sr[3], v3, a);
      if (cplx) a = _mm256_fmadd_pd(si[3], _mm256_permute_pd(v3, 0x5), a);
      _mm256_storeu_pd(c + e, a);
    }
  }
  for (; e < n; e += 4) {
    __m256i m = mask4(n - e);
    __m256d acc = _mm256_maskload_pd(c + e, m);
    for (int r = 0; r < rows; r++) {
      __m256d uv = _mm256_maskload_pd(u + r * su + e, m);
      acc = _mm256_fmadd_pd(sr[r], uv, acc);
      if (cplx) acc = _mm256_fmadd_pd(si[r], _mm256_permute_pd(uv, 0x5), acc);
    }
    _mm256_maskstore_pd(c + e, m, acc);
  }
}

static TL_AVX2 void axpy_rows_ps_256(int64_t n, int rows, const float *s, const float *u,
                                     int64_t su, float *c, int cplx) {
  __m256 sr[4], si[4];
  for (int r = 0; r < rows; r++) {
    sr[r] = _mm256_set1_ps(cplx ? s[2 * r] : s[r]);
    float im = cplx ? s[2 * r + 1] : 0.0f;
    si[r] = _mm256_set_ps(im, -im, im, -im, im, -im, im, -im);
  }
  int64_t e = 0;
  if (rows == 4) { /* the bulk: whole vectors */
    const float *u0 = u, *u1 = u + su, *u2 = u + 2 * su, *u3 = u + 3 * su;
    for (; e + 8 <= n; e += 8) {
      __m256 a = _mm256_loadu_ps(c + e);
      __m256 v0 = _mm256_loadu_ps(u0 + e), v1 = _mm256_loadu_ps(u1 + e);
      __m256 v2 = _mm256_loadu_ps(u2 + e), v3 = _mm256_loadu_ps(u3 + e);
      a = _mm256_fmadd_ps(sr[0], v0, a);
      if (cplx) a = _mm256_fmadd_ps(si[0], _mm256_permute_ps(v0, 0xB1), a);
      a = _mm256_fmadd_ps(sr[1], v1, a);
      if (cplx) a = _mm256_fmadd_ps(si[1], _mm256_permute_ps(v1, 0xB1), a);
      a = _mm256_fmadd_ps(sr[2], v2, a);
      if (cplx) a = _mm256_fmadd_ps(si[2], _mm256_permute_ps(v2, 0xB1), a);
      a = _mm256_fmadd_ps(sr[3], v3, a);
      if (cplx) a = _mm256_fmadd_ps(si[3], _mm256_permute_ps(v3, 0xB1), a);
      _mm256_storeu_ps(c + e, a);
    }
  }
  for (; e < n; e += 8) {
    __m256i m = mask8x32(n - e);
    __m256 acc = _mm256_maskload_ps(c + e, m);
    for (int r = 0; r < rows; r++) {
      __m256 uv = _mm256_maskload_ps(u + r * su + e, m);
      acc = _mm256_fmadd_ps(sr[r], uv, acc);
      if (cplx) acc = _mm256_fmadd_ps(si[r], _mm256_permute_ps(uv, 0xB1), acc);
    }
    _mm256_maskstore_ps(c + e, m, acc);
  }
}

static TL_AVX512 void thin_dot_512(tl_dtype dtype, int64_t k, const void *x, const void *y,
                                   int ahead, double *re, double *im) {
  int cplx = tl_dtype_is_complex(dtype);
  int64_t n = cplx ? 2 * k : k;
  if (dtype == TL_F64 || dtype == TL_C128) {
    __m512d same, swapped;
    dot_pd_512(n, x, y, cplx, ahead, &same, &swapped);
    *re = cplx ? hsum_even_minus_odd_pd_512(same) : hsum_pd_512(same);
    if (cplx) *im = hsum_pd_512(swapped);
    return;
  }
  __m512 same, swapped;
  dot_ps_512(n, x, y, cplx, ahead, &same, &swapped);
  *re = hsum_ps_512(same, cplx);
  if (cplx) *im = hsum_ps_512(swapped, 0);
}

/* Four real dots side by side, dot r over x + r * xs and y + r * ys: each with the
 * additions dot_ps_512 / dot_pd_512 make for it alone (the same bits). One dot of a few
 * hundred elements waits on its accumulators' chains and its lanes' sum; four keep the
 * core busy. Named registers: arrays of them went through the stack. */
#define TL__DOT4_512(NAME, T, V, STEP, MT, MASK, LOADU, MASKZ_LOADU, FMADD, ADD, ZERO, HSUM) \
  static TL_AVX512 void NAME(int64_t n, const T *x, int64_t xs, const T *y, int64_t ys,      \
                             double *out) {                                                  \
    const T *x0 = x, *x1 = x + xs, *x2 = x + 2 * xs, *x3 = x + 3 * xs;                       \
    const T *y0 = y, *y1 = y + ys, *y2 = y + 2 * ys, *y3 = y + 3 * ys;                       \
    V p0 = ZERO(), q0 = p0, p1 = p0, q1 = p0, p2 = p0, q2 = p0, p3 = p0, q3 = p0;            \
    int64_t i = 0;                                                                           \
    for (; i + 2 * (STEP) <= n; i += 2 * (STEP)) {                                           \
      p0 = FMADD(LOADU(x0 + i), LOADU(y0 + i), p0);                                          \
      q0 = FMADD(LOADU(x0 + i + (STEP)), LOADU(y0 + i + (STEP)), q0);                        \
      p1 = FMADD(LOADU(x1 + i), LOADU(y1 + i), p1);                                          \
      q1 = FMADD(LOADU(x1 + i + (STEP)), LOADU(y1 + i + (STEP)), q1);                        \
      p2 = FMADD(LOADU(x2 + i), LOADU(y2 + i), p2);                                          \
      q2 = FMADD(LOADU(x2 + i + (STEP)), LOADU(y2 + i + (STEP)), q2);                        \
      p3 = FMADD(LOADU(x3 + i), LOADU(y3 + i), p3);                                          \
      q3 = FMADD(LOADU(x3 + i + (STEP)), LOADU(y3 + i + (STEP)), q3);                        \
    }                                                                                        \
    for (; i < n; i += (STEP)) {                                                             \
      const MT m = MASK(n - i);                                                              \
      p0 = FMADD(MASKZ_LOADU(m, x0 + i), MASKZ_LOADU(m, y0 + i), p0);                        \
      p1 = FMADD(MASKZ_LOADU(m, x1 + i), MASKZ_LOADU(m, y1 + i), p1);                        \
      p2 = FMADD(MASKZ_LOADU(m, x2 + i), MASKZ_LOADU(m, y2 + i), p2);                        \
      p3 = FMADD(MASKZ_LOADU(m, x3 + i), MASKZ_LOADU(m, y3 + i), p3);                        \
    }                                                                                        \
    out[0] = HSUM(ADD(p0, q0)), out[1] = HSUM(ADD(p1, q1));                                  \
    out[2] = HSUM(ADD(p2, q2)), out[3] = HSUM(ADD(p3, q3));                                  \
  }
#define TL__HSUM_PS_REAL(v) hsum_ps_512((v), 0)
TL__DOT4_512(dot4_ps_512, float, __m512, 16, __mmask16, mask16, _mm512_loadu_ps,
             _mm512_maskz_loadu_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_setzero_ps,
             TL__HSUM_PS_REAL)
TL__DOT4_512(dot4_pd_512, double, __m512d, 8, __mmask8, mask8, _mm512_loadu_pd,
             _mm512_maskz_loadu_pd, _mm512_fmadd_pd, _mm512_add_pd, _mm512_setzero_pd, hsum_pd_512)

static TL_AVX2 void thin_dot_256(tl_dtype dtype, int64_t k, const void *x, const void *y,
                                 double *re, double *im) {
  int cplx = tl_dtype_is_complex(dtype);
  int64_t n = cplx ? 2 * k : k;
  if (dtype == TL_F64 || dtype == TL_C128) {
    __m256d same, swapped;
    dot_pd_256(n, x, y, cplx, &same, &swapped);
    *re = hsum_pd_256(same, cplx);
    if (cplx) *im = hsum_pd_256(swapped, 0);
    return;
  }
  __m256 same, swapped;
  dot_ps_256(n, x, y, cplx, &same, &swapped);
  *re = hsum_ps_256(same, cplx);
  if (cplx) *im = hsum_ps_256(swapped, 0);
}

/* A group's lanes of one operand at one k: a plain load where the lanes are adjacent (lane
 * stride 1), else a gather by `idx` (the lanes' offsets in 8-byte units). */
static inline TL_AVX512 __m512d group_lanes(const double *p, int64_t lane, __m512i idx) {
  return lane == 1 ? _mm512_loadu_pd(p) : _mm512_i64gather_pd(idx, p, 8);
}

/* The gather offsets (8-byte units) of a register's lanes: `units` 8-byte units an element
 * (2: a complex double fills two lanes), elements `lane` elements apart. */
static inline TL_AVX512 __m512i group_index(int64_t lane, int units) {
  int64_t at[8];
  for (int u = 0; u < 8; u++) at[u] = (u / units) * lane * units + u % units;
  return _mm512_loadu_si512((const void *)at);
}

/* Lanes 0-3 and 4-7 in two registers, each lane's sum one chain of additions in order. */
static TL_AVX512 void group_c128_512(int64_t k, const double *x, int64_t sx, int64_t xl,
                                     const double *y, int64_t sy, int64_t yl, double *out) {
  const __m512i xi = group_index(xl, 2), yi = group_index(yl, 2);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < k; i++) {
    const double *p = x + 2 * i * sx, *q = y + 2 * i * sy;
    lo = _mm512_add_pd(lo, tl__cmul_pd512(group_lanes(p, xl, xi), group_lanes(q, yl, yi)));
    hi = _mm512_add_pd(
        hi, tl__cmul_pd512(group_lanes(p + 8 * xl, xl, xi), group_lanes(q + 8 * yl, yl, yi)));
  }
  _mm512_storeu_pd(out, lo);
  _mm512_storeu_pd(out + 8, hi);
}

/* Eight complex floats in one register, each handled as one 8-byte unit when gathered. */
static TL_AVX512 void group_c64_512(int64_t k, const float *x, int64_t sx, int64_t xl,
                                    const float *y, int64_t sy, int64_t yl, double *out) {
  const __m512i xi = group_index(xl, 1), yi = group_index(yl, 1);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i++) {
    const double *p = (const double *)(const void *)(x + 2 * i * sx);
    const double *q = (const double *)(const void *)(y + 2 * i * sy);
    __m512 a = _mm512_castpd_ps(group_lanes(p, xl, xi)),
           b = _mm512_castpd_ps(group_lanes(q, yl, yi));
    acc = _mm512_add_ps(acc, tl__cmul_ps512(a, b));
  }
  float parts[2 * TL__DOT_GROUP];
  _mm512_storeu_ps(parts, acc);
  for (int l = 0; l < 2 * TL__DOT_GROUP; l++) out[l] = parts[l];
}
#endif /* TL_X86_KERNELS */

/* ---- dispatch ------------------------------------------------------------------------ */

int tl__gemm_thin_isa(void) { return TL_X86_KERNELS ? tl__isa_level() : TL__ISA_PORTABLE; }

void tl__thin_dot4_real(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t xs,
                        const void *y, int64_t ys, double *out) {
#if TL_X86_KERNELS
  if (isa >= TL__ISA_AVX512) {
    if (dtype == TL_F32)
      dot4_ps_512(k, x, xs, y, ys, out);
    else
      dot4_pd_512(k, x, xs, y, ys, out);
    return;
  }
#endif
  const int64_t es = (int64_t)tl_dtype_size(dtype);
  for (int r = 0; r < 4; r++) {
    double im;
    tl__thin_dot(isa, dtype, k, (const char *)x + r * xs * es, (const char *)y + r * ys * es,
                 &out[r], &im);
  }
}

static void thin_dot_at(int isa, int ahead, tl_dtype dtype, int64_t k, const void *x, const void *y,
                        double *re, double *im) {
  *im = 0.0;
#if TL_X86_KERNELS
  if (isa >= TL__ISA_AVX512) {
    thin_dot_512(dtype, k, x, y, ahead, re, im);
    return;
  }
  if (isa >= TL__ISA_AVX2) {
    thin_dot_256(dtype, k, x, y, re, im);
    return;
  }
#else
  (void)isa, (void)ahead;
#endif
  switch (dtype) {
    case TL_F64:
      *re = dot_f64_c(k, x, y);
      return;
    case TL_F32:
      *re = dot_f32_c(k, x, y);
      return;
    case TL_C128:
      dot_c128_c(k, x, y, re, im);
      return;
    default:
      dot_c64_c(k, x, y, re, im);
      return;
  }
}

void tl__thin_dot(int isa, tl_dtype dtype, int64_t k, const void *x, const void *y, double *re,
                  double *im) {
  thin_dot_at(isa, 0, dtype, k, x, y, re, im);
}

void tl__thin_dot_stream(int isa, tl_dtype dtype, int64_t k, const void *x, const void *y,
                         double *re, double *im) {
  thin_dot_at(isa, 1, dtype, k, x, y, re, im);
}

/* Up to four rows at a time: their scales (alpha v_i, complex as pairs) in the dtype. */
void tl__thin_axpy(int isa, tl_dtype dtype, int64_t count, int64_t k, tl_scalar alpha,
                   const void *u, int64_t su_k, const void *v, int64_t sv_k, void *c) {
  const int cplx = tl_dtype_is_complex(dtype);
  const int single = dtype == TL_F32 || dtype == TL_C64;
  const int64_t n = cplx ? 2 * count : count, per = cplx ? 2 : 1;
  /* complex doubles at AVX-512 take eight rows a pass (TL__AXPY_ROWS_MAX), the rest four */
  const int group = TL_X86_KERNELS && isa >= TL__ISA_AVX512 && dtype == TL_C128 ? 8 : 4;
  for (int64_t i = 0; i < k; i += group) {
    int rows = k - i < group ? (int)(k - i) : group;
    double sd[2 * TL__AXPY_ROWS_MAX];
    float sf[2 * TL__AXPY_ROWS_MAX];
    for (int r = 0; r < rows; r++) {
      int64_t at = (i + r) * sv_k * per;
      double xr = single ? (double)((const float *)v)[at] : ((const double *)v)[at];
      double xi = !cplx    ? 0.0
                  : single ? (double)((const float *)v)[at + 1]
                           : ((const double *)v)[at + 1];
      /* a real alpha scales each part alone: an infinite part of v stays infinite */
      double re = alpha.im == 0.0 ? alpha.re * xr : alpha.re * xr - alpha.im * xi;
      double im = alpha.im == 0.0 ? alpha.re * xi : alpha.re * xi + alpha.im * xr;
      sd[per * r] = re;
      sf[per * r] = (float)re;
      if (cplx) sd[2 * r + 1] = im, sf[2 * r + 1] = (float)im;
    }
    const int64_t row_step = su_k * per; /* reals between rows */
#if TL_X86_KERNELS
    if (isa >= TL__ISA_AVX512) {
      if (single)
        axpy_rows_ps_512(n, rows, sf, (const float *)u + i * row_step, row_step, c, cplx);
      else
        axpy_rows_pd_512(n, rows, sd, (const double *)u + i * row_step, row_step, c, cplx);
      continue;
    }
    if (isa >= TL__ISA_AVX2) {
      if (single)
        axpy_rows_ps_256(n, rows, sf, (const float *)u + i * row_step, row_step, c, cplx);
      else
        axpy_rows_pd_256(n, rows, sd, (const double *)u + i * row_step, row_step, c, cplx);
      continue;
    }
#else
    (void)isa;
#endif
    for (int r = 0; r < rows; r++) {
      int64_t at = (i + r) * row_step;
      if (dtype == TL_F64) axpy_f64_c(n, sd[r], (const double *)u + at, c);
      if (dtype == TL_F32) axpy_f32_c(n, sf[r], (const float *)u + at, c);
      if (dtype == TL_C128) axpy_c128_c(n, sd[2 * r], sd[2 * r + 1], (const double *)u + at, c);
      if (dtype == TL_C64) axpy_c64_c(n, sf[2 * r], sf[2 * r + 1], (const float *)u + at, c);
    }
  }
}

void tl__thin_group_complex(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t sx,
                            int64_t xl, const void *y, int64_t sy, int64_t yl, double *out) {
#if TL_X86_KERNELS
  if (isa >= TL__ISA_AVX512) {
    if (dtype == TL_C128)
      group_c128_512(k, x, sx, xl, y, sy, yl, out);
    else
      group_c64_512(k, x, sx, xl, y, sy, yl, out);
    return;
  }
#else
  (void)isa;
#endif
  if (dtype == TL_C128)
    group_c128_c(k, x, sx, xl, y, sy, yl, out);
  else
    group_c64_c(k, x, sx, xl, y, sy, yl, out);
}
