/* tests/kernels/test_gemm_thin.c: GEMM with a C of one row or one column (gemm_thin.c):
 * the kernel against a naive reference in every floating dtype, for m == 1, n == 1 and both,
 * over contiguous, transposed and strided operands, with alpha and beta, and with beta == 0
 * over a C full of NaN (it must not be read); it declines what is not thin; and the einsum
 * terms that reach it (bi,bi->b, ij,ij->, i,ij->j, ij,j->i) against the same reference; a
 * long dot in chunks, with alpha and beta, on one thread and two. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};

/* Strides of a rows x cols matrix: 0 column-major, 1 row-major, 2 every other element of a
 * column-major matrix twice the size. */
static void layout(int kind, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs) {
  if (kind == 0) *rs = 1, *cs = rows;
  if (kind == 1) *rs = cols, *cs = 1;
  if (kind == 2) *rs = 2, *cs = 2 * rows;
}

static void gemm_thin_kernel_matches_naive(void) {
  static const int64_t shapes[][3] = {{1, 1, 1},  {1, 1, 7},   {1, 1, 1000}, {1, 9, 33},
                                      {1, 40, 5}, {37, 1, 17}, {600, 1, 9},  {5, 1, 600}};
  double buf_a[2 * 2 * 6000], buf_b[2 * 2 * 6000], buf_c[2 * 2 * 1200];
  uint64_t state = 11;
  for (int di = 0; di < 4; di++) {
    tl_dtype dt = dtypes[di];
    int cplx = tl_dtype_is_complex(dt);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
      for (int la = 0; la < 3; la++)
        for (int lb = 0; lb < 3; lb++)
          for (int beta_kind = 0; beta_kind < 2; beta_kind++) {
            int64_t rsa, csa, rsb, csb, rsc, csc;
            layout(la, m, k, &rsa, &csa);
            layout(lb, k, n, &rsb, &csb);
            layout((la + lb) % 3, m, n, &rsc, &csc);
            for (int64_t i = 0; i < 2 * m * k; i++)
              th_num_store(dt, buf_a, i, th_num_uniform(&state) - 0.5);
            for (int64_t i = 0; i < 2 * k * n; i++)
              th_num_store(dt, buf_b, i, th_num_uniform(&state) - 0.5);
            for (int64_t i = 0; i < 2 * m * n; i++)
              th_num_store(dt, buf_c, i, beta_kind ? th_num_uniform(&state) : NAN);
            double complex before[1200];
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < n; j++)
                before[i * n + j] = th_num_load(dt, buf_c, i * rsc + j * csc);
            tl_scalar alpha = cplx ? (tl_scalar){0.75, -0.5} : tl_scalar_real(0.75);
            tl_scalar beta = beta_kind ? (cplx ? (tl_scalar){-1.25, 0.5} : tl_scalar_real(-1.25))
                                       : tl_scalar_real(0.0);
            TH_CHECK(tl__gemm_thin(dt, m, n, k, alpha, buf_a, rsa, csa, buf_b, rsb, csb, beta,
                                   buf_c, rsc, csc) == 1);
            double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < n; j++) {
                double complex sum = 0;
                double scale = 1;
                for (int64_t p = 0; p < k; p++) {
                  double complex x = th_num_load(dt, buf_a, i * rsa + p * csa);
                  double complex y = th_num_load(dt, buf_b, p * rsb + j * csb);
                  sum += x * y;
                  scale += cabs(x * y);
                }
                double complex want = al * sum + (beta_kind ? be * before[i * n + j] : 0);
                double complex got = th_num_load(dt, buf_c, i * rsc + j * csc);
                TH_CHECK(th_num_close_enough(got, want, th_num_tolerance(dt) * 4, scale + 2));
              }
          }
    }
  }
}

static void gemm_thin_kernel_declines_what_is_not_thin(void) {
  double a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {0};
  tl_scalar one = tl_scalar_real(1.0), zero = tl_scalar_real(0.0);
  TH_CHECK(tl__gemm_thin(TL_F64, 2, 2, 2, one, a, 1, 2, b, 1, 2, zero, c, 1, 2) == 0);
  TH_CHECK(tl__gemm_thin(TL_F64, 1, 1, 0, one, a, 1, 1, b, 1, 1, zero, c, 1, 1) == 0);
  TH_CHECK(c[0] == 0.0 && c[3] == 0.0);
}

/* The cores at every instruction set this CPU has (gemm_thin_core.c): the contiguous dot for
 * lengths around each vector width and unroll, and the axpy pass over 1..9 rows (whole
 * four-row sweeps and the rest) of widths around the vector widths, rows padded apart,
 * against a naive sum; and the axpy of a c cut in two at any point gives the bits of the
 * uncut call (the thread split's promise). */
static void gemm_thin_core_matches_naive_at_every_isa(void) {
  static double x[2 * 200], y[2 * 200], u[2 * 9 * 80], v[2 * 18], c[2 * 80], cut[2 * 80];
  uint64_t state = 29;
  for (int i = 0; i < 2 * 200; i++) x[i] = th_num_uniform(&state), y[i] = th_num_uniform(&state);
  for (int i = 0; i < 2 * 9 * 80; i++) u[i] = th_num_uniform(&state);
  for (int i = 0; i < 2 * 18; i++) v[i] = th_num_uniform(&state);
  for (int isa = 0; isa <= tl__gemm_thin_isa(); isa++)
    for (int di = 0; di < 4; di++) {
      tl_dtype dt = dtypes[di];
      int cplx = tl_dtype_is_complex(dt);
      double tol = th_num_tolerance(dt) * 4;
      /* the buffers reread in dt: the same bytes as values of that dtype */
      static char xb[2 * 200 * 8], yb[2 * 200 * 8], ub[2 * 9 * 80 * 8], vb[2 * 18 * 8];
      for (int i = 0; i < 200; i++) {
        th_num_store_parts(dt, xb, i, x[2 * i], x[2 * i + 1]);
        th_num_store_parts(dt, yb, i, y[2 * i], y[2 * i + 1]);
      }
      for (int i = 0; i < 9 * 80; i++) th_num_store_parts(dt, ub, i, u[2 * i], u[2 * i + 1]);
      for (int i = 0; i < 18; i++) th_num_store_parts(dt, vb, i, v[2 * i], v[2 * i + 1]);
      for (int64_t k = 0; k <= 200; k += (k < 70 ? 1 : 43)) {
        double re = NAN, im = NAN;
        tl__thin_dot(isa, dt, k, xb, yb, &re, &im);
        double complex want = 0;
        double scale = 1;
        for (int64_t i = 0; i < k; i++) {
          want += th_num_load(dt, xb, i) * th_num_load(dt, yb, i);
          scale += cabs(th_num_load(dt, xb, i) * th_num_load(dt, yb, i));
        }
        int ok = th_num_close_enough(re + I * im, want, tol, scale);
        if (!ok) fprintf(stderr, "dot isa %d %s k %lld\n", isa, tl_dtype_name(dt), (long long)k);
        TH_CHECK(ok);
      }
      static const int64_t counts[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 70};
      tl_scalar alpha = cplx ? (tl_scalar){0.75, -0.5} : tl_scalar_real(0.75);
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int64_t k = 1; k <= 9; k++) {
          int64_t count = counts[ci], su_k = count + 5;
          size_t bytes = (size_t)count * tl_dtype_size(dt);
          for (int64_t e = 0; e < count; e++) th_num_store_parts(dt, c, e, 0.25 * (double)e, -0.5);
          memcpy(cut, c, bytes);
          tl__thin_axpy(isa, dt, count, k, alpha, ub, su_k, vb, 2, c);
          for (int64_t e = 0; e < count; e++) {
            double complex sum = 0.25 * (double)e - (cplx ? 0.5 * I : 0);
            double complex al = alpha.re + I * alpha.im;
            for (int64_t i = 0; i < k; i++)
              sum += al * th_num_load(dt, vb, 2 * i) * th_num_load(dt, ub, i * su_k + e);
            int ok = th_num_close_enough(th_num_load(dt, c, e), sum, tol, 4);
            if (!ok)
              fprintf(stderr, "axpy isa %d %s count %lld k %lld e %lld\n", isa, tl_dtype_name(dt),
                      (long long)count, (long long)k, (long long)e);
            TH_CHECK(ok);
          }
          int64_t at = count / 3 + 1; /* cut c (and u's rows) at `at` */
          size_t es = tl_dtype_size(dt);
          tl__thin_axpy(isa, dt, at, k, alpha, ub, su_k, vb, 2, cut);
          if (at < count)
            tl__thin_axpy(isa, dt, count - at, k, alpha, ub + (size_t)at * es, su_k, vb, 2,
                          (char *)cut + (size_t)at * es);
          TH_CHECK(memcmp(cut, c, bytes) == 0);
        }
    }
}

/* The contiguous dot gives the same bits wherever its operands sit: at every instruction set,
 * x and y are copied to every pair of element offsets 0..8 from a 64-byte boundary (the
 * AVX-512 loop reads whole 64-byte vectors on a boundary and two 32-byte halves off one),
 * and each dot is compared bit for bit with the one at offsets (0, 0), and with a naive sum;
 * tl__thin_dot_stream (the same dot with a prefetch ahead) gives each one's bits. */
static void gemm_thin_dot_bits_do_not_depend_on_alignment(void) {
  static _Alignas(64) char xb[2 * 300 * 8 + 128], yb[2 * 300 * 8 + 128];
  uint64_t state = 41;
  static const int64_t ks[] = {1, 5, 8, 16, 17, 33, 64, 70, 256, 300};
  for (int isa = 0; isa <= tl__gemm_thin_isa(); isa++)
    for (int di = 0; di < 4; di++) {
      tl_dtype dt = dtypes[di];
      size_t es = tl_dtype_size(dt);
      double xv[2 * 300], yv[2 * 300];
      for (int i = 0; i < 2 * 300; i++)
        xv[i] = th_num_uniform(&state) - 0.5, yv[i] = th_num_uniform(&state) - 0.5;
      for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        int64_t k = ks[ki];
        double re0 = NAN, im0 = NAN;
        for (int ox = 0; ox <= 8; ox++)
          for (int oy = 0; oy <= 8; oy++) {
            char *x = xb + (size_t)ox * es, *y = yb + (size_t)oy * es;
            for (int64_t i = 0; i < k; i++) {
              th_num_store_parts(dt, x, i, xv[2 * i], xv[2 * i + 1]);
              th_num_store_parts(dt, y, i, yv[2 * i], yv[2 * i + 1]);
            }
            double re = NAN, im = NAN, rs = NAN, is = NAN;
            tl__thin_dot(isa, dt, k, x, y, &re, &im);
            /* the prefetching form (a long dot's chunks) makes the same additions */
            tl__thin_dot_stream(isa, dt, k, x, y, &rs, &is);
            TH_CHECK(memcmp(&rs, &re, sizeof re) == 0 && memcmp(&is, &im, sizeof im) == 0);
            if (ox == 0 && oy == 0) {
              double complex want = 0;
              double scale = 1;
              for (int64_t i = 0; i < k; i++) {
                want += th_num_load(dt, x, i) * th_num_load(dt, y, i);
                scale += cabs(th_num_load(dt, x, i) * th_num_load(dt, y, i));
              }
              TH_CHECK(th_num_close_enough(re + I * im, want, th_num_tolerance(dt) * 4, scale));
              re0 = re, im0 = im;
              continue;
            }
            int same = memcmp(&re, &re0, sizeof re) == 0 && memcmp(&im, &im0, sizeof im) == 0;
            if (!same)
              fprintf(stderr, "dot isa %d %s k %lld offsets %d %d: other bits\n", isa,
                      tl_dtype_name(dt), (long long)k, ox, oy);
            TH_CHECK(same);
          }
      }
    }
}

/* A batch of 1 x 1 products (tl__gemm_thin_dots): two batch axes (the odometer), contiguous
 * and strided k, alpha and beta; each entry has the bits tl__gemm_thin gives it alone, however
 * the entries are cut into runs, and matches a naive sum. The strided batch is b's columns
 * read down (k outermost, neighbouring entries adjacent): its dots go in groups of
 * TL__DOT_GROUP along the first batch axis (13 entries: a group and a remainder, the runs
 * cut inside both); the contiguous real ones four at a time (tl__thin_dot4_real), with the
 * same cuts. */
static void gemm_thin_dots_batch_matches_single_entries(void) {
  enum { B0 = 13, B1 = 3, K = 37 };
  static double a[2 * B0 * B1 * K * 2], b[2 * B0 * B1 * K * 2], c0[2 * B0 * B1 * 2],
      c1[2 * B0 * B1 * 2], c2[2 * B0 * B1 * 2];
  uint64_t state = 17;
  for (int di = 0; di < 4; di++)
    for (int strided = 0; strided < 2; strided++)
      for (int beta_kind = 0; beta_kind < 2; beta_kind++) {
        tl_dtype dt = dtypes[di];
        int cplx = tl_dtype_is_complex(dt);
        for (int i = 0; i < B0 * B1 * K * 2; i++)
          th_num_store(dt, a, i, th_num_uniform(&state) - 0.5),
              th_num_store(dt, b, i, th_num_uniform(&state) - 0.5);
        for (int i = 0; i < B0 * B1 * 2; i++) th_num_store(dt, c0, i, th_num_uniform(&state));
        memcpy(c1, c0, sizeof c0);
        memcpy(c2, c0, sizeof c0);
        tl__gemm_batch g;
        memset(&g, 0, sizeof g);
        g.dtype = dt;
        g.m = g.n = 1;
        g.k = K;
        g.alpha = cplx ? (tl_scalar){0.75, -0.5} : tl_scalar_real(0.75);
        g.beta = beta_kind ? (cplx ? (tl_scalar){-1.25, 0.5} : tl_scalar_real(-1.25))
                           : tl_scalar_real(0.0);
        /* a: entries K (or 2K, every other element along k) apart, b: k outermost */
        g.a = (const char *)a;
        g.b = (const char *)b;
        g.c = (char *)c1;
        g.rsa = 1;
        g.csa = strided ? 2 : 1;
        g.rsb = strided ? B0 * B1 : 1;
        g.csb = 1;
        g.rsc = g.csc = 1;
        g.batches = B0 * B1;
        g.batch_rank = 2;
        g.batch_shape[0] = B0, g.batch_shape[1] = B1;
        int64_t ea = strided ? 2 * K : K, eb = strided ? 1 : K;
        g.batch_strides[0][0] = ea, g.batch_strides[0][1] = ea * B0;
        g.batch_strides[1][0] = eb, g.batch_strides[1][1] = eb * B0;
        g.batch_strides[2][0] = 2 * B1, g.batch_strides[2][1] = 2; /* c transposed, padded */
        TH_CHECK(tl__gemm_thin_dots_fit(&g));
        tl__gemm_thin_dots(&g, 0, 3);
        tl__gemm_thin_dots(&g, 3, 19);
        tl__gemm_thin_dots(&g, 19, B0 * B1);
        size_t es = tl_dtype_size(dt);
        for (int64_t e = 0; e < B0 * B1; e++) {
          int64_t i0 = e % B0, i1 = e / B0;
          int64_t oa = i0 * ea + i1 * ea * B0, ob = i0 * eb + i1 * eb * B0,
                  oc = i0 * 2 * B1 + i1 * 2;
          TH_CHECK(tl__gemm_thin(dt, 1, 1, K, g.alpha, (const char *)a + oa * es, 1, g.csa,
                                 (const char *)b + ob * es, g.rsb, 1, g.beta, (char *)c2 + oc * es,
                                 1, 1) == 1);
          double complex sum = 0;
          double scale = 2;
          for (int64_t p = 0; p < K; p++) {
            double complex x = th_num_load(dt, a, oa + p * g.csa);
            double complex y = th_num_load(dt, b, ob + p * g.rsb);
            sum += x * y;
            scale += cabs(x * y);
          }
          double complex want =
              (g.alpha.re + I * g.alpha.im) * sum +
              (beta_kind ? (g.beta.re + I * g.beta.im) * th_num_load(dt, c0, oc) : 0);
          TH_CHECK(
              th_num_close_enough(th_num_load(dt, c1, oc), want, th_num_tolerance(dt) * 4, scale));
        }
        TH_CHECK(memcmp(c1, c2, sizeof c1) == 0);
      }
  tl__gemm_batch g;
  memset(&g, 0, sizeof g);
  g.dtype = TL_F64, g.m = 1, g.n = 2, g.k = 3;
  TH_CHECK(!tl__gemm_thin_dots_fit(&g));
  g.n = 1, g.k = 0;
  TH_CHECK(!tl__gemm_thin_dots_fit(&g));
}

/* Batched dots too big for the caches (more than 2 MiB read, rows of at least 1 KiB) go one
 * at a time (dots_along's streaming choice) and keep the bits each entry has alone: f64 and
 * c128 rows of 160 elements (formerly four real dots side by side) and f32 / c64 rows of 300
 * (formerly a group of short dots), the batch cut into three runs. */
static void gemm_thin_streaming_dots_keep_each_entrys_bits(void) {
  enum { B = 1100, K = 300 };
  static double a[2 * B * K], b[2 * B * K], c1[2 * B], c2[2 * B];
  uint64_t state = 31;
  for (int di = 0; di < 4; di++) {
    const tl_dtype dt = dtypes[di];
    const int64_t k = dt == TL_F64 || dt == TL_C128 ? 160 : K;
    const size_t es = tl_dtype_size(dt);
    for (int64_t i = 0; i < B * k; i++)
      th_num_store(dt, a, i, th_num_uniform(&state) - 0.5),
          th_num_store(dt, b, i, th_num_uniform(&state) - 0.5);
    tl__gemm_batch g;
    memset(&g, 0, sizeof g);
    g.dtype = dt, g.m = g.n = 1, g.k = k;
    g.alpha = tl_scalar_real(1.0), g.beta = tl_scalar_real(0.0);
    g.a = (const char *)a, g.b = (const char *)b, g.c = (char *)c1;
    g.rsa = g.csa = g.rsb = g.csb = g.rsc = g.csc = 1;
    g.batches = B, g.batch_rank = 1, g.batch_shape[0] = B;
    g.batch_strides[0][0] = k, g.batch_strides[1][0] = k, g.batch_strides[2][0] = 1;
    TH_CHECK(tl__gemm_thin_dots_fit(&g));
    TH_CHECK((int64_t)es * k * B * 2 > ((int64_t)2 << 20) && (int64_t)es * k >= 1024);
    tl__gemm_thin_dots(&g, 0, 5);
    tl__gemm_thin_dots(&g, 5, 700);
    tl__gemm_thin_dots(&g, 700, B);
    int same = 1;
    for (int64_t e = 0; e < B; e++) {
      TH_CHECK(tl__gemm_thin(dt, 1, 1, k, g.alpha, (const char *)a + e * k * es, 1, 1,
                             (const char *)b + e * k * es, 1, 1, g.beta, (char *)c2 + e * es, 1,
                             1) == 1);
      same = same && memcmp((char *)c1 + e * es, (char *)c2 + e * es, es) == 0;
    }
    if (!same)
      fprintf(stderr, "streaming dots %s: other bits than one entry alone\n", tl_dtype_name(dt));
    TH_CHECK(same);
  }
}

/* A batch of short matrix-vector products (tl__gemm_thin_rows: aij,aj->ai) gives, row by
 * row, the bits tl__gemm_thin gives each entry alone, cut into runs anywhere: entries in
 * groups along the first batch axis and single ones past its last whole group, two batch
 * axes, rows and C padded, alpha and beta (the stores' scaled path) and beta 0 over NaN. */
static void gemm_thin_rows_batch_matches_single_entries(void) {
  enum { B0 = 21, B1 = 3, M = 5, K = 7, LDA = 9 };
  static double a[2 * B0 * B1 * M * LDA], b[2 * B0 * B1 * K], c0[2 * B0 * B1 * M * 2],
      c1[2 * B0 * B1 * M * 2], c2[2 * B0 * B1 * M * 2];
  uint64_t state = 23;
  int checked = 0;
  for (int di = 0; di < 4; di++)
    for (int beta_kind = 0; beta_kind < 2; beta_kind++) {
      const tl_dtype dt = dtypes[di];
      const int cplx = tl_dtype_is_complex(dt);
      for (int i = 0; i < B0 * B1 * M * LDA; i++)
        th_num_store(dt, a, i, th_num_uniform(&state) - 0.5);
      for (int i = 0; i < B0 * B1 * K; i++) th_num_store(dt, b, i, th_num_uniform(&state) - 0.5);
      for (int i = 0; i < B0 * B1 * M * 2; i++)
        th_num_store(dt, c0, i, beta_kind ? th_num_uniform(&state) : NAN);
      memcpy(c1, c0, sizeof c0);
      memcpy(c2, c0, sizeof c0);
      tl__gemm_batch g;
      memset(&g, 0, sizeof g);
      g.dtype = dt;
      g.m = M, g.n = 1, g.k = K;
      g.alpha =
          beta_kind ? (cplx ? (tl_scalar){0.75, -0.5} : tl_scalar_real(0.75)) : tl_scalar_real(1.0);
      g.beta = beta_kind ? (cplx ? (tl_scalar){-1.25, 0.5} : tl_scalar_real(-1.25))
                         : tl_scalar_real(0.0);
      g.a = (const char *)a, g.b = (const char *)b, g.c = (char *)c1;
      g.rsa = LDA, g.csa = 1; /* rows of K, LDA apart */
      g.rsb = 1, g.csb = 1;
      g.rsc = 2, g.csc = 1; /* every other element */
      g.batches = B0 * B1;
      g.batch_rank = 2;
      g.batch_shape[0] = B0, g.batch_shape[1] = B1;
      g.batch_strides[0][0] = M * LDA, g.batch_strides[0][1] = M * LDA * B0;
      g.batch_strides[1][0] = K, g.batch_strides[1][1] = K * B0;
      g.batch_strides[2][0] = 2 * M, g.batch_strides[2][1] = 2 * M * B0;
      const int isa = tl__gemm_thin_isa();
      if (tl__thin_dots_short_width(isa, dt, K) == 0) {
        TH_CHECK(!tl__gemm_thin_rows_fit(&g));
        continue;
      }
      TH_CHECK(tl__gemm_thin_rows_fit(&g));
      tl__gemm_thin_rows(&g, 0, 5);
      tl__gemm_thin_rows(&g, 5, 40);
      tl__gemm_thin_rows(&g, 40, B0 * B1);
      const size_t es = tl_dtype_size(dt);
      for (int64_t e = 0; e < B0 * B1; e++) {
        const int64_t i0 = e % B0, i1 = e / B0;
        const int64_t oa = i0 * M * LDA + i1 * M * LDA * B0, ob = i0 * K + i1 * K * B0,
                      oc = i0 * 2 * M + i1 * 2 * M * B0;
        TH_CHECK(tl__gemm_thin(dt, M, 1, K, g.alpha, (const char *)a + oa * es, LDA, 1,
                               (const char *)b + ob * es, 1, 1, g.beta, (char *)c2 + oc * es, 2,
                               1) == 1);
        for (int64_t i = 0; i < M; i++) {
          double complex sum = 0;
          double scale = 2;
          for (int64_t p = 0; p < K; p++) {
            const double complex x = th_num_load(dt, a, oa + i * LDA + p);
            const double complex y = th_num_load(dt, b, ob + p);
            sum += x * y;
            scale += cabs(x * y);
          }
          const double complex want =
              (g.alpha.re + I * g.alpha.im) * sum +
              (beta_kind ? (g.beta.re + I * g.beta.im) * th_num_load(dt, c0, oc + 2 * i) : 0);
          TH_CHECK(th_num_close_enough(th_num_load(dt, c1, oc + 2 * i), want,
                                       th_num_tolerance(dt) * 4, scale));
        }
      }
      TH_CHECK(memcmp(c1, c2, sizeof c1) == 0);
      checked++;
    }
  if (tl__gemm_thin_isa() >= TL__ISA_AVX512) TH_CHECK(checked == 8);
  tl__gemm_batch g;
  memset(&g, 0, sizeof g);
  g.dtype = TL_F64, g.m = 4, g.n = 2, g.k = 3;
  TH_CHECK(!tl__gemm_thin_rows_fit(&g)); /* not a matrix-vector product */
}

/* A batch whose operands are larger than the caches (over TL__ROWS_AHEAD_BYTES, 8 MiB) asks
 * for its next group's lines and reads its dots as a stream: the results keep tl__gemm_thin's
 * bits entry by entry, through the last group, whose hints point past the operands. */
static void gemm_thin_rows_large_batch_matches_single_entries(void) {
  enum { B = 1 << 16, M = 4, K = 16 };
  static const tl_dtype big[] = {TL_F64, TL_C128};
  const int isa = tl__gemm_thin_isa();
  uint64_t state = 41;
  for (int di = 0; di < 2; di++) {
    const tl_dtype dt = big[di];
    const size_t es = tl_dtype_size(dt);
    char *a = malloc((size_t)B * M * K * es), *b = malloc((size_t)B * K * es);
    char *c1 = malloc((size_t)B * M * es), *c2 = malloc((size_t)B * M * es);
    TH_CHECK(a && b && c1 && c2);
    if (!a || !b || !c1 || !c2) {
      free(a), free(b), free(c1), free(c2);
      return;
    }
    for (int64_t i = 0; i < (int64_t)B * M * K; i++)
      th_num_store(dt, a, i, th_num_uniform(&state) - 0.5);
    for (int64_t i = 0; i < (int64_t)B * K; i++)
      th_num_store(dt, b, i, th_num_uniform(&state) - 0.5);
    tl__gemm_batch g;
    memset(&g, 0, sizeof g);
    g.dtype = dt;
    g.m = M, g.n = 1, g.k = K;
    g.alpha = tl_scalar_real(1.0), g.beta = tl_scalar_real(0.0);
    g.a = a, g.b = b, g.c = c1;
    g.rsa = K, g.csa = 1, g.rsb = 1, g.csb = 1, g.rsc = 1, g.csc = 1;
    g.batches = B, g.batch_rank = 1, g.batch_shape[0] = B;
    g.batch_strides[0][0] = M * K, g.batch_strides[1][0] = K, g.batch_strides[2][0] = M;
    if (tl__thin_dots_short_width(isa, dt, K) == 0) {
      TH_CHECK(!tl__gemm_thin_rows_fit(&g));
    } else {
      TH_CHECK(tl__gemm_thin_rows_fit(&g));
      tl__gemm_thin_rows(&g, 0, B);
      for (int64_t e = 0; e < B; e++)
        TH_CHECK(tl__gemm_thin(dt, M, 1, K, g.alpha, a + e * M * K * es, K, 1, b + e * K * es, 1, 1,
                               g.beta, c2 + e * M * es, 1, 1) == 1);
      TH_CHECK(memcmp(c1, c2, (size_t)B * M * es) == 0);
    }
    free(a), free(b), free(c1), free(c2);
  }
}

/* A value for the short dots' operands: mostly uniform, and in some entries signed zeros,
 * products that underflow to a signed zero, infinities and NaN, whose signs and payloads the
 * single dot's operation order decides. */
static double short_dot_value(uint64_t *state, int64_t entry, int single) {
  double u = th_num_uniform(state) - 0.5;
  if (entry % 3 != 0) return u;
  const double tiny = single ? 1e-25 : 1e-170;
  switch ((int)(th_num_uniform(state) * 8)) {
    case 0:
      return -0.0;
    case 1:
      return u < 0 ? -tiny : tiny;
    case 2:
      return entry % 9 == 0 ? INFINITY : u;
    case 3:
      return entry % 27 == 0 ? NAN : u;
    default:
      return u;
  }
}

/* The same bits, or both NaN: where two NaNs meet, which one an addition returns follows the
 * operand order the compiler picks for a commutative instruction, so a NaN's sign and
 * payload are not part of the promise. */
static int same_bits_or_nan(double got, double want) {
  return (isnan(got) && isnan(want)) || memcmp(&got, &want, sizeof got) == 0;
}

/* The batch of short dots (tl__thin_dots_short) gives each entry the bits of its single dot
 * (tl__thin_dot) at AVX-512, for the k it takes (up to 64 reals an entry for doubles, 512
 * for floats), packed, padded and backward entry strides, read as a stream or not, with signed
 * zeros, underflows, infinities and NaN among the operands; below AVX-512, and past those lengths,
 * it takes nothing. */
static void gemm_thin_short_dots_match_single_dots(void) {
  enum { MAXK = 513, SPAN = 16 * (MAXK + 3) };
  static char xb[2 * SPAN * 8], yb[2 * SPAN * 8];
  uint64_t state = 73;
  const int top = tl__gemm_thin_isa();
  for (int isa = 0; isa < top; isa++) TH_CHECK(tl__thin_dots_short_width(isa, TL_F64, 4) == 0);
  for (int di = 0; di < 4; di++) {
    const tl_dtype dt = dtypes[di];
    const int cplx = tl_dtype_is_complex(dt), single = dt == TL_F32 || dt == TL_C64;
    const int64_t es = (int64_t)tl_dtype_size(dt);
    static const int64_t longer[] = {48, 64, 65, 100, 255, 256, 257, 512, 513};
    for (int64_t kk = 1; kk <= 33 + 9; kk++) { /* 1 .. 33, then longer[] */
      const int64_t k = kk <= 33 ? kk : longer[kk - 34];
      const int width = tl__thin_dots_short_width(top, dt, k);
      if (top < TL__ISA_AVX512 || (cplx ? 2 * k : k) > (single ? 512 : 64)) {
        TH_CHECK(width == 0);
        continue;
      }
      TH_CHECK(width == (single ? 16 : 8));
      for (int run = 0; run < 6; run++) {
        /* x: packed or padded rows; y: packed, padded, or read backwards; each with and
         * without the streaming reads (ahead: prefetches, loads in halves off a line) */
        const int layout = run % 3, ahead = run / 3;
        const int64_t xs = layout == 0 ? k : k + 3;
        const int64_t ys = layout == 0 ? k : layout == 1 ? k + 1 : -(k + 2);
        for (int64_t i = 0; i < SPAN; i++) {
          th_num_store_parts(dt, xb, i, short_dot_value(&state, i / (k + 3), single),
                             short_dot_value(&state, i / (k + 3) + 1, single));
          th_num_store_parts(dt, yb, i, short_dot_value(&state, i / (k + 3), single),
                             short_dot_value(&state, i / (k + 3) + 2, single));
        }
        const char *x = xb, *y = ys < 0 ? yb + (width - 1) * (-ys) * es : yb;
        if (layout == 1) /* entry 1: every product underflows to -0 */
          for (int64_t i = 0; i < k; i++) {
            const double tiny = single ? 1e-25 : 1e-170;
            th_num_store_parts(dt, xb, xs + i, tiny, cplx ? tiny : 0);
            th_num_store_parts(dt, yb, ys + i, -tiny, cplx ? tiny : 0);
          }
        double re[16], im[16];
        memset(re, 0, sizeof re), memset(im, 0, sizeof im);
        tl__thin_dots_short(top, dt, k, x, xs, y, ys, ahead, re, im);
        for (int j = 0; j < width; j++) {
          double want_re = NAN, want_im = NAN;
          tl__thin_dot(top, dt, k, x + j * xs * es, y + j * ys * es, &want_re, &want_im);
          const int same =
              same_bits_or_nan(re[j], want_re) && (!cplx || same_bits_or_nan(im[j], want_im));
          if (!same)
            fprintf(stderr, "short dots %s k %lld layout %d entry %d: (%g, %g) vs (%g, %g)\n",
                    tl_dtype_name(dt), (long long)k, layout, j, re[j], im[j], want_re, want_im);
          TH_CHECK(same);
        }
      }
    }
  }
}

/* The complex group (TL__DOT_GROUP dots side by side) gives the bits of the portable group at
 * every instruction set, with adjacent and distant lanes on either operand, and each lane
 * matches a naive dot. */
static void gemm_thin_complex_groups_agree_at_every_isa(void) {
  enum { K = 29, SPAN = (K + TL__DOT_GROUP) * 41 };
  static double x[SPAN * 2], y[SPAN * 2];
  uint64_t state = 91;
  static const int64_t lanes[][4] = {{1, 40, 40, 1}, {40, 1, 1, 40}, {3, 40, 5, 40}};
  for (int di = 2; di < 4; di++) {
    tl_dtype dt = dtypes[di];
    for (int i = 0; i < SPAN; i++)
      th_num_store_parts(dt, x, i, th_num_uniform(&state) - 0.5, th_num_uniform(&state) - 0.5),
          th_num_store_parts(dt, y, i, th_num_uniform(&state) - 0.5, th_num_uniform(&state) - 0.5);
    for (size_t v = 0; v < sizeof lanes / sizeof lanes[0]; v++) {
      /* x: lane stride lanes[v][0], k stride lanes[v][1]; y likewise */
      int64_t xl = lanes[v][0], sx = lanes[v][1], yl = lanes[v][2], sy = lanes[v][3];
      double ref[2 * TL__DOT_GROUP], got[2 * TL__DOT_GROUP];
      tl__thin_group_complex(0, dt, K, x, sx, xl, y, sy, yl, ref);
      for (int l = 0; l < TL__DOT_GROUP; l++) {
        double complex want = 0;
        double scale = 1;
        for (int64_t i = 0; i < K; i++) {
          double complex p =
              th_num_load(dt, x, i * sx + l * xl) * th_num_load(dt, y, i * sy + l * yl);
          want += p;
          scale += cabs(p);
        }
        TH_CHECK(th_num_close_enough(th_num_cplx(ref[2 * l], ref[2 * l + 1]), want,
                                     th_num_tolerance(dt) * 4, scale));
      }
      for (int isa = 1; isa <= tl__gemm_thin_isa(); isa++) {
        tl__thin_group_complex(isa, dt, K, x, sx, xl, y, sy, yl, got);
        if (memcmp(got, ref, sizeof ref) != 0)
          fprintf(stderr, "  %s isa %d lanes %lld/%lld: other bits than the portable group\n",
                  tl_dtype_name(dt), isa, (long long)xl, (long long)yl);
        TH_CHECK(memcmp(got, ref, sizeof ref) == 0);
      }
    }
  }
}

/* ops[0] and ops[1] with labels, out with out_labels: the naive einsum value at out index. */
static double complex naive(const tl_tensor *x, const char *xl, const tl_tensor *y, const char *yl,
                            const char *ol, const int64_t *out_idx, const int64_t *extent) {
  /* labels a..z: the summed ones are those not in ol; iterate over all of their values */
  int summed[26], ns = 0;
  for (const char *p = xl; *p; p++)
    if (!strchr(ol, *p)) {
      int seen = 0;
      for (int q = 0; q < ns; q++) seen |= summed[q] == *p - 'a';
      if (!seen) summed[ns++] = *p - 'a';
    }
  int64_t value[26] = {0};
  for (size_t i = 0; i < strlen(ol); i++) value[ol[i] - 'a'] = out_idx[i];
  int64_t sum_shape[26], sum_idx[26] = {0};
  for (int q = 0; q < ns; q++) sum_shape[q] = extent[summed[q]];
  double complex total = 0;
  do {
    for (int q = 0; q < ns; q++) value[summed[q]] = sum_idx[q];
    int64_t ix[8], iy[8];
    for (size_t i = 0; i < strlen(xl); i++) ix[i] = value[xl[i] - 'a'];
    for (size_t i = 0; i < strlen(yl); i++) iy[i] = value[yl[i] - 'a'];
    total += th_num_get(x, ix) * th_num_get(y, iy);
  } while (ns > 0 && th_num_next_index(ns, sum_shape, sum_idx));
  return total;
}

static void gemm_thin_einsum_terms_match_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  struct {
    const char *x, *y, *out;
  } terms[] = {{"bi", "bi", "b"}, {"ij", "ij", ""}, {"i", "ij", "j"}, {"ij", "j", "i"}};
  int64_t extent[26];
  for (int l = 0; l < 26; l++) extent[l] = 3 + l % 5;
  extent['b' - 'a'] = 70, extent['i' - 'a'] = 130, extent['j' - 'a'] = 9;
  uint64_t state = 5;
  for (int di = 0; di < 4; di++)
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
      tl_dtype dt = dtypes[di];
      const char *labels[2] = {terms[t].x, terms[t].y};
      tl_tensor ops[2], out;
      for (int o = 0; o < 2; o++) {
        int64_t shape[8];
        int rank = (int)strlen(labels[o]);
        for (int i = 0; i < rank; i++) shape[i] = extent[labels[o][i] - 'a'];
        TH_CHECK_OK(tl_tensor_create(dt, rank, shape, &ops[o]));
        TH_NUM_FOR_EACH(idx, rank, shape)
        th_num_set_parts(&ops[o], idx, th_num_uniform(&state) - 0.5, th_num_uniform(&state));
      }
      char spec[32];
      snprintf(spec, sizeof spec, "%s,%s->%s", terms[t].x, terms[t].y, terms[t].out);
      const tl_tensor *in[2] = {&ops[0], &ops[1]};
      TH_CHECK_OK(tl_einsum(h.exec, spec, 2, in, &out));
      int out_rank = (int)strlen(terms[t].out);
      int64_t out_shape[8], scalar_idx[1] = {0};
      for (int i = 0; i < out_rank; i++) out_shape[i] = extent[terms[t].out[i] - 'a'];
      if (out_rank == 0) {
        double complex want =
            naive(&ops[0], terms[t].x, &ops[1], terms[t].y, "", scalar_idx, extent);
        TH_CHECK(th_num_close_enough(th_num_get(&out, scalar_idx), want, th_num_tolerance(dt) * 8,
                                     1300));
      } else {
        TH_NUM_FOR_EACH(idx, out_rank, out_shape) {
          double complex want =
              naive(&ops[0], terms[t].x, &ops[1], terms[t].y, terms[t].out, idx, extent);
          TH_CHECK(th_num_close_enough(th_num_get(&out, idx), want, th_num_tolerance(dt) * 8, 200));
        }
      }
      tl_tensor_release(&out);
      tl_tensor_release(&ops[0]);
      tl_tensor_release(&ops[1]);
    }
  th_held_close(&h);
}

/* One long dot (1 x k times k x 1, k past two chunks and not a whole number of them) through
 * tl_gemm_into: cut into chunks of TL__DOT_CHUNK (gemm_thin.c, gemm.c), the parts added in
 * order, then alpha and beta applied as a dot's are; the same within rounding as the naive
 * sum, on one thread and on two with the same bits. */
static void gemm_thin_long_dot_in_chunks_matches_naive(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  const int64_t k = 3 * TL__DOT_CHUNK + 7;
  uint64_t state = 11;
  for (int di = 0; di < 4; di++) {
    const tl_dtype dt = dtypes[di];
    const int cplx = tl_dtype_is_complex(dt);
    int64_t sa[2] = {1, k}, sb[2] = {k, 1}, sc[2] = {1, 1}, zero[2] = {0, 0};
    tl_tensor a, b, c1, c2;
    TH_CHECK_OK(tl_tensor_create(dt, 2, sa, &a));
    TH_CHECK_OK(tl_tensor_create(dt, 2, sb, &b));
    TH_CHECK_OK(tl_tensor_create(dt, 2, sc, &c1));
    TH_CHECK_OK(tl_tensor_create(dt, 2, sc, &c2));
    double complex want = 0;
    for (int64_t i = 0; i < k; i++) {
      const double complex x =
          th_num_cplx(th_num_uniform(&state), cplx ? th_num_uniform(&state) : 0);
      const double complex y =
          th_num_cplx(th_num_uniform(&state), cplx ? th_num_uniform(&state) : 0);
      th_num_store(dt, a.data, i, x);
      th_num_store(dt, b.data, i, y);
      want += th_num_load(dt, a.data, i) * th_num_load(dt, b.data, i);
    }
    const tl_scalar alpha = {2.0, cplx ? 0.5 : 0.0}, beta = {0.5, 0.0};
    const double complex c0 = th_num_cplx(3.0, cplx ? -1.0 : 0.0);
    th_num_set(&c1, zero, c0);
    th_num_set(&c2, zero, c0);
    TH_CHECK_OK(tl_gemm_into(one.exec, alpha, &a, &b, beta, &c1));
    TH_CHECK_OK(tl_gemm_into(two.exec, alpha, &a, &b, beta, &c2));
    want = th_num_cplx(alpha.re, alpha.im) * want + 0.5 * c0;
    const double complex got = th_num_get(&c1, zero);
    TH_CHECK(th_num_close_enough(got, want, th_num_tolerance(dt) * 8, 600));
    TH_CHECK(memcmp(c1.data, c2.data, tl_dtype_size(dt)) == 0);
    tl_tensor_release(&a), tl_tensor_release(&b), tl_tensor_release(&c1), tl_tensor_release(&c2);
  }
  /* the route takes such a product, and only such */
  tl__gemm_batch g;
  memset(&g, 0, sizeof g);
  g.dtype = TL_F64, g.m = 1, g.n = 1, g.k = 2 * TL__DOT_CHUNK, g.batches = 1;
  g.rsa = 1, g.csa = 1, g.rsb = 1, g.csb = 1;
  TH_CHECK(tl__gemm_thin_dot_chunks_fit(&g));
  g.k = 2 * TL__DOT_CHUNK - 1;
  TH_CHECK(!tl__gemm_thin_dot_chunks_fit(&g));
  g.k = 2 * TL__DOT_CHUNK, g.csa = 2;
  TH_CHECK(!tl__gemm_thin_dot_chunks_fit(&g));
  th_held_close(&one);
  th_held_close(&two);
}

TH_TEST_MAIN(TH_CASE(gemm_thin_kernel_matches_naive),
             TH_CASE(gemm_thin_kernel_declines_what_is_not_thin),
             TH_CASE(gemm_thin_core_matches_naive_at_every_isa),
             TH_CASE(gemm_thin_dot_bits_do_not_depend_on_alignment),
             TH_CASE(gemm_thin_dots_batch_matches_single_entries),
             TH_CASE(gemm_thin_streaming_dots_keep_each_entrys_bits),
             TH_CASE(gemm_thin_rows_batch_matches_single_entries),
             TH_CASE(gemm_thin_rows_large_batch_matches_single_entries),
             TH_CASE(gemm_thin_short_dots_match_single_dots),
             TH_CASE(gemm_thin_complex_groups_agree_at_every_isa),
             TH_CASE(gemm_thin_einsum_terms_match_naive),
             TH_CASE(gemm_thin_long_dot_in_chunks_matches_naive))
