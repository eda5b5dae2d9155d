/* tests/kernels/test_small_gemm.c: the small real GEMM path (src/kernels/small_gemm*.c):
 * the hand kernel at every instruction-set level this CPU has against a naive reference,
 * over random shapes and strided, negative-stride, row- and column-major operands, and
 * over shapes that reach every kind of register block it has (no write outside C's view);
 * tl__small_gemm (the routes' entry) against the same reference, generating no code on
 * repeated calls; and tl_gemm_into on never-seen shapes in every dtype
 * through views with negative strides; and the bits of tl__small_gemm, the same on every
 * call and every thread. */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/kernels.h"
#if TL_PROVIDER_BLIS
#include "kernels/providers.h"
#endif
/* libxsmm (an anchor here, never a provider of the library): its header is not warning-clean.
 * Where it is not installed (aarch64) the no-code check below counts on the library never
 * linking it (cmake/Providers.cmake) instead of on its registry. */
#if defined(TL_HAVE_XSMM)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <libxsmm.h>
#pragma GCC diagnostic pop
#endif
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

/* How often the repeat checks call a shape (more than once: a choice that changed with
 * repetition, as a JIT after some sightings would, shows). */
#define REPEATS 3

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t draw(int64_t lo, int64_t hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* A matrix view of rows x cols over `buf` with the given layout: 0 column-major with a
 * padded leading dimension, 1 row-major, 2 column-major with both strides negative, 3 every
 * other row and column (strides 2 and 2 * rows), 4 column-major with the leading dimension
 * rounded up to 16 (on the 64-byte-aligned buffers every column is vector-aligned). Returns
 * the element offset of (0, 0). */
static int64_t view(int layout, int64_t rows, int64_t cols, int64_t *rs, int64_t *cs) {
  switch (layout) {
    case 0:
      *rs = 1, *cs = rows + 3;
      return 0;
    case 4:
      *rs = 1, *cs = (rows + 15) / 16 * 16;
      return 0;
    case 1:
      *rs = cols, *cs = 1;
      return 0;
    case 2:
      *rs = -1, *cs = -rows;
      return rows * cols - 1;
    default:
      *rs = 2, *cs = 2 * rows;
      return 0;
  }
}

static double value(uint64_t *state) { return th_num_uniform(state) * 2.0 - 1.0; }

/* One call of the hand kernel at `isa` (or, when routed is 1, of tl__small_gemm) against
 * the naive sum, for dtype f32 or f64. */
static void check_one(int isa, int routed, tl_dtype dt, int64_t m, int64_t n, int64_t k, int la,
                      int lb, int lc, double alpha, double beta) {
  enum { BUF = 4 * 256 * 256 + 64 };
  static _Alignas(64) double abuf[BUF], bbuf[BUF], cbuf[BUF];
  static double want[256 * 256];
  int64_t rsa, csa, rsb, csb, rsc, csc;
  int64_t oa = view(la, m, k, &rsa, &csa), ob = view(lb, k, n, &rsb, &csb),
          oc = view(lc, m, n, &rsc, &csc);
  uint64_t state = (uint64_t)(m * 131 + n * 17 + k + 1);
  int f32 = dt == TL_F32;
  float *af = (float *)abuf, *bf = (float *)bbuf, *cf = (float *)cbuf;
  /* NaN everywhere outside the views (each lies in the first 2 (rows + 16) cols elements
   * of its buffer, and a little past), so a read outside them shows */
  int64_t spread = 2 * (m + k + 16) * (n > k ? n : k > 0 ? k : 1) + 64;
  size_t fill = spread < BUF ? (size_t)spread : (size_t)BUF;
  for (size_t i = 0; i < fill; i++) {
    if (f32)
      af[i] = bf[i] = cf[i] = NAN;
    else
      abuf[i] = bbuf[i] = cbuf[i] = NAN;
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) {
      double v = value(&state);
      if (f32)
        af[oa + i * rsa + p * csa] = (float)v;
      else
        abuf[oa + i * rsa + p * csa] = v;
    }
  for (int64_t p = 0; p < k; p++)
    for (int64_t j = 0; j < n; j++) {
      double v = value(&state);
      if (f32)
        bf[ob + p * rsb + j * csb] = (float)v;
      else
        bbuf[ob + p * rsb + j * csb] = v;
    }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      /* beta 0 must not read C: leave NaN there */
      double v = beta == 0.0 ? NAN : value(&state);
      if (f32)
        cf[oc + i * rsc + j * csc] = (float)v;
      else
        cbuf[oc + i * rsc + j * csc] = v;
    }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) {
        s += f32 ? (double)af[oa + i * rsa + p * csa] * (double)bf[ob + p * rsb + j * csb]
                 : abuf[oa + i * rsa + p * csa] * bbuf[ob + p * rsb + j * csb];
      }
      double c0 = f32 ? (double)cf[oc + i * rsc + j * csc] : cbuf[oc + i * rsc + j * csc];
      want[i + j * m] = alpha * s + (beta == 0.0 ? 0.0 : beta * c0);
    }
  const void *a = f32 ? (const void *)(af + oa) : (const void *)(abuf + oa);
  const void *b = f32 ? (const void *)(bf + ob) : (const void *)(bbuf + ob);
  void *c = f32 ? (void *)(cf + oc) : (void *)(cbuf + oc);
  tl_scalar al = tl_scalar_real(alpha), be = tl_scalar_real(beta);
  if (routed)
    TH_CHECK(tl__small_gemm(dt, m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc));
  else
    tl__small_gemm_kernel(isa, dt, m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
  /* nothing written to C outside its view: count the non-NaN elements of the buffer */
  int64_t set = 0;
  for (size_t i = 0; i < fill; i++) set += f32 ? !isnan(cf[i]) : !isnan(cbuf[i]);
  if (set != m * n) {
    char what[160];
    snprintf(what, sizeof what, "isa %d %s m %lld n %lld k %lld layout %d: %lld elements set", isa,
             tl_dtype_name(dt), (long long)m, (long long)n, (long long)k, lc, (long long)set);
    th_test_fail_at(__FILE__, __LINE__, what);
  }
  double tol = (f32 ? 2e-6 : 1e-14) * (double)(k + 1);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double got = f32 ? (double)cf[oc + i * rsc + j * csc] : cbuf[oc + i * rsc + j * csc];
      if (!(fabs(got - want[i + j * m]) <= tol * (1.0 + fabs(want[i + j * m])))) {
        char what[256];
        snprintf(what, sizeof what,
                 "isa %d routed %d %s m %lld n %lld k %lld layouts %d %d %d alpha %g beta %g: "
                 "c(%lld, %lld) = %.17g, want %.17g",
                 isa, routed, tl_dtype_name(dt), (long long)m, (long long)n, (long long)k, la, lb,
                 lc, alpha, beta, (long long)i, (long long)j, got, want[i + j * m]);
        th_test_fail_at(__FILE__, __LINE__, what);
      }
    }
}

static void small_gemm_kernel_matches_naive_at_every_isa(void) {
  const double alphas[3] = {1.0, -0.75, 2.0}, betas[3] = {0.0, 1.0, -1.5};
  for (int isa = 0; isa <= tl__small_gemm_isa(); isa++)
    for (int dti = 0; dti < 2; dti++) {
      tl_dtype dt = dti ? TL_F32 : TL_F64;
      /* a few edges, then random shapes (small_gemm_kernel_covers_every_block covers the
       * register blocks one by one) */
      static const int64_t fixed[][3] = {{1, 1, 1},
                                         {1, 7, 3},
                                         {7, 1, 5},
                                         {4, 4, 0},
                                         {16, 4, 8},
                                         {17, 5, 9},
                                         {32, 8, 1},
                                         {33, 9, 64},
                                         {64, 64, 64},
                                         {3, 64, 200},
                                         {256, 4, 2},
                                         /* tall or wide with a narrow other side */
                                         {1000, 3, 5},
                                         {3, 1000, 5},
                                         {600, 6, 4}};
      int count = (int)(sizeof fixed / sizeof fixed[0]);
      for (int t = 0; t < count + 40; t++) {
        int64_t m, n, k;
        if (t < count) {
          m = fixed[t][0], n = fixed[t][1], k = fixed[t][2];
        } else {
          m = draw(1, 64), n = draw(1, 64), k = draw(1, 64);
        }
        int la = (int)draw(0, 4), lb = (int)draw(0, 4), lc = (int)draw(0, 4);
        if (t < 4 * 4) la = t % 4, lc = t / 4 % 4;
        check_one(isa, 0, dt, m, n, k, la, lb, lc, alphas[t % 3], betas[t / 3 % 3]);
      }
    }
}

/* Shapes that reach every register block of the hand kernel at every level, in f32 and
 * f64: row counts that leave each remainder of 4, 8 and 16 rows (every count of whole
 * vectors, 1 to 4, and every partial last vector, for vectors of 4, 8 and 16 lanes), column
 * counts that leave every remainder of 3, 4 and 6 columns, k on both sides of 16 (where the
 * row blocking changes for A's columns off vector alignment) and 0; A aligned, A at a
 * padded leading dimension, A copied (row-major A); C column-major and row-major; alpha 1
 * beta 0 and 1 (C from the registers) and otherwise (C from a spill). */
static void small_gemm_kernel_covers_every_block(void) {
  static const int64_t ms[] = {1,  2,  3,  4,  5,  7,  8,  9,  11, 12, 13, 15, 16, 17,
                               19, 20, 21, 23, 24, 25, 28, 29, 31, 32, 33, 36, 37, 40,
                               44, 47, 48, 49, 52, 53, 56, 60, 63, 64, 65, 68, 69, 80};
  static const int64_t ns[] = {1, 2, 3, 4, 5, 7, 11, 13};
  static const int64_t ks[] = {16, 1, 17, 15, 0, 40};
  static const double alphas[3] = {1.0, 1.0, -0.5}, betas[3] = {0.0, 1.0, 0.75};
  int count = 0;
  for (int isa = 1; isa <= tl__small_gemm_isa(); isa++)
    for (int dti = 0; dti < 2; dti++)
      for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
          int64_t m = ms[mi], n = ns[ni], k = ks[(mi + ni) % 6];
          if (m * n * k > 64 * 64 * 64) continue;
          /* A aligned, padded or row-major; C column-major (aligned or padded) or row-major */
          static const int las[3] = {4, 0, 1}, lcs[4] = {4, 0, 1, 4};
          int la = las[(mi + 2 * ni) % 3], lc = lcs[(mi / 3 + ni) % 4];
          int mode = (int)((mi + ni + (size_t)dti) % 3);
          check_one(isa, 0, dti ? TL_F32 : TL_F64, m, n, k, la, 4, lc, alphas[mode], betas[mode]);
          count++;
        }
  TH_CHECK(count > 0 || tl__small_gemm_isa() == 0);
}

#if defined(TL_HAVE_XSMM)
static size_t registry_size(void) {
  libxsmm_registry_info info;
  memset(&info, 0, sizeof info);
  libxsmm_get_registry_info(&info);
  return info.size;
}
#else
static size_t registry_size(void) { return 0; } /* no libxsmm in the process: no registry */
#endif

static void small_gemm_generates_no_code(void) {
  tl__providers_init();
  for (int dti = 0; dti < 2; dti++) {
    tl_dtype dt = dti ? TL_F32 : TL_F64;
    /* shapes no other case uses (leading dimensions 3 over the rows) */
    int64_t m = 13 + dti, n = 11, k = 9;
    size_t before = registry_size();
    for (int call = 1; call <= 2 * REPEATS; call++) {
      /* layout 0: column-major, which libxsmm could take; beta 1 then 0 */
      check_one(-1, 1, dt, m, n, k, 0, 0, 0, 1.0, call % 2 ? 1.0 : 0.0);
      /* a row-major C (run as C^T = B^T A^T) */
      check_one(-1, 1, dt, m + 21, n + 3, k, 1, 1, 1, 1.0, 0.0);
      /* alpha 2, strided rows */
      check_one(-1, 1, dt, m, n, k, 0, 0, 0, 2.0, 0.0);
      check_one(-1, 1, dt, m, n, k, 3, 2, 3, 1.0, 1.0);
    }
    /* however often a shape repeats, the routes never generate a libxsmm kernel */
    TH_CHECK(registry_size() == before);
  }
  /* out of reach: complex, or too big */
  double x[4] = {0};
  TH_CHECK(!tl__small_gemm(TL_C128, 1, 1, 1, tl_scalar_real(1), x, 1, 1, x, 1, 1, tl_scalar_real(0),
                           x + 2, 1, 1));
  TH_CHECK(!tl__small_gemm_fits(TL_F64, 65, 64, 64));
  TH_CHECK(tl__small_gemm_fits(TL_F64, 4096, 8, 8) && tl__small_gemm_fits(TL_F32, 2, 4096, 2));
  TH_CHECK(!tl__small_gemm_fits(TL_F64, 4097, 1, 1) && !tl__small_gemm_fits(TL_F32, 1, 4097, 1));
  TH_CHECK(!tl__small_gemm_fits(TL_F64, 2, 2, TL__SMALL_GEMM_MAX_K + 1));
}

/* tl_gemm_into on a stream of shapes this process has not seen, every dtype, through
 * negative-stride views of a and b and a row-major c, called REPEATS + 1 times per shape
 * (a first call, then repeats): every result agrees with the naive product. */
static void gemm_new_shapes_match_naive_in_every_dtype(void) {
  th_held h;
  th_held_open(&h, 1);
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  for (int di = 0; di < 4; di++)
    for (int s = 0; s < 12; s++) {
      tl_dtype dt = dtypes[di];
      int64_t m = draw(1, 40), n = draw(1, 40), k = draw(1, 40);
      int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {n, m};
      tl_tensor a, b, ct, c;
      TH_CHECK_OK(tl_tensor_create(dt, 2, sa, &a));
      TH_CHECK_OK(tl_tensor_create(dt, 2, sb, &b));
      TH_CHECK_OK(tl_tensor_create(dt, 2, sc, &ct));
      uint64_t state = (uint64_t)s + 7;
      TH_NUM_FOR_EACH(idx, 2, sa) th_num_set_parts(&a, idx, value(&state), value(&state));
      TH_NUM_FOR_EACH(idx, 2, sb) th_num_set_parts(&b, idx, value(&state), value(&state));
      /* a and b reversed along both axes (negative strides); c the transpose of ct */
      tl_tensor ar = a, br = b;
      for (int ax = 0; ax < 2; ax++) {
        ar.offset += (ar.shape[ax] - 1) * ar.strides[ax], ar.strides[ax] = -ar.strides[ax];
        br.offset += (br.shape[ax] - 1) * br.strides[ax], br.strides[ax] = -br.strides[ax];
      }
      int perm[2] = {1, 0};
      TH_CHECK_OK(tl_tensor_permute_view(&ct, perm, &c));
      int cplx = tl_dtype_is_complex(dt);
      for (int call = 0; call < REPEATS + 1; call++) {
        TH_NUM_FOR_EACH(idx, 2, sc) th_num_set_parts(&ct, idx, NAN, NAN);
        TH_CHECK_OK(tl_gemm_into(h.exec, tl_scalar_real(1.0), &ar, &br, tl_scalar_real(0.0), &c));
        TH_NUM_FOR_EACH(idx, 2, sc) {
          int64_t i = idx[1], j = idx[0];
          double complex want = 0;
          double scale = 1;
          for (int64_t p = 0; p < k; p++) {
            int64_t ia[2] = {m - 1 - i, k - 1 - p}, ib[2] = {k - 1 - p, n - 1 - j};
            double complex x = th_num_get(&a, ia), y = th_num_get(&b, ib);
            if (!cplx) x = creal(x), y = creal(y);
            want += x * y;
            scale += cabs(x * y);
          }
          TH_CHECK(
              th_num_close_enough(th_num_get(&ct, idx), want, th_num_tolerance(dt) * 4, scale));
        }
      }
      tl_tensor_release(&a), tl_tensor_release(&b), tl_tensor_release(&ct);
    }
  th_held_close(&h);
}

/* Shapes where the hand kernel and libxsmm round differently (found by a sweep), plus two
 * common ones. */
static const int64_t same_bits_shapes[][3] = {{36, 10, 22}, {34, 20, 29}, {5, 4, 15},
                                              {40, 7, 36},  {64, 64, 32}, {8, 8, 8}};
enum { SAME_BITS_SHAPES = 6, SAME_BITS_CALLS = 2 * REPEATS };

typedef struct same_bits_run {
  double out[SAME_BITS_SHAPES][SAME_BITS_CALLS][64 * 64];
} same_bits_run;

static void *same_bits_calls(void *arg) {
  same_bits_run *run = arg;
  static double a[64 * 64], b[64 * 64];
  uint64_t state = 99;
  for (int i = 0; i < 64 * 64; i++) a[i] = value(&state), b[i] = value(&state);
  for (int s = 0; s < SAME_BITS_SHAPES; s++) {
    int64_t m = same_bits_shapes[s][0], n = same_bits_shapes[s][1], k = same_bits_shapes[s][2];
    for (int call = 0; call < SAME_BITS_CALLS; call++)
      TH_CHECK(tl__small_gemm(TL_F64, m, n, k, tl_scalar_real(1), a, 1, m, b, 1, k,
                              tl_scalar_real(0), run->out[s][call], 1, m));
  }
  return NULL;
}

/* tl__small_gemm gives the same bits on every call of a shape and on every thread: the
 * kernel it picks depends on the shape alone (a tl_map item's result must not depend on
 * which lane ran it, or on what that lane ran before). */
static void small_gemm_same_bits_on_every_call_and_thread(void) {
  static same_bits_run here, there;
  same_bits_calls(&here);
  pthread_t thread;
  TH_CHECK(pthread_create(&thread, NULL, same_bits_calls, &there) == 0);
  TH_CHECK(pthread_join(thread, NULL) == 0);
  for (int s = 0; s < SAME_BITS_SHAPES; s++) {
    size_t bytes = sizeof(double) * (size_t)(same_bits_shapes[s][0] * same_bits_shapes[s][1]);
    for (int call = 0; call < SAME_BITS_CALLS; call++) {
      TH_CHECK(memcmp(here.out[s][call], here.out[s][0], bytes) == 0);
      TH_CHECK(memcmp(there.out[s][call], here.out[s][0], bytes) == 0);
    }
  }
}

TH_TEST_MAIN(TH_CASE(small_gemm_kernel_matches_naive_at_every_isa),
             TH_CASE(small_gemm_kernel_covers_every_block), TH_CASE(small_gemm_generates_no_code),
             TH_CASE(gemm_new_shapes_match_naive_in_every_dtype),
             TH_CASE(small_gemm_same_bits_on_every_call_and_thread))
