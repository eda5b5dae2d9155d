/* src/kernels/gemm_thin.c: GEMM whose C is a single row or a single column (m == 1 or
 * n == 1): dot products and matrix-vector products, as einsum's batched dots (bi,bi->b),
 * full contractions (ij,ij->) and vector-matrix steps produce them.
 *
 * A provider's GEMM packs A and B into micro-panels of its register tile (16 x 14 doubles
 * in BLIS's AVX-512 kernel) and pads the thin side up to that tile, so a dot product did
 * about two hundred times its work. Here each element of C is one dot product over k, or,
 * when the vector that varies with the element is contiguous along C, C is built by
 * axpy-like passes over k. Both are memory-bound loops that read A and B once.
 *
 * Invariant: with beta == 0, C is written without being read (a NaN there does not
 * propagate), as the provider does. Summation order is fixed by the shape and strides, so
 * a call gives the same bits on any thread and in any batch. */
#include <string.h>

#include "kernels.h"
#include "base/base.h"

/* Strided dots (the contiguous ones are gemm_thin_core.c's): four independent partial sums,
 * combined in a fixed order. */
static double dot_f64(int64_t k, const double *x, int64_t sx, const double *y, int64_t sy) {
  double acc[4] = {0};
  int64_t i = 0;
  for (; i + 4 <= k; i += 4)
    for (int j = 0; j < 4; j++) acc[j] += x[(i + j) * sx] * y[(i + j) * sy];
  double s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
  for (; i < k; i++) s += x[i * sx] * y[i * sy];
  return s;
}

static float dot_f32(int64_t k, const float *x, int64_t sx, const float *y, int64_t sy) {
  float acc[4] = {0};
  int64_t i = 0;
  for (; i + 4 <= k; i += 4)
    for (int j = 0; j < 4; j++) acc[j] += x[(i + j) * sx] * y[(i + j) * sy];
  float s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
  for (; i < k; i++) s += x[i * sx] * y[i * sy];
  return s;
}

/* Complex dot (no conjugation) of interleaved (re, im) pairs; strides count elements. One
 * sum of each part in order, each term numpy's product (re = ar br - ai bi, im = ar bi +
 * ai br): a strided dot is bound by its loads, not by the chain of additions. */
static void dot_c128(int64_t k, const double *x, int64_t sx, const double *y, int64_t sy,
                     double *re, double *im) {
  double sr = 0.0, si = 0.0;
  for (int64_t i = 0; i < k; i++) {
    const double *p = x + 2 * i * sx, *q = y + 2 * i * sy;
    sr += p[0] * q[0] - p[1] * q[1];
    si += p[0] * q[1] + p[1] * q[0];
  }
  *re = sr;
  *im = si;
}

static void dot_c64(int64_t k, const float *x, int64_t sx, const float *y, int64_t sy, double *re,
                    double *im) {
  float sr = 0.0f, si = 0.0f;
  for (int64_t i = 0; i < k; i++) {
    const float *p = x + 2 * i * sx, *q = y + 2 * i * sy;
    sr += p[0] * q[0] - p[1] * q[1];
    si += p[0] * q[1] + p[1] * q[0];
  }
  *re = sr;
  *im = si;
}

/* Dots side by side: TL__DOT_GROUP entries at once, entry l's operands at x + l * xl and
 * y + l * yl, k outermost. For a batch of dots whose operand walks a column (einsum's
 * ab,ba->a, b's stride along k a whole row) each k then reads a short run across the
 * entries where one dot at a time read one element of a distant line. Entry l's sum keeps
 * its single dot's order (dot_f64 and dot_f32: four partials by k mod 4, combined alike, the
 * tail in order; the complex dots: one sum of each part in order, tl__thin_group_complex in
 * gemm_thin_core.c), so it has the bits of that dot. */
#define TL__GROUP_REAL(NAME, T)                                                           \
  static void NAME(int64_t k, const T *x, int64_t sx, int64_t xl, const T *y, int64_t sy, \
                   int64_t yl, double *out) {                                             \
    T acc[4][TL__DOT_GROUP] = {{0}};                                                      \
    int64_t i = 0;                                                                        \
    for (; i + 4 <= k; i += 4) {                                                          \
      for (int j = 0; j < 4; j++) {                                                       \
        const T *p = x + (i + j) * sx, *q = y + (i + j) * sy;                             \
        for (int l = 0; l < TL__DOT_GROUP; l++) acc[j][l] += p[l * xl] * q[l * yl];       \
      }                                                                                   \
    }                                                                                     \
    for (int l = 0; l < TL__DOT_GROUP; l++) {                                             \
      T s = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);                            \
      for (int64_t r = i; r < k; r++) s += x[r * sx + l * xl] * y[r * sy + l * yl];       \
      out[l] = s;                                                                         \
    }                                                                                     \
  }
TL__GROUP_REAL(group_f64, double)
TL__GROUP_REAL(group_f32, float)

/* The thin problem in one form: `count` outputs c[e * sc]; output e is the dot over k of
 * u + e * su_e (stride su_k along k) with v (stride sv_k). */
typedef struct thin {
  tl_dtype dtype;
  int64_t count, k;
  const char *u, *v;
  int64_t su_e, su_k, sv_k;
  char *c;
  int64_t sc;
  tl_scalar alpha, beta;
} thin;

static void store_real(const thin *t, int64_t e, double value) {
  int beta_zero = t->beta.re == 0.0;
  if (t->dtype == TL_F64) {
    double *c = (double *)t->c + e * t->sc;
    *c = beta_zero ? t->alpha.re * value : t->alpha.re * value + t->beta.re * *c;
  } else {
    float *c = (float *)t->c + e * t->sc;
    *c = (float)(beta_zero ? t->alpha.re * value : t->alpha.re * value + t->beta.re * (double)*c);
  }
}

/* s (re, im) into *out: a real s (s.im == 0) scales each part alone, so an infinite part
 * stays infinite (a full complex product would add inf * 0 = NaN to the other part, where a
 * product without the scale, as numpy forms it, has none). */
static void scale_complex(tl_scalar s, double re, double im, double *out) {
  if (s.im == 0.0) {
    out[0] = s.re * re;
    out[1] = s.re * im;
  } else {
    out[0] = s.re * re - s.im * im;
    out[1] = s.re * im + s.im * re;
  }
}

static void store_complex(const thin *t, int64_t e, double re, double im) {
  int beta_zero = t->beta.re == 0.0 && t->beta.im == 0.0;
  double out[2], old[2];
  scale_complex(t->alpha, re, im, out);
  if (t->dtype == TL_C128) {
    double *c = (double *)t->c + 2 * e * t->sc;
    if (!beta_zero) {
      scale_complex(t->beta, c[0], c[1], old);
      out[0] += old[0];
      out[1] += old[1];
    }
    c[0] = out[0];
    c[1] = out[1];
  } else {
    float *c = (float *)t->c + 2 * e * t->sc;
    if (!beta_zero) {
      scale_complex(t->beta, (double)c[0], (double)c[1], old);
      out[0] += old[0];
      out[1] += old[1];
    }
    c[0] = (float)out[0];
    c[1] = (float)out[1];
  }
}

/* `count` results into c, sc elements apart: result l is re[l * vs] (and im[l * vs] for a
 * complex dtype), stored as store_real / store_complex store it. With alpha 1 and beta 0
 * that is the value as it is (1 * v == v, and c is not read), written without their
 * per-element scaling: storing one by one was most of a short batched dot. */
static void store_group(thin *t, char *c, int64_t count, int64_t sc, const double *re,
                        const double *im, int64_t vs) {
  if (t->alpha.re == 1.0 && t->alpha.im == 0.0 && t->beta.re == 0.0 && t->beta.im == 0.0) {
    switch (t->dtype) {
      case TL_F64:
        for (int64_t l = 0; l < count; l++) ((double *)(void *)c)[l * sc] = re[l * vs];
        return;
      case TL_F32:
        for (int64_t l = 0; l < count; l++) ((float *)(void *)c)[l * sc] = (float)re[l * vs];
        return;
      case TL_C128:
        for (int64_t l = 0; l < count; l++) {
          double *d = (double *)(void *)c + 2 * l * sc;
          d[0] = re[l * vs], d[1] = im[l * vs];
        }
        return;
      default:
        for (int64_t l = 0; l < count; l++) {
          float *f = (float *)(void *)c + 2 * l * sc;
          f[0] = (float)re[l * vs], f[1] = (float)im[l * vs];
        }
        return;
    }
  }
  const int64_t es = (int64_t)tl_dtype_size(t->dtype);
  for (int64_t l = 0; l < count; l++) {
    t->c = c + l * sc * es;
    if (tl_dtype_is_complex(t->dtype))
      store_complex(t, 0, re[l * vs], im[l * vs]);
    else
      store_real(t, 0, re[l * vs]);
  }
}

/* Dots whose operands stream from beyond the second-level cache: more than this many bytes
 * read in all, rows of at least TL__DOT_STREAM_ROW bytes. There the side-by-side forms
 * below (four real dots, or a group of short ones: 8 to 32 rows read at once) lost to
 * numpy's row-by-row reads on the project's Zen 5 VM (bi,bi->b f64 at 4096 x 256 and f32
 * at 16384 x 256: 1.3x numpy's time), and each dot alone, with the stream prefetch of
 * tl__thin_dot_stream, kept pace. Shorter rows keep the groups: per-dot setup dominates. */
#define TL__DOT_STREAM_BYTES ((int64_t)2 << 20)
#define TL__DOT_STREAM_ROW ((int64_t)1024)

/* `count` contiguous dots along one axis: dot l of the k elements at x + l xs and y + l ys
 * (strides in elements, ys 0 for one shared vector), stored at c + l sc as store_group
 * stores them; `total`: the dots of the whole call, of which these are a part (the choice
 * above). Streaming dots go one at a time, short ones a group of entries a call, real ones
 * four at a time, the rest one by one; each keeps its single tl__thin_dot's bits, so the
 * grouping changes nothing. */
static void dots_along(thin *t, int isa, int64_t count, const char *x, int64_t xs, const char *y,
                       int64_t ys, char *c, int64_t sc, int64_t total) {
  const int64_t es = (int64_t)tl_dtype_size(t->dtype);
  const int cplx = tl_dtype_is_complex(t->dtype);
  const int64_t row = t->k * es;
  const int far = tl__i64_mul3_sat(total, row, ys ? 2 : 1) > TL__DOT_STREAM_BYTES;
  const int stream = row >= TL__DOT_STREAM_ROW && far;
  const int64_t shorts = stream ? 0 : tl__thin_dots_short_width(isa, t->dtype, t->k);
  for (int64_t e = 0; e < count;) {
    const char *xe = x + e * xs * es, *ye = y + e * ys * es;
    char *ce = c + e * sc * es;
    if (stream) {
      double re = 0.0, im = 0.0;
      tl__thin_dot_stream(isa, t->dtype, t->k, xe, ye, &re, &im);
      store_group(t, ce, 1, sc, &re, &im, 1);
      e++;
    } else if (shorts && e + shorts <= count) {
      double re[16], im[16];
      tl__thin_dots_short(isa, t->dtype, t->k, xe, xs, ye, ys, far, re, im);
      store_group(t, ce, shorts, sc, re, im, 1);
      e += shorts;
    } else if (!cplx && e + 4 <= count) {
      double sums[4];
      tl__thin_dot4_real(isa, t->dtype, t->k, xe, xs, ye, ys, sums);
      /* real sums: im is never read (sums again, not NULL, which gcc -O3 would flag) */
      store_group(t, ce, 4, sc, sums, sums, 1);
      e += 4;
    } else {
      double re = 0.0, im = 0.0;
      tl__thin_dot(isa, t->dtype, t->k, xe, ye, &re, &im);
      store_group(t, ce, 1, sc, &re, &im, 1);
      e++;
    }
  }
}

/* The rows of u dotted with the one v, as the batched dots group them: a batched
 * matrix-vector product (einsum ijk,ik->ij, rows of 50 doubles) spent a quarter of its time
 * on one-by-one calls and stores. */
static void thin_dots_contiguous(const thin *t) {
  thin w = *t;
  dots_along(&w, tl__gemm_thin_isa(), t->count, t->u, t->su_e, t->v, 0, t->c, t->sc, t->count);
}

static void thin_dots(const thin *t) {
  size_t es = tl_dtype_size(t->dtype);
  if (t->k == 1 || (t->su_k == 1 && t->sv_k == 1)) {
    thin_dots_contiguous(t);
    return;
  }
  for (int64_t e = 0; e < t->count; e++) {
    const char *u = t->u + (size_t)(e * t->su_e) * es;
    double re = 0.0, im = 0.0;
    switch (t->dtype) {
      case TL_F64:
        store_real(t, e, dot_f64(t->k, (const double *)u, t->su_k, (const double *)t->v, t->sv_k));
        break;
      case TL_F32:
        store_real(t, e, dot_f32(t->k, (const float *)u, t->su_k, (const float *)t->v, t->sv_k));
        break;
      case TL_C128:
        dot_c128(t->k, (const double *)u, t->su_k, (const double *)t->v, t->sv_k, &re, &im);
        store_complex(t, e, re, im);
        break;
      default:
        dot_c64(t->k, (const float *)u, t->su_k, (const float *)t->v, t->sv_k, &re, &im);
        store_complex(t, e, re, im);
        break;
    }
  }
}

/* Outputs contiguous along the elements of u (su_e == 1, sc == 1): c = beta c, then axpy
 * passes over k add (alpha v_k) u_k, so u is read row after row in memory order, as a BLAS
 * gemv does (gemm_thin_core.c, four rows per pass). Each output's sum runs over k in order. */
static void thin_axpy(const thin *t) {
  const int64_t count = t->count;
  if (t->beta.re == 0.0 && t->beta.im == 0.0) {
    /* all-zero bits are +0.0 in every dtype (element by element through a branch, the
     * clearing was most of a short product's time) */
    memset(t->c, 0, (size_t)count * tl_dtype_size(t->dtype));
  } else {
    switch (t->dtype) {
      case TL_F64: {
        double *c = (double *)t->c;
        for (int64_t e = 0; e < count; e++) c[e] = t->beta.re * c[e];
        break;
      }
      case TL_F32: {
        float *c = (float *)t->c;
        for (int64_t e = 0; e < count; e++) c[e] = (float)(t->beta.re * c[e]);
        break;
      }
      case TL_C128: {
        double *c = (double *)t->c, out[2];
        for (int64_t e = 0; e < count; e++) {
          scale_complex(t->beta, c[2 * e], c[2 * e + 1], out);
          c[2 * e] = out[0];
          c[2 * e + 1] = out[1];
        }
        break;
      }
      default: {
        float *c = (float *)t->c;
        double out[2];
        for (int64_t e = 0; e < count; e++) {
          scale_complex(t->beta, c[2 * e], c[2 * e + 1], out);
          c[2 * e] = (float)out[0];
          c[2 * e + 1] = (float)out[1];
        }
        break;
      }
    }
  }
  tl__thin_axpy(tl__gemm_thin_isa(), t->dtype, count, t->k, t->alpha, t->u, t->su_k, t->v, t->sv_k,
                t->c);
}

int tl__gemm_thin(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                  int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb, tl_scalar beta,
                  void *c, int64_t rsc, int64_t csc) {
  if ((m != 1 && n != 1) || k <= 0) return 0;
  if (dtype != TL_F64 && dtype != TL_F32 && dtype != TL_C128 && dtype != TL_C64) return 0;
  thin t = {dtype, 0, k, NULL, NULL, 0, 0, 0, (char *)c, 0, alpha, beta};
  if (n == 1) { /* c(i) = sum_k A(i, k) b(k): u = A's rows, v = b */
    t.count = m;
    t.u = a;
    t.su_e = rsa;
    t.su_k = csa;
    t.v = b;
    t.sv_k = rsb;
    t.sc = rsc;
  } else { /* c(j) = sum_k a(k) B(k, j): u = B's columns, v = a */
    t.count = n;
    t.u = b;
    t.su_e = csb;
    t.su_k = rsb;
    t.v = a;
    t.sv_k = csa;
    t.sc = csc;
  }
  if (t.count > 1 && t.su_e == 1 && t.sc == 1 && t.su_k != 1)
    thin_axpy(&t);
  else
    thin_dots(&t);
  return 1;
}

int tl__gemm_thin_dots_fit(const tl__gemm_batch *g) {
  if (g->m != 1 || g->n != 1 || g->k <= 0) return 0;
  return g->dtype == TL_F64 || g->dtype == TL_F32 || g->dtype == TL_C128 || g->dtype == TL_C64;
}

/* Whether g's dots go in groups (group_*): strided, and some operand walks k with a
 * stride of at least a group while it steps at most one element from entry to entry along
 * the first batch axis, so the group's k-th elements lie together. */
static int dots_in_groups(const tl__gemm_batch *g) {
  if (g->batch_rank < 1 || g->batch_shape[0] < TL__DOT_GROUP || g->k < 2) return 0;
  if (g->csa == 1 && g->rsb == 1) return 0;
  const int64_t ks[2] = {g->csa, g->rsb};
  for (int o = 0; o < 2; o++) {
    int64_t step = g->batch_strides[o][0], walk = ks[o];
    if ((step >= -1 && step <= 1) && (walk >= TL__DOT_GROUP || walk <= -TL__DOT_GROUP)) return 1;
  }
  return 0;
}

/* One group: entries e .. e + TL__DOT_GROUP - 1 along the first batch axis, from offsets
 * oa, ob, oc (elements). */
static void dots_group(const tl__gemm_batch *g, thin *t, int64_t oa, int64_t ob, int64_t oc) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  const int64_t al = g->batch_strides[0][0], bl = g->batch_strides[1][0];
  double sums[2 * TL__DOT_GROUP];
  const char *a = g->a + oa * es, *b = g->b + ob * es;
  switch (g->dtype) {
    case TL_F64:
      group_f64(g->k, (const double *)a, g->csa, al, (const double *)b, g->rsb, bl, sums);
      break;
    case TL_F32:
      group_f32(g->k, (const float *)a, g->csa, al, (const float *)b, g->rsb, bl, sums);
      break;
    default:
      tl__thin_group_complex(tl__gemm_thin_isa(), g->dtype, g->k, a, g->csa, al, b, g->rsb, bl,
                             sums);
      break;
  }
  const int cplx = tl_dtype_is_complex(g->dtype);
  store_group(t, g->c + oc * es, TL__DOT_GROUP, g->batch_strides[2][0], sums, sums + 1,
              cplx ? 2 : 1);
}

/* Entry `entry`'s index along each batch axis and its offsets into A, B and C (elements),
 * the batched runner's numbering (first batch axis fastest). */
static void entries_start(const tl__gemm_batch *g, int64_t entry, int64_t *idx, int64_t *oa,
                          int64_t *ob, int64_t *oc) {
  *oa = *ob = *oc = 0;
  for (int d = 0; d < g->batch_rank; d++) {
    idx[d] = entry % g->batch_shape[d];
    entry /= g->batch_shape[d];
    *oa += idx[d] * g->batch_strides[0][d];
    *ob += idx[d] * g->batch_strides[1][d];
    *oc += idx[d] * g->batch_strides[2][d];
  }
}

/* The same `done` entries further on, as an odometer (no division). */
static void entries_advance(const tl__gemm_batch *g, int64_t done, int64_t *idx, int64_t *oa,
                            int64_t *ob, int64_t *oc) {
  if (done > 1 && idx[0] + done <= g->batch_shape[0]) {               /* along the first axis */
    const int64_t last = done - (idx[0] + done == g->batch_shape[0]); /* to its last entry */
    idx[0] += last;
    *oa += last * g->batch_strides[0][0];
    *ob += last * g->batch_strides[1][0];
    *oc += last * g->batch_strides[2][0];
    if (last == done) return;
    done = 1; /* and one step on, which wraps the first axis */
  }
  for (int64_t step = 0; step < done; step++)
    for (int d = 0; d < g->batch_rank; d++) {
      *oa += g->batch_strides[0][d];
      *ob += g->batch_strides[1][d];
      *oc += g->batch_strides[2][d];
      if (++idx[d] < g->batch_shape[d]) break;
      idx[d] = 0;
      *oa -= g->batch_shape[d] * g->batch_strides[0][d];
      *ob -= g->batch_shape[d] * g->batch_strides[1][d];
      *oc -= g->batch_shape[d] * g->batch_strides[2][d];
    }
}

/* Entries [begin, end) of a batch of 1 x 1 products: each is what tl__gemm_thin computes for
 * that entry alone (the same dot, the same store; a group's lanes keep it), so the bits do
 * not depend on how the entries are cut into runs. The entry's offsets advance as an
 * odometer over the batch axes (first axis fastest, as the batched runner numbers entries):
 * a batched dot of short rows (einsum's bi,bi->b with 256 elements a row) spent about a
 * fifth of its time finding each entry's offsets with divisions and passing through the
 * general block path. */
void tl__gemm_thin_dots(const tl__gemm_batch *g, int64_t begin, int64_t end) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  const int isa = tl__gemm_thin_isa();
  const int contiguous = g->k == 1 || (g->csa == 1 && g->rsb == 1);
  const int groups = dots_in_groups(g);
  /* the first batch axis's strides (none: one entry) */
  const int64_t xs = g->batch_rank > 0 ? g->batch_strides[0][0] : 0,
                ys = g->batch_rank > 0 ? g->batch_strides[1][0] : 0,
                cs = g->batch_rank > 0 ? g->batch_strides[2][0] : 0;
  thin t = {g->dtype, 1, g->k, NULL, NULL, g->rsa, g->csa, g->rsb, NULL, g->rsc, g->alpha, g->beta};
  int64_t idx[TL_MAX_RANK], oa, ob, oc;
  entries_start(g, begin, idx, &oa, &ob, &oc);
  for (int64_t e = begin; e < end;) {
    int64_t done = 1;
    if (contiguous) {
      /* the entries left along the first batch axis, grouped as dots_along groups them */
      if (g->batch_rank > 0) {
        done = g->batch_shape[0] - idx[0];
        if (done > end - e) done = end - e;
      }
      dots_along(&t, isa, done, g->a + oa * es, xs, g->b + ob * es, ys, g->c + oc * es, cs,
                 g->batches);
    } else if (groups && e + TL__DOT_GROUP <= end && idx[0] + TL__DOT_GROUP <= g->batch_shape[0]) {
      dots_group(g, &t, oa, ob, oc);
      done = TL__DOT_GROUP;
    } else {
      t.u = g->a + oa * es;
      t.v = g->b + ob * es;
      t.c = g->c + oc * es;
      thin_dots(&t);
    }
    e += done;
    entries_advance(g, done, idx, &oa, &ob, &oc);
  }
}

int tl__gemm_thin_dot_chunks_fit(const tl__gemm_batch *g) {
  return g->batches == 1 && g->m == 1 && g->n == 1 && g->k >= 2 * TL__DOT_CHUNK && g->csa == 1 &&
         g->rsb == 1 && tl__gemm_thin_dots_fit(g);
}

void tl__gemm_thin_dot_chunk(const tl__gemm_batch *g, int64_t chunk, double *part) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype), at = chunk * TL__DOT_CHUNK;
  const int64_t len = g->k - at < TL__DOT_CHUNK ? g->k - at : TL__DOT_CHUNK;
  tl__thin_dot_stream(tl__gemm_thin_isa(), g->dtype, len, g->a + at * es, g->b + at * es, &part[0],
                      &part[1]);
}

void tl__gemm_thin_dot_finish(const tl__gemm_batch *g, int64_t chunks, const double *parts) {
  double re = 0.0, im = 0.0;
  for (int64_t c = 0; c < chunks; c++) re += parts[2 * c], im += parts[2 * c + 1];
  thin t = {g->dtype, 1, g->k, NULL, NULL, 0, 0, 0, g->c, g->rsc, g->alpha, g->beta};
  if (tl_dtype_is_complex(g->dtype))
    store_complex(&t, 0, re, im);
  else
    store_real(&t, 0, re);
}

/* A batch of matrix-vector products whose rows of A and whose vector run along k (einsum
 * aij,aj->ai with small i and j): entry by entry each was one trip through the runner and
 * tl__gemm_thin, several times the arithmetic of a 4 x 4 product. Where the short dots
 * apply, a group of entries along the first batch axis goes row by row: row i of each
 * entry in the group dotted with its vector in one tl__thin_dots_short call. Each row keeps
 * the bits tl__gemm_thin gives it (tl__thin_dot's), so the grouping changes no result. */
int tl__gemm_thin_rows_fit(const tl__gemm_batch *g) {
  if (g->n != 1 || g->m < 2 || g->k < 2 || g->batch_rank < 1 || g->batches < 2) return 0;
  if (g->csa != 1 || g->rsb != 1) return 0; /* tl__gemm_thin's contiguous dots */
  const int64_t width = tl__thin_dots_short_width(tl__gemm_thin_isa(), g->dtype, g->k);
  return width > 0 && g->batch_shape[0] >= width;
}

/* Operands larger than this (in all) are read from memory, not from a cache the last call
 * left them in: there the rows ask for their lines ahead (next_group_ahead). Below it the hints
 * cost more than they save (1024 x 8 x 32 c128, 4 MiB: 0.55 -> 0.70 of numpy's time). The
 * dots then also read as the streaming dot does (tl__thin_dots_short's ahead). */
#define TL__ROWS_AHEAD_BYTES ((int64_t)8 << 20)

/* Ask for the lines of row i of the next group's entries (entries width .. 2 width - 1 past
 * the ones at oa and ob along the first batch axis), and for their vectors with row 0: a
 * group reads row i of each of its entries, then row i + 1, so its reads jump by the entry
 * stride, which the hardware's stream prefetchers do not follow. One row at a time, before
 * the current group's same row, so the requests are spread over the group's work. Hints
 * only, as integers: the addresses may lie past the operands. */
static void next_group_ahead(const tl__gemm_batch *g, int64_t oa, int64_t ob, int64_t width,
                             int64_t i) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype), run = g->k * es;
  for (int64_t j = width; j < 2 * width; j++) {
    const uintptr_t a =
        (uintptr_t)g->a + (uintptr_t)((oa + j * g->batch_strides[0][0] + i * g->rsa) * es);
    tl__prefetch_span((const void *)a, run, 0);
    if (i == 0) {
      const uintptr_t b = (uintptr_t)g->b + (uintptr_t)((ob + j * g->batch_strides[1][0]) * es);
      tl__prefetch_span((const void *)b, run, 0);
    }
  }
}

void tl__gemm_thin_rows(const tl__gemm_batch *g, int64_t begin, int64_t end) {
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  const int isa = tl__gemm_thin_isa();
  const int64_t width = tl__thin_dots_short_width(isa, g->dtype, g->k);
  const int far = tl__i64_mul3_sat(g->batches, g->m * g->k + g->k, es) > TL__ROWS_AHEAD_BYTES;
  thin t = {g->dtype, g->m,   g->k, NULL,   NULL,     g->rsa,
            g->csa,   g->rsb, NULL, g->rsc, g->alpha, g->beta};
  int64_t idx[TL_MAX_RANK], oa, ob, oc;
  entries_start(g, begin, idx, &oa, &ob, &oc);
  for (int64_t e = begin; e < end;) {
    int64_t done = 1;
    if (e + width <= end && idx[0] + width <= g->batch_shape[0]) {
      for (int64_t i = 0; i < g->m; i++) {
        if (far) next_group_ahead(g, oa, ob, width, i);
        double re[16], im[16];
        tl__thin_dots_short(isa, g->dtype, g->k, g->a + (oa + i * g->rsa) * es,
                            g->batch_strides[0][0], g->b + ob * es, g->batch_strides[1][0], far, re,
                            im);
        store_group(&t, g->c + (oc + i * g->rsc) * es, width, g->batch_strides[2][0], re, im, 1);
      }
      done = width;
    } else { /* one entry, as tl__gemm_thin computes it */
      t.u = g->a + oa * es;
      t.v = g->b + ob * es;
      t.c = g->c + oc * es;
      thin_dots_contiguous(&t);
    }
    e += done;
    entries_advance(g, done, idx, &oa, &ob, &oc);
  }
}
