/* tests/linalg/test_linalg.c: the linear algebra routes by what they promise: reconstruction
 * residuals (A = QR, A = U S V^H, PA = LU, A V = V W, op(T) X = B), orthogonality, ordering,
 * truncation by rank and tolerance, across the four dtypes, input layouts (column-major,
 * row-major, negative stride, padded) and shapes including size 0 and 1; then a table of
 * malformed calls that must each fail with a typed status and a message and write nothing,
 * and the steady-state allocation count. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/linalg.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rng_uniform(void) { return th_num_uniform(&rng_state); }

/* ---- Matrix access in double complex ----------------------------------------------- */

static int64_t rows_of(const tl_tensor *t) { return t->rank >= 1 ? t->shape[0] : 1; }
static int64_t cols_of(const tl_tensor *t) { return t->rank == 2 ? t->shape[1] : 1; }

static double complex get(const tl_tensor *t, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  return th_num_get(t, idx);
}

static void set(const tl_tensor *t, int64_t i, int64_t j, double complex v) {
  int64_t idx[2] = {i, j};
  th_num_set(t, idx, v);
}

static double tol_of(tl_dtype dtype) { return (dtype == TL_F32 || dtype == TL_C64) ? 1e-5 : 1e-13; }

/* A matrix (or vector, rank 1) in one of four layouts, owning its storage. */
typedef struct mat {
  tl_tensor storage, view;
} mat;

enum { COL = 0, ROW = 1, NEG = 2, PAD = 3, LAYOUTS = 4 };

static void mat_make(mat *m, tl_dtype dtype, int rank, int64_t rows, int64_t cols, int layout) {
  int64_t shape[2] = {rows, cols};
  if (layout == PAD) {
    int64_t padded[2] = {2 * rows + 1, 2 * cols + 1};
    TH_CHECK_OK(tl_tensor_create(dtype, rank, padded, &m->storage));
    m->view = m->storage;
    m->view.shape[0] = rows;
    if (rank == 2) m->view.shape[1] = cols;
    m->view.strides[0] = 2;
  } else if (layout == ROW) {
    TH_CHECK_OK(tl_tensor_create_row_major(dtype, rank, shape, &m->storage));
    m->view = m->storage;
  } else {
    TH_CHECK_OK(tl_tensor_create(dtype, rank, shape, &m->storage));
    m->view = m->storage;
    if (layout == NEG && rows > 0) {
      m->view.offset = (rows - 1) * m->view.strides[0];
      m->view.strides[0] = -m->view.strides[0];
    }
  }
  m->view.owned = NULL;
}

static void mat_random(const tl_tensor *t) {
  for (int64_t j = 0; j < cols_of(t); j++) {
    for (int64_t i = 0; i < rows_of(t); i++) {
      double im = tl_dtype_is_complex(t->dtype) ? rng_uniform() : 0.0;
      set(t, i, j, rng_uniform() + im * I);
    }
  }
}

static void mat_fill(const tl_tensor *t, double v) {
  for (int64_t j = 0; j < cols_of(t); j++) {
    for (int64_t i = 0; i < rows_of(t); i++) set(t, i, j, v);
  }
}

static int mat_all(const tl_tensor *t, double v) {
  for (int64_t j = 0; j < cols_of(t); j++) {
    for (int64_t i = 0; i < rows_of(t); i++) {
      if (get(t, i, j) != v) return 0;
    }
  }
  return 1;
}

static void mat_free(mat *m) { tl_tensor_release(&m->storage); }

static double fro(const tl_tensor *t) {
  double s = 0;
  for (int64_t j = 0; j < cols_of(t); j++) {
    for (int64_t i = 0; i < rows_of(t); i++) s += pow(cabs(get(t, i, j)), 2);
  }
  return sqrt(s);
}

/* ||a - b c|| (b's first `inner` columns, c's first `inner` rows), Frobenius. */
static double product_residual(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                               int64_t inner) {
  double s = 0;
  for (int64_t i = 0; i < rows_of(a); i++) {
    for (int64_t j = 0; j < cols_of(a); j++) {
      double complex v = get(a, i, j);
      for (int64_t k = 0; k < inner; k++) v -= get(b, i, k) * get(c, k, j);
      s += pow(cabs(v), 2);
    }
  }
  return sqrt(s);
}

/* ||a - u diag(s) vt|| over the first k singular triplets (s a vector), Frobenius. */
static double svd_residual(const tl_tensor *a, const tl_tensor *u, const tl_tensor *s,
                           const tl_tensor *vt, int64_t k) {
  double sum = 0;
  for (int64_t i = 0; i < rows_of(a); i++) {
    for (int64_t j = 0; j < cols_of(a); j++) {
      double complex v = get(a, i, j);
      for (int64_t q = 0; q < k; q++) v -= get(u, i, q) * get(s, q, 0) * get(vt, q, j);
      sum += pow(cabs(v), 2);
    }
  }
  return sqrt(sum);
}

/* ||Q^H Q - I|| over the first k columns of q. */
static double orthonormality(const tl_tensor *q, int64_t k) {
  double s = 0;
  for (int64_t a = 0; a < k; a++) {
    for (int64_t b = 0; b < k; b++) {
      double complex v = a == b ? -1.0 : 0.0;
      for (int64_t i = 0; i < rows_of(q); i++) v += conj(get(q, i, a)) * get(q, i, b);
      s += pow(cabs(v), 2);
    }
  }
  return sqrt(s);
}

/* The same for rows of vt (vt vt^H - I). */
static double row_orthonormality(const tl_tensor *vt, int64_t k) {
  double s = 0;
  for (int64_t a = 0; a < k; a++) {
    for (int64_t b = 0; b < k; b++) {
      double complex v = a == b ? -1.0 : 0.0;
      for (int64_t j = 0; j < cols_of(vt); j++) v += get(vt, a, j) * conj(get(vt, b, j));
      s += pow(cabs(v), 2);
    }
  }
  return sqrt(s);
}

typedef struct shape2 {
  int64_t m, n;
} shape2;

static const shape2 shapes[] = {{0, 0}, {0, 3}, {3, 0}, {1, 1},   {1, 5},  {5, 1},
                                {4, 4}, {7, 3}, {3, 7}, {33, 17}, {16, 40}};
#define SHAPES (sizeof shapes / sizeof shapes[0])

static int report(int ok, const char *what, tl_dtype dtype, int64_t m, int64_t n, int layout,
                  double value) {
  if (!ok) {
    fprintf(stderr, "  %s: %s %lldx%lld layout %d: %g\n", what, tl_dtype_name(dtype), (long long)m,
            (long long)n, layout, value);
  }
  return ok;
}

/* ---- QR -------------------------------------------------------------------------------- */

static void linalg_qr_reconstructs_with_orthonormal_q(void) {
  th_held h;
  th_held_open(&h, 2);
  int failures = 0;
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    for (size_t s = 0; s < SHAPES; s++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        int64_t m = shapes[s].m, n = shapes[s].n, k = m < n ? m : n;
        double tol = tol_of((tl_dtype)dtype) * (double)(m + n + 1);
        mat a;
        mat_make(&a, (tl_dtype)dtype, 2, m, n, layout);
        mat_random(&a.view);
        tl_tensor q, r;
        int fresh = layout % 2 == 0;
        mat qo, ro;
        if (fresh) {
          TH_CHECK_OK(tl_qr(h.exec, &a.view, &q, &r));
        } else {
          mat_make(&qo, (tl_dtype)dtype, 2, m, k, ROW);
          mat_make(&ro, (tl_dtype)dtype, 2, k, n, NEG);
          q = qo.view;
          r = ro.view;
          TH_CHECK_OK(tl_qr_into(h.exec, &a.view, &q, &r));
        }
        TH_CHECK(q.shape[0] == m && q.shape[1] == k && r.shape[0] == k && r.shape[1] == n);
        double scale = fro(&a.view) + 1.0;
        double res = product_residual(&a.view, &q, &r, k) / scale;
        failures += !report(res <= tol, "qr residual", (tl_dtype)dtype, m, n, layout, res);
        double orth = orthonormality(&q, k);
        failures += !report(orth <= tol, "qr orthonormality", (tl_dtype)dtype, m, n, layout, orth);
        for (int64_t j = 0; j < n; j++) {
          for (int64_t i = j + 1; i < k; i++) failures += get(&r, i, j) != 0.0;
        }
        if (layout == COL) {
          /* Dense column-major outputs: tl_qr_into factors in q itself (when m >= n); the
           * same LAPACK calls on the same numbers, so the same bits as the fresh result. */
          mat qc, rc;
          mat_make(&qc, (tl_dtype)dtype, 2, m, k, COL);
          mat_make(&rc, (tl_dtype)dtype, 2, k, n, COL);
          TH_CHECK_OK(tl_qr_into(h.exec, &a.view, &qc.view, &rc.view));
          for (int64_t j = 0; j < k; j++)
            for (int64_t i = 0; i < m; i++) failures += get(&qc.view, i, j) != get(&q, i, j);
          for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < k; i++) failures += get(&rc.view, i, j) != get(&r, i, j);
          mat_free(&qc);
          mat_free(&rc);
        }
        if (fresh) {
          tl_tensor_release(&q);
          tl_tensor_release(&r);
        } else {
          mat_free(&qo);
          mat_free(&ro);
        }
        mat_free(&a);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* A rank-r m x n matrix: (m x r random) (r x n random). */
static void low_rank(const tl_tensor *a, int64_t r) {
  tl_dtype dtype = a->dtype;
  int64_t m = rows_of(a), n = cols_of(a);
  double complex *left = malloc(sizeof(double complex) * (size_t)(m * r + 1));
  double complex *right = malloc(sizeof(double complex) * (size_t)(r * n + 1));
  int complex_type = tl_dtype_is_complex(dtype);
  for (int64_t i = 0; i < m * r; i++)
    left[i] = rng_uniform() + (complex_type ? rng_uniform() * I : 0);
  for (int64_t i = 0; i < r * n; i++)
    right[i] = rng_uniform() + (complex_type ? rng_uniform() * I : 0);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double complex v = 0;
      for (int64_t k = 0; k < r; k++) v += left[i + k * m] * right[k + j * r];
      set(a, i, j, v);
    }
  }
  free(left);
  free(right);
}

static void linalg_qrcp_reveals_rank_and_reconstructs(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  /* Rank 5 stops inside the first blocked step of the truncated factorization; rank 19 of
   * a 40 x 36 matrix takes three steps before the cut. */
  static const int64_t sizes[2][3] = {{20, 14, 5}, {40, 36, 19}};
  for (int size = 0; size < 2; size++)
    for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        int64_t m = sizes[size][0], n = sizes[size][1], r = sizes[size][2];
        mat a;
        mat_make(&a, (tl_dtype)dtype, 2, m, n, layout);
        low_rank(&a.view, r);
        double single = tol_of((tl_dtype)dtype) > 1e-8;
        tl_truncation t = {sizeof(tl_truncation), 0, single ? 1e-4 : 1e-10, 0.0};
        int64_t perm[36], rank = -1;
        tl_tensor q, rr;
        TH_CHECK_OK(tl_qrcp(h.exec, &t, &a.view, &q, &rr, perm, &rank));
        failures += !report(rank == r, "qrcp rank", (tl_dtype)dtype, m, n, layout, (double)rank);
        /* perm is a permutation; A[:, perm] = Q R. */
        int seen[36] = {0};
        for (int j = 0; j < n; j++) {
          TH_CHECK(perm[j] >= 0 && perm[j] < n);
          if (perm[j] >= 0 && perm[j] < n) seen[perm[j]]++;
        }
        for (int j = 0; j < n; j++) TH_CHECK(seen[j] == 1);
        double res = 0, scale = fro(&a.view);
        for (int64_t i = 0; i < m; i++) {
          for (int64_t j = 0; j < n; j++) {
            double complex v = get(&a.view, i, perm[j]);
            for (int64_t k = 0; k < rank; k++) v -= get(&q, i, k) * get(&rr, k, j);
            res += pow(cabs(v), 2);
          }
        }
        res = sqrt(res) / scale;
        double tol = single ? 1e-4 : 1e-12;
        failures += !report(res <= tol, "qrcp residual", (tl_dtype)dtype, m, n, layout, res);
        failures += !report(orthonormality(&q, rank) <= tol, "qrcp orthonormality", (tl_dtype)dtype,
                            m, n, layout, orthonormality(&q, rank));
        for (int64_t i = 1; i < rank; i++) {
          TH_CHECK(cabs(get(&rr, i, i)) <= cabs(get(&rr, i - 1, i - 1)) * (1 + 1e-6));
        }
        /* The interpolation use: solve R11 X = R12 with the triangular solve. */
        if (rank > 0) {
          tl_tensor r11 = rr, r12 = rr, x;
          r11.shape[1] = rank;
          r12.shape[1] = n - rank;
          r12.offset = rr.offset + rank * rr.strides[1];
          TH_CHECK_OK(tl_triangular_solve(h.exec, TL_LEFT, TL_UPPER, TL_NO_TRANS, TL_NON_UNIT, &r11,
                                          &r12, &x));
          double tres = product_residual(&r12, &r11, &x, rank) / (fro(&r12) + 1);
          failures += !report(tres <= tol, "qrcp R11 \\ R12", (tl_dtype)dtype, m, n, layout, tres);
          tl_tensor_release(&x);
        }
        /* The _into form with a cap: c = 3 columns, rank 3. */
        tl_truncation capped = {sizeof(tl_truncation), 3, 0.0, 0.0};
        mat qo, ro;
        mat_make(&qo, (tl_dtype)dtype, 2, m, 3, COL);
        mat_make(&ro, (tl_dtype)dtype, 2, 3, n, ROW);
        int64_t rank3 = -1;
        TH_CHECK_OK(tl_qrcp_into(h.exec, &capped, &a.view, &qo.view, &ro.view, perm, &rank3));
        TH_CHECK(rank3 == 3);
        mat_free(&qo);
        mat_free(&ro);
        tl_tensor_release(&q);
        tl_tensor_release(&rr);
        mat_free(&a);
      }
    }
  /* Size 0 and 1. */
  for (int s = 0; s < 3; s++) {
    int64_t m = s == 2 ? 1 : 0, n = s == 0 ? 0 : 1;
    mat a;
    mat_make(&a, TL_F64, 2, m, n, COL);
    mat_fill(&a.view, 2.0);
    int64_t perm[1] = {-5}, rank = -1;
    tl_tensor q, r;
    TH_CHECK_OK(tl_qrcp(h.exec, NULL, &a.view, &q, &r, perm, &rank));
    TH_CHECK(rank == (m < n ? m : n));
    if (n == 1) TH_CHECK(perm[0] == 0);
    tl_tensor_release(&q);
    tl_tensor_release(&r);
    mat_free(&a);
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* ---- SVD ------------------------------------------------------------------------------- */

static void linalg_svd_reconstructs_with_orthonormal_factors(void) {
  th_held h;
  th_held_open(&h, 2);
  int failures = 0;
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    tl_dtype real = tl_dtype_real((tl_dtype)dtype);
    for (size_t s = 0; s < SHAPES; s++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        int64_t m = shapes[s].m, n = shapes[s].n, k = m < n ? m : n;
        double tol = tol_of((tl_dtype)dtype) * (double)(m + n + 1);
        mat a;
        mat_make(&a, (tl_dtype)dtype, 2, m, n, layout);
        mat_random(&a.view);
        tl_tensor u, sv, vt;
        int64_t rank = -1;
        int fresh = layout % 2 == 1;
        mat uo, so, vo;
        if (fresh) {
          TH_CHECK_OK(tl_svd(h.exec, NULL, &a.view, &u, &sv, &vt, &rank));
        } else {
          mat_make(&uo, (tl_dtype)dtype, 2, m, k, NEG);
          mat_make(&so, real, 1, k, 1, PAD);
          mat_make(&vo, (tl_dtype)dtype, 2, k, n, ROW);
          u = uo.view;
          sv = so.view;
          vt = vo.view;
          TH_CHECK_OK(tl_svd_into(h.exec, NULL, &a.view, &u, &sv, &vt, &rank));
        }
        TH_CHECK(rank == k);
        /* u diag(s) vt == a */
        double res = svd_residual(&a.view, &u, &sv, &vt, k) / (fro(&a.view) + 1);
        failures += !report(res <= tol, "svd residual", (tl_dtype)dtype, m, n, layout, res);
        failures += !report(orthonormality(&u, k) <= tol, "svd u", (tl_dtype)dtype, m, n, layout,
                            orthonormality(&u, k));
        failures += !report(row_orthonormality(&vt, k) <= tol, "svd vt", (tl_dtype)dtype, m, n,
                            layout, row_orthonormality(&vt, k));
        for (int64_t q = 0; q < k; q++) {
          TH_CHECK(cimag(get(&sv, q, 0)) == 0 && creal(get(&sv, q, 0)) >= 0);
          if (q > 0) TH_CHECK(creal(get(&sv, q, 0)) <= creal(get(&sv, q - 1, 0)));
        }
        /* Values only agree with the full run. */
        tl_tensor s_only;
        TH_CHECK_OK(tl_svd(h.exec, NULL, &a.view, NULL, &s_only, NULL, NULL));
        for (int64_t q = 0; q < k; q++) {
          double d = cabs(get(&s_only, q, 0) - get(&sv, q, 0));
          failures += !report(d <= tol * (1 + creal(get(&sv, 0, 0))), "svd values only",
                              (tl_dtype)dtype, m, n, layout, d);
        }
        tl_tensor_release(&s_only);
        if (fresh) {
          tl_tensor_release(&u);
          tl_tensor_release(&sv);
          tl_tensor_release(&vt);
        } else {
          mat_free(&uo);
          mat_free(&so);
          mat_free(&vo);
        }
        mat_free(&a);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void linalg_svd_truncates_by_rank_and_tolerance(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    tl_dtype real = tl_dtype_real((tl_dtype)dtype);
    int single = tol_of((tl_dtype)dtype) > 1e-8;
    int64_t m = 18, n = 12, r = 4;
    mat a;
    mat_make(&a, (tl_dtype)dtype, 2, m, n, COL);
    low_rank(&a.view, r);
    /* By tolerance: the numerical rank. */
    tl_truncation by_tol = {sizeof(tl_truncation), 0, single ? 1e-4 : 1e-10, 0.0};
    tl_tensor u, s, vt;
    int64_t rank = -1;
    TH_CHECK_OK(tl_svd(h.exec, &by_tol, &a.view, &u, &s, &vt, &rank));
    failures += !report(rank == r && u.shape[1] == r && s.shape[0] == r && vt.shape[0] == r,
                        "svd rank by tolerance", (tl_dtype)dtype, m, n, 0, (double)rank);
    tl_tensor_release(&u);
    tl_tensor_release(&s);
    tl_tensor_release(&vt);
    /* By absolute tolerance above everything: rank 0, empty factors. */
    tl_truncation all_cut = {sizeof(tl_truncation), 0, 0.0, 1e30};
    TH_CHECK_OK(tl_svd(h.exec, &all_cut, &a.view, &u, &s, &vt, &rank));
    TH_CHECK(rank == 0 && u.shape[1] == 0 && s.shape[0] == 0 && vt.shape[0] == 0);
    tl_tensor_release(&u);
    tl_tensor_release(&s);
    tl_tensor_release(&vt);
    /* By rank on a full-rank matrix: the residual is the tail of the spectrum
     * (Eckart-Young), and the _into outputs beyond the rank... are exactly the cap. */
    mat full;
    mat_make(&full, (tl_dtype)dtype, 2, m, n, ROW);
    mat_random(&full.view);
    tl_tensor all_s;
    TH_CHECK_OK(tl_svd(h.exec, NULL, &full.view, NULL, &all_s, NULL, NULL));
    tl_truncation capped = {sizeof(tl_truncation), 5, 0.0, 0.0};
    mat uo, so, vo;
    mat_make(&uo, (tl_dtype)dtype, 2, m, 5, COL);
    mat_make(&so, real, 1, 5, 1, COL);
    mat_make(&vo, (tl_dtype)dtype, 2, 5, n, COL);
    TH_CHECK_OK(tl_svd_into(h.exec, &capped, &full.view, &uo.view, &so.view, &vo.view, &rank));
    TH_CHECK(rank == 5);
    double res = svd_residual(&full.view, &uo.view, &so.view, &vo.view, 5), tail = 0;
    for (int64_t q = 5; q < all_s.shape[0]; q++) tail += pow(creal(get(&all_s, q, 0)), 2);
    double d = fabs(res - sqrt(tail)) / sqrt(tail);
    failures +=
        !report(d <= (single ? 1e-4 : 1e-10), "svd Eckart-Young", (tl_dtype)dtype, m, n, 0, d);
    /* A tolerance that keeps 2 of the 5 allowed: the rest of the outputs is zeroed. */
    double s0 = creal(get(&all_s, 0, 0)), s2 = creal(get(&all_s, 2, 0));
    double s1 = creal(get(&all_s, 1, 0));
    tl_truncation mid = {sizeof(tl_truncation), 5, (s1 + s2) / 2 / s0, 0.0};
    mat_fill(&uo.view, 9.0);
    mat_fill(&so.view, 9.0);
    mat_fill(&vo.view, 9.0);
    TH_CHECK_OK(tl_svd_into(h.exec, &mid, &full.view, &uo.view, &so.view, &vo.view, &rank));
    TH_CHECK(rank == 2);
    for (int64_t q = 2; q < 5; q++) {
      TH_CHECK(get(&so.view, q, 0) == 0.0);
      for (int64_t i = 0; i < m; i++) TH_CHECK(get(&uo.view, i, q) == 0.0);
      for (int64_t j = 0; j < n; j++) TH_CHECK(get(&vo.view, q, j) == 0.0);
    }
    tl_tensor_release(&all_s);
    mat_free(&uo);
    mat_free(&so);
    mat_free(&vo);
    mat_free(&full);
    mat_free(&a);
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* ---- LU and solves ---------------------------------------------------------------------- */

static void linalg_lu_reconstructs_and_solves(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    for (size_t s = 0; s < SHAPES; s++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        int64_t m = shapes[s].m, n = shapes[s].n, k = m < n ? m : n;
        double tol = tol_of((tl_dtype)dtype) * (double)(m + n + 1) * 10;
        mat a;
        mat_make(&a, (tl_dtype)dtype, 2, m, n, layout);
        mat_random(&a.view);
        tl_tensor lu;
        int64_t pivots[64];
        TH_CHECK_OK(tl_lu(h.exec, &a.view, &lu, pivots));
        if (layout == COL) {
          /* Dense column-major a and lu: tl_lu_into factors in lu itself, with the same
           * bits and pivots as the fresh result. */
          mat lc;
          mat_make(&lc, (tl_dtype)dtype, 2, m, n, COL);
          int64_t pivots_into[64];
          TH_CHECK_OK(tl_lu_into(h.exec, &a.view, &lc.view, pivots_into));
          for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) failures += get(&lc.view, i, j) != get(&lu, i, j);
          for (int64_t i = 0; i < k; i++) failures += pivots_into[i] != pivots[i];
          mat_free(&lc);
        }
        /* P A: apply the row swaps to a copy of A in double complex, compare with L U. */
        double complex *pa = malloc(sizeof(double complex) * (size_t)(m * n + 1));
        for (int64_t i = 0; i < m; i++) {
          for (int64_t j = 0; j < n; j++) pa[i + j * m] = get(&a.view, i, j);
        }
        for (int64_t i = 0; i < k; i++) {
          TH_CHECK(pivots[i] >= i && pivots[i] < m);
          for (int64_t j = 0; j < n; j++) {
            double complex t = pa[i + j * m];
            pa[i + j * m] = pa[pivots[i] + j * m];
            pa[pivots[i] + j * m] = t;
          }
        }
        double res = 0;
        for (int64_t i = 0; i < m; i++) {
          for (int64_t j = 0; j < n; j++) {
            double complex v = pa[i + j * m];
            for (int64_t q = 0; q <= (i < j ? i : j) && q < k; q++) {
              double complex l = q == i ? 1.0 : get(&lu, i, q);
              v -= l * get(&lu, q, j);
            }
            res += pow(cabs(v), 2);
          }
        }
        free(pa);
        res = sqrt(res) / (fro(&a.view) + 1);
        failures += !report(res <= tol, "lu residual", (tl_dtype)dtype, m, n, layout, res);
        /* Solves for square ones: tl_solve, and tl_lu_solve_into with every op. */
        if (m == n) {
          for (int rhs_rank = 1; rhs_rank <= 2; rhs_rank++) {
            mat b, x;
            mat_make(&b, (tl_dtype)dtype, rhs_rank, n, 3, layout);
            mat_random(&b.view);
            tl_tensor xs;
            TH_CHECK_OK(tl_solve(h.exec, &a.view, &b.view, &xs));
            double r = product_residual(&b.view, &a.view, &xs, n) / (fro(&b.view) + 1);
            failures += !report(r <= tol * 100, "solve residual", (tl_dtype)dtype, m, n, layout, r);
            tl_tensor_release(&xs);
            for (int trans = 0; trans < 3; trans++) {
              mat_make(&x, (tl_dtype)dtype, rhs_rank, n, 3, (layout + 1) % LAYOUTS);
              TH_CHECK_OK(tl_lu_solve_into(h.exec, (tl_trans)trans, &lu, pivots, &b.view, &x.view));
              double rr = 0;
              for (int64_t i = 0; i < n; i++) {
                for (int64_t j = 0; j < cols_of(&b.view); j++) {
                  double complex v = get(&b.view, i, j);
                  for (int64_t q = 0; q < n; q++) {
                    double complex aiq = trans == 0   ? get(&a.view, i, q)
                                         : trans == 1 ? get(&a.view, q, i)
                                                      : conj(get(&a.view, q, i));
                    v -= aiq * get(&x.view, q, j);
                  }
                  rr += pow(cabs(v), 2);
                }
              }
              rr = sqrt(rr) / (fro(&b.view) + 1);
              failures += !report(rr <= tol * 100, "lu_solve residual", (tl_dtype)dtype, m, trans,
                                  layout, rr);
              mat_free(&x);
            }
            mat_free(&b);
          }
        }
        tl_tensor_release(&lu);
        mat_free(&a);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void linalg_triangular_solve_reads_one_triangle(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  /* 6: the plain-loop solve of a small triangle; 40: BLAS trsm (above TL__TRSM_SMALL_MAX). */
  for (int size = 0; size < 2; size++)
    for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
      for (int combo = 0; combo < 24; combo++) {
        tl_side side = (tl_side)(combo & 1);
        tl_uplo uplo = (tl_uplo)((combo >> 1) & 1);
        tl_diag diag = (tl_diag)((combo >> 2) & 1);
        tl_trans trans = (tl_trans)(combo >> 3);
        int layout = combo % LAYOUTS;
        int64_t n = size ? 40 : 6, r = 4;
        double tol = tol_of((tl_dtype)dtype) * 1000;
        mat t;
        mat_make(&t, (tl_dtype)dtype, 2, n, n, layout);
        mat_random(&t.view);
        /* A well-conditioned triangle; garbage elsewhere (and on a unit diagonal). */
        for (int64_t i = 0; i < n; i++) {
          for (int64_t j = 0; j < n; j++) {
            int in = uplo == TL_UPPER ? i <= j : i >= j;
            if (i == j)
              set(&t.view, i, j, diag == TL_UNIT ? 1e6 : 4.0 + i);
            else if (!in)
              set(&t.view, i, j, 1e6);
          }
        }
        mat b;
        mat_make(&b, (tl_dtype)dtype, 2, side == TL_LEFT ? n : r, side == TL_LEFT ? r : n, COL);
        mat_random(&b.view);
        tl_tensor x;
        TH_CHECK_OK(tl_triangular_solve(h.exec, side, uplo, trans, diag, &t.view, &b.view, &x));
        /* The matrix the solve used: the triangle, the diagonal as given or ones. */
        double res = 0;
        for (int64_t i = 0; i < rows_of(&b.view); i++) {
          for (int64_t j = 0; j < cols_of(&b.view); j++) {
            double complex v = get(&b.view, i, j);
            for (int64_t q = 0; q < n; q++) {
              /* left: (op T)(i,q) x(q,j); right: x(i,q) (op T)(q,j) */
              int64_t ti = side == TL_LEFT ? i : q, tj = side == TL_LEFT ? q : j;
              int64_t si = trans == TL_NO_TRANS ? ti : tj, sj = trans == TL_NO_TRANS ? tj : ti;
              int in = uplo == TL_UPPER ? si <= sj : si >= sj;
              double complex tv = !in                             ? 0.0
                                  : (si == sj && diag == TL_UNIT) ? 1.0
                                                                  : get(&t.view, si, sj);
              if (trans == TL_CONJ_TRANS) tv = conj(tv);
              v -= side == TL_LEFT ? tv * get(&x, q, j) : get(&x, i, q) * tv;
            }
            res += pow(cabs(v), 2);
          }
        }
        res = sqrt(res) / (fro(&b.view) + 1);
        failures += !report(res <= tol, "trsm residual", (tl_dtype)dtype, combo, 0, layout, res);
        tl_tensor_release(&x);
        mat_free(&b);
        mat_free(&t);
      }
    }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* ---- eigh ------------------------------------------------------------------------------- */

static void linalg_eigh_reconstructs_hermitian_matrices(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  /* Up to 64 the reflectors are applied one at a time (orm2r); 100 and 150 pass through
   * tenlane's panel loop (latrd panels of 32 columns while more than 64 remain) and the
   * back-transformation's blocks of 32 reflectors (4 and 5, each on every column at once:
   * linalg_eigh_applies_reflectors_in_column_steps covers the column steps); 100 in the
   * first two layouts only (one per triangle), 150 in the first (the checks are O(n^3)
   * through get(), slow under TSan). */
  static const int64_t sizes[] = {0, 1, 2, 5, 24, 100, 150};
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        int64_t n = sizes[s];
        if ((n >= 100 && layout > 1) || (n > 100 && layout > 0)) continue;
        tl_uplo uplo = (tl_uplo)(layout & 1);
        double tol = tol_of((tl_dtype)dtype) * (double)(n + 1) * 10;
        mat a, sym;
        mat_make(&a, (tl_dtype)dtype, 2, n, n, layout);
        mat_make(&sym, TL_C128, 2, n, n, COL);
        mat_random(&sym.view);
        for (int64_t i = 0; i < n; i++) {
          for (int64_t j = 0; j <= i; j++) {
            double complex v = get(&sym.view, i, j);
            if (!tl_dtype_is_complex((tl_dtype)dtype)) v = creal(v);
            if (i == j) v = creal(v);
            set(&sym.view, i, j, v);
            set(&sym.view, j, i, conj(v));
          }
        }
        /* a holds the triangle; the other one is garbage. */
        for (int64_t i = 0; i < n; i++) {
          for (int64_t j = 0; j < n; j++) {
            int in = uplo == TL_UPPER ? i <= j : i >= j;
            set(&a.view, i, j, in ? get(&sym.view, i, j) : 1e6);
          }
        }
        tl_tensor w, v;
        TH_CHECK_OK(tl_eigh(h.exec, uplo, &a.view, &w, &v));
        double res = 0;
        for (int64_t i = 0; i < n; i++) {
          for (int64_t j = 0; j < n; j++) {
            double complex x = -get(&v, i, j) * get(&w, j, 0);
            for (int64_t q = 0; q < n; q++) x += get(&sym.view, i, q) * get(&v, q, j);
            res += pow(cabs(x), 2);
          }
        }
        res = sqrt(res) / (fro(&sym.view) + 1);
        failures += !report(res <= tol, "eigh residual", (tl_dtype)dtype, n, n, layout, res);
        failures += !report(orthonormality(&v, n) <= tol, "eigh orthonormality", (tl_dtype)dtype, n,
                            n, layout, orthonormality(&v, n));
        for (int64_t q = 1; q < n; q++) TH_CHECK(creal(get(&w, q, 0)) >= creal(get(&w, q - 1, 0)));
        /* Values only, into a strided output. */
        mat wo;
        mat_make(&wo, tl_dtype_real((tl_dtype)dtype), 1, n, 1, NEG);
        TH_CHECK_OK(tl_eigh_into(h.exec, uplo, &a.view, &wo.view, NULL));
        for (int64_t q = 0; q < n; q++) {
          double d = cabs(get(&wo.view, q, 0) - get(&w, q, 0));
          failures += !report(d <= tol * 10, "eigh values only", (tl_dtype)dtype, n, n, layout, d);
        }
        mat_free(&wo);
        tl_tensor_release(&w);
        tl_tensor_release(&v);
        mat_free(&sym);
        mat_free(&a);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* c128 at n = 760: the back-transformation applies its blocks of 32 reflectors to at most
 * 2^26 / (rows x 32 x 4) columns per step (eigh.c), so the first blocks (759 rows: 690
 * columns) take two steps, the later ones one. The columns on both sides of that cut, and
 * the first and last, are eigenvectors of the Hermitian matrix and orthonormal (checked
 * column by column: O(n^2) each). */
static void linalg_eigh_applies_reflectors_in_column_steps(void) {
  th_held h;
  th_held_open(&h, 1);
  const int64_t n = 760, cols[6] = {0, 1, 689, 690, 691, 759};
  mat a;
  mat_make(&a, TL_C128, 2, n, n, COL);
  mat_random(&a.view);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j <= i; j++) {
      double complex x = i == j ? creal(get(&a.view, i, j)) : get(&a.view, i, j);
      set(&a.view, i, j, x);
      set(&a.view, j, i, conj(x));
    }
  }
  tl_tensor w, v;
  TH_CHECK_OK(tl_eigh(h.exec, TL_LOWER, &a.view, &w, &v));
  double tol = tol_of(TL_C128) * (double)(n + 1) * 10, scale = fro(&a.view) + 1, worst = 0;
  for (int c = 0; c < 6; c++) {
    int64_t j = cols[c];
    double res = 0;
    for (int64_t i = 0; i < n; i++) {
      double complex x = -get(&v, i, j) * get(&w, j, 0);
      for (int64_t q = 0; q < n; q++) x += get(&a.view, i, q) * get(&v, q, j);
      res += pow(cabs(x), 2);
    }
    worst = fmax(worst, sqrt(res) / scale);
    for (int d = 0; d < 6; d++) {
      double complex dot = 0;
      for (int64_t q = 0; q < n; q++) dot += conj(get(&v, q, j)) * get(&v, q, cols[d]);
      worst = fmax(worst, cabs(dot - (c == d ? 1.0 : 0.0)));
    }
  }
  fprintf(stderr, "eigh c128 n = 760, column steps: worst residual or orthonormality %.3g\n",
          worst);
  TH_CHECK(worst <= tol);
  tl_tensor_release(&w);
  tl_tensor_release(&v);
  mat_free(&a);
  th_held_close(&h);
}

/* Entries near the ends of the double range (the route scales such a triangle into range
 * before the reduction, as syevd does, and the eigenvalues back): the same matrix at scale 1
 * gives the reference, which every scale must match relatively, and the vectors stay
 * orthonormal. Checked 2026-12-04: these scales pass with the scaling switched off too
 * (LAPACK's pieces cope), so this guards the results at the edges, not the scaling itself. */
static void linalg_eigh_scales_tiny_and_huge_input(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  const int64_t n = 90; /* two panels of the reduction */
  double scales[] = {1e-306, 1e-300, 1e-160, 1e160, 1e300, 0.0};
  mat base;
  mat_make(&base, TL_F64, 2, n, n, COL);
  mat_random(&base.view);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) set(&base.view, j, i, get(&base.view, i, j));
  tl_tensor w_ref, v_ref;
  TH_CHECK_OK(tl_eigh(h.exec, TL_LOWER, &base.view, &w_ref, &v_ref));
  double largest = fabs(creal(get(&w_ref, 0, 0))) > fabs(creal(get(&w_ref, n - 1, 0)))
                       ? fabs(creal(get(&w_ref, 0, 0)))
                       : fabs(creal(get(&w_ref, n - 1, 0)));
  /* The last: the largest eigenvalue at half the largest double (a rank-2 update of the
   * unscaled triangle overflows there). */
  scales[5] = 0.5 * DBL_MAX / largest;
  for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
    for (int u = 0; u < 2; u++) {
      mat a;
      mat_make(&a, TL_F64, 2, n, n, COL);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) set(&a.view, i, j, get(&base.view, i, j) * scales[k]);
      tl_tensor w, v;
      TH_CHECK_OK(tl_eigh(h.exec, u ? TL_UPPER : TL_LOWER, &a.view, &w, NULL));
      double worst = 0;
      for (int64_t q = 0; q < n; q++) {
        double d = fabs(creal(get(&w, q, 0)) / scales[k] - creal(get(&w_ref, q, 0))) / largest;
        if (d > worst) worst = d;
      }
      failures += !report(worst <= 1e-12, "eigh scaled values", TL_F64, n, (int64_t)k, u, worst);
      tl_tensor_release(&w);
      TH_CHECK_OK(tl_eigh(h.exec, u ? TL_UPPER : TL_LOWER, &a.view, &w, &v));
      failures += !report(orthonormality(&v, n) <= 1e-12, "eigh scaled orthonormality", TL_F64, n,
                          (int64_t)k, u, orthonormality(&v, n));
      tl_tensor_release(&w);
      tl_tensor_release(&v);
      mat_free(&a);
    }
  }
  tl_tensor_release(&w_ref);
  tl_tensor_release(&v_ref);
  mat_free(&base);
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* ---- Steady state --------------------------------------------------------------------- */

static void linalg_repeated_into_makes_no_heap_allocation(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t n = 12;
  mat a, q, r, u, s, vt, lu, x, b, w;
  mat_make(&a, TL_F64, 2, n, n, COL);
  mat_random(&a.view);
  for (int64_t i = 0; i < n; i++) set(&a.view, i, i, 10.0);
  mat_make(&q, TL_F64, 2, n, n, COL);
  mat_make(&r, TL_F64, 2, n, n, COL);
  mat_make(&u, TL_F64, 2, n, n, COL);
  mat_make(&s, TL_F64, 1, n, 1, COL);
  mat_make(&vt, TL_F64, 2, n, n, COL);
  mat_make(&lu, TL_F64, 2, n, n, COL);
  mat_make(&x, TL_F64, 2, n, 2, COL);
  mat_make(&b, TL_F64, 2, n, 2, COL);
  mat_make(&w, TL_F64, 1, n, 1, COL);
  mat_random(&b.view);
  int64_t pivots[12], perm[12], rank;
  uint64_t before = 0;
  for (int round = 0; round < 3; round++) {
    if (round == 2) before = tl_allocation_count();
    TH_CHECK_OK(tl_qr_into(h.exec, &a.view, &q.view, &r.view));
    TH_CHECK_OK(tl_qrcp_into(h.exec, NULL, &a.view, &q.view, &r.view, perm, &rank));
    TH_CHECK_OK(tl_svd_into(h.exec, NULL, &a.view, &u.view, &s.view, &vt.view, &rank));
    TH_CHECK_OK(tl_lu_into(h.exec, &a.view, &lu.view, pivots));
    TH_CHECK_OK(tl_lu_solve_into(h.exec, TL_NO_TRANS, &lu.view, pivots, &b.view, &x.view));
    TH_CHECK_OK(tl_solve_into(h.exec, &a.view, &b.view, &x.view));
    TH_CHECK_OK(tl_triangular_solve_into(h.exec, TL_LEFT, TL_UPPER, TL_NO_TRANS, TL_NON_UNIT,
                                         &r.view, &b.view, &x.view));
    TH_CHECK_OK(tl_eigh_into(h.exec, TL_LOWER, &a.view, &w.view, &u.view));
  }
  uint64_t after = tl_allocation_count();
  if (after != before) {
    fprintf(stderr, "  %llu heap allocations in one steady round\n",
            (unsigned long long)(after - before));
  }
  TH_CHECK(after == before);
  mat *all[] = {&a, &q, &r, &u, &s, &vt, &lu, &x, &b, &w};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mat_free(all[i]);
  th_held_close(&h);
}

/* ---- Bad input ------------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what;
  int route;   /* which call */
  int variant; /* what is wrong */
  tl_status expected;
} bad_case;

enum { R_QR, R_QRCP, R_SVD, R_LU, R_LU_SOLVE, R_SOLVE, R_TRSM, R_EIGH };
enum {
  V_NULL_EXEC,
  V_NULL_A,
  V_NULL_OUT,
  V_A_RANK3,
  V_OUT_SHAPE,
  V_OUT_DTYPE,
  V_OUT_ALIAS_A,
  V_OUT_ZERO_STRIDE,
  V_OUTS_OVERLAP,
  V_NOT_SQUARE,
  V_B_ROWS,
  V_B_DTYPE,
  V_BAD_ENUM,
  V_SINGULAR,
  V_PIVOT_RANGE,
  V_NEG_TOL,
  V_NEG_RANK,
  V_U_WITHOUT_VT,
  V_NULL_PIVOTS,
  V_HUGE,
  V_S_REAL_DTYPE
};

static const bad_case bad_table[] = {
    {"qr: NULL exec", R_QR, V_NULL_EXEC, TL_E_INVALID},
    {"qr: NULL a", R_QR, V_NULL_A, TL_E_INVALID},
    {"qr: NULL r", R_QR, V_NULL_OUT, TL_E_INVALID},
    {"qr: a of rank 3", R_QR, V_A_RANK3, TL_E_SHAPE},
    {"qr: q of the wrong shape", R_QR, V_OUT_SHAPE, TL_E_SHAPE},
    {"qr: q of another dtype", R_QR, V_OUT_DTYPE, TL_E_DTYPE},
    {"qr: q overlaps a", R_QR, V_OUT_ALIAS_A, TL_E_ALIAS},
    {"qr: q with a zero stride", R_QR, V_OUT_ZERO_STRIDE, TL_E_ALIAS},
    {"qr: q overlaps r", R_QR, V_OUTS_OVERLAP, TL_E_ALIAS},
    {"qr: extents beyond 32-bit LAPACK", R_QR, V_HUGE, TL_E_SHAPE},
    {"qrcp: negative tolerance", R_QRCP, V_NEG_TOL, TL_E_INVALID},
    {"qrcp: negative max_rank", R_QRCP, V_NEG_RANK, TL_E_INVALID},
    {"qrcp: NULL perm", R_QRCP, V_NULL_PIVOTS, TL_E_INVALID},
    {"qrcp: r of the wrong shape", R_QRCP, V_OUT_SHAPE, TL_E_SHAPE},
    {"svd: u without vt", R_SVD, V_U_WITHOUT_VT, TL_E_INVALID},
    {"svd: s of the complex dtype", R_SVD, V_S_REAL_DTYPE, TL_E_DTYPE},
    {"svd: NaN tolerance", R_SVD, V_NEG_TOL, TL_E_INVALID},
    {"svd: u of the wrong shape", R_SVD, V_OUT_SHAPE, TL_E_SHAPE},
    {"svd: u overlaps a", R_SVD, V_OUT_ALIAS_A, TL_E_ALIAS},
    {"lu: NULL pivots", R_LU, V_NULL_PIVOTS, TL_E_INVALID},
    {"lu: lu of the wrong shape", R_LU, V_OUT_SHAPE, TL_E_SHAPE},
    {"lu: lu overlaps a", R_LU, V_OUT_ALIAS_A, TL_E_ALIAS},
    {"lu_solve: lu not square", R_LU_SOLVE, V_NOT_SQUARE, TL_E_SHAPE},
    {"lu_solve: b with the wrong rows", R_LU_SOLVE, V_B_ROWS, TL_E_SHAPE},
    {"lu_solve: pivot out of range", R_LU_SOLVE, V_PIVOT_RANGE, TL_E_INVALID},
    {"lu_solve: singular u", R_LU_SOLVE, V_SINGULAR, TL_E_INVALID},
    {"lu_solve: unknown trans", R_LU_SOLVE, V_BAD_ENUM, TL_E_INVALID},
    {"solve: singular a", R_SOLVE, V_SINGULAR, TL_E_INVALID},
    {"solve: b of another dtype", R_SOLVE, V_B_DTYPE, TL_E_DTYPE},
    {"solve: a not square", R_SOLVE, V_NOT_SQUARE, TL_E_SHAPE},
    {"solve: x overlaps a", R_SOLVE, V_OUT_ALIAS_A, TL_E_ALIAS},
    {"trsm: unknown side", R_TRSM, V_BAD_ENUM, TL_E_INVALID},
    {"trsm: zero on the diagonal", R_TRSM, V_SINGULAR, TL_E_INVALID},
    {"trsm: b with the wrong rows", R_TRSM, V_B_ROWS, TL_E_SHAPE},
    {"trsm: t not square", R_TRSM, V_NOT_SQUARE, TL_E_SHAPE},
    {"eigh: a not square", R_EIGH, V_NOT_SQUARE, TL_E_SHAPE},
    {"eigh: unknown uplo", R_EIGH, V_BAD_ENUM, TL_E_INVALID},
    {"eigh: w of the complex dtype", R_EIGH, V_S_REAL_DTYPE, TL_E_DTYPE},
    {"eigh: v overlaps w", R_EIGH, V_OUTS_OVERLAP, TL_E_ALIAS},
};
#define BAD_COUNT (sizeof bad_table / sizeof bad_table[0])

#define POISON 55.0

static int run_bad(tl_exec *exec, const bad_case *c) {
  const int64_t n = 4;
  tl_dtype dtype = TL_C128;
  int square_ok = c->variant != V_NOT_SQUARE;
  mat a, o1, o2, o3, b;
  mat_make(&a, dtype, 2, n, square_ok ? n : n + 1, COL);
  mat_random(&a.view);
  for (int64_t i = 0; i < n; i++) set(&a.view, i, i, 5.0);
  if (c->variant == V_SINGULAR) {
    for (int64_t j = 0; j < cols_of(&a.view); j++) set(&a.view, 1, j, 0.0);
    set(&a.view, 1, 1, 0.0);
  }
  int64_t cols = cols_of(&a.view);
  /* o1: q / u / lu / x / v, o2: r / vt / w; o3: s. Shapes for each route. */
  int64_t o1r = n, o1c = n, o2r = n, o2c = cols;
  if (c->route == R_LU_SOLVE || c->route == R_SOLVE || c->route == R_TRSM) o1c = 2;
  if (c->route == R_LU) o1c = cols;
  if (c->variant == V_OUT_SHAPE) o1c += 1, o2r += 1;
  tl_dtype o1_dtype = c->variant == V_OUT_DTYPE ? TL_C64 : dtype;
  tl_dtype o3_dtype = c->variant == V_S_REAL_DTYPE ? dtype : TL_F64;
  mat_make(&o1, o1_dtype, 2, o1r, o1c, COL);
  if (c->route == R_EIGH) {
    mat_make(&o2, o3_dtype, 1, n, 1, COL);
  } else {
    mat_make(&o2, dtype, 2, o2r, o2c, COL);
  }
  mat_make(&o3, o3_dtype, 1, n, 1, COL);
  mat_make(&b, c->variant == V_B_DTYPE ? TL_F64 : dtype, 2, c->variant == V_B_ROWS ? n + 1 : n, 2,
           COL);
  mat_random(&b.view);
  mat_fill(&o1.view, POISON);
  mat_fill(&o2.view, POISON);
  mat_fill(&o3.view, POISON);
  tl_tensor t1 = o1.view, t2 = o2.view, t3 = o3.view, ta = a.view;
  if (c->variant == V_OUT_ALIAS_A) {
    t1 = a.view;
    t1.shape[1] = o1c;
  }
  if (c->variant == V_OUT_ZERO_STRIDE) t1.strides[1] = 0;
  if (c->variant == V_OUTS_OVERLAP) {
    if (c->route == R_EIGH) {
      /* w as a real vector over the first elements of v's memory. */
      t2 = o1.view;
      t2.dtype = TL_F64;
      t2.rank = 1;
      t2.shape[0] = n;
      t2.strides[0] = 1;
    } else {
      /* r over q's memory. */
      t2 = o1.view;
      t2.shape[0] = o2r;
      t2.shape[1] = o2c;
      t2.strides[1] = n;
    }
  }
  if (c->variant == V_A_RANK3) {
    ta.rank = 3;
    ta.shape[2] = 1;
    ta.strides[2] = 1;
  }
  if (c->variant == V_HUGE) {
    ta.shape[0] = (int64_t)1 << 32;
    ta.strides[0] = 0; /* keeps the span valid without memory */
  }
  tl_exec *e = c->variant == V_NULL_EXEC ? NULL : exec;
  const tl_tensor *pa = c->variant == V_NULL_A ? NULL : &ta;
  tl_tensor *p2 = c->variant == V_NULL_OUT ? NULL : &t2;
  int64_t pivots[8] = {0, 1, 2, 3, 0, 0, 0, 0}, perm[8] = {-7, -7, -7, -7, -7, -7, -7, -7};
  int64_t rank = -7;
  if (c->variant == V_PIVOT_RANGE) pivots[2] = 9;
  tl_truncation trunc = {sizeof(tl_truncation), c->variant == V_NEG_RANK ? -1 : 0,
                         c->variant == V_NEG_TOL ? (c->route == R_SVD ? NAN : -1.0) : 0.0, 0.0};
  int bad_enum = c->variant == V_BAD_ENUM;
  tl_status status = TL_OK;
  switch (c->route) {
    case R_QR:
      status = tl_qr_into(e, pa, &t1, p2);
      break;
    case R_QRCP:
      status =
          tl_qrcp_into(e, &trunc, pa, &t1, p2, c->variant == V_NULL_PIVOTS ? NULL : perm, &rank);
      break;
    case R_SVD:
      status =
          tl_svd_into(e, &trunc, pa, &t1, &t3, c->variant == V_U_WITHOUT_VT ? NULL : p2, &rank);
      break;
    case R_LU:
      status = tl_lu_into(e, pa, &t1, c->variant == V_NULL_PIVOTS ? NULL : pivots);
      break;
    case R_LU_SOLVE:
      status = tl_lu_solve_into(e, bad_enum ? (tl_trans)5 : TL_NO_TRANS, pa, pivots, &b.view, &t1);
      break;
    case R_SOLVE:
      status = tl_solve_into(e, pa, &b.view, &t1);
      break;
    case R_TRSM:
      status = tl_triangular_solve_into(e, bad_enum ? (tl_side)3 : TL_LEFT, TL_UPPER, TL_NO_TRANS,
                                        TL_NON_UNIT, pa, &b.view, &t1);
      break;
    case R_EIGH:
      status = tl_eigh_into(e, bad_enum ? (tl_uplo)4 : TL_LOWER, pa, &t2, &t1);
      break;
  }
  int ok = status == c->expected && tl_last_message()[0] != '\0';
  if (!ok) {
    fprintf(stderr, "  bad case \"%s\": %s (expected %s), message \"%s\"\n", c->what,
            tl_status_name(status), tl_status_name(c->expected), tl_last_message());
  }
  int intact = mat_all(&o1.view, POISON) && mat_all(&o2.view, POISON) &&
               mat_all(&o3.view, POISON) && rank == -7 && perm[0] == -7;
  if (c->route == R_LU) intact &= pivots[0] == 0 && pivots[2] == 2;
  if (!intact) fprintf(stderr, "  bad case \"%s\": an output was written\n", c->what);
  mat_free(&a);
  mat_free(&o1);
  mat_free(&o2);
  mat_free(&o3);
  mat_free(&b);
  return ok && intact;
}

static void linalg_bad_input_table_fails_typed_and_writes_nothing(void) {
  TH_CHECK(BAD_COUNT >= 30);
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  for (size_t c = 0; c < BAD_COUNT; c++) failures += !run_bad(h.exec, &bad_table[c]);
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void linalg_wider_team_on_one_thread_is_unavailable(void) {
  th_held h;
  th_held_open(&h, 1);
  mat a, q, r;
  mat_make(&a, TL_F64, 2, 3, 3, COL);
  mat_random(&a.view);
  mat_make(&q, TL_F64, 2, 3, 3, COL);
  mat_make(&r, TL_F64, 2, 3, 3, COL);
  mat_fill(&q.view, POISON);
  mat_fill(&r.view, POISON);
  TH_CHECK_OK(tl_exec_set_team(h.exec, 2));
  TH_CHECK_STATUS(tl_qr_into(h.exec, &a.view, &q.view, &r.view), TL_E_UNAVAILABLE);
  TH_CHECK(mat_all(&q.view, POISON) && mat_all(&r.view, POISON));
  TH_CHECK_OK(tl_exec_set_team(h.exec, 1));
  TH_CHECK_OK(tl_qr_into(h.exec, &a.view, &q.view, &r.view));
  mat_free(&a);
  mat_free(&q);
  mat_free(&r);
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(linalg_qr_reconstructs_with_orthonormal_q),
             TH_CASE(linalg_qrcp_reveals_rank_and_reconstructs),
             TH_CASE(linalg_svd_reconstructs_with_orthonormal_factors),
             TH_CASE(linalg_svd_truncates_by_rank_and_tolerance),
             TH_CASE(linalg_lu_reconstructs_and_solves),
             TH_CASE(linalg_triangular_solve_reads_one_triangle),
             TH_CASE(linalg_eigh_reconstructs_hermitian_matrices),
             TH_CASE(linalg_eigh_applies_reflectors_in_column_steps),
             TH_CASE(linalg_eigh_scales_tiny_and_huge_input),
             TH_CASE(linalg_repeated_into_makes_no_heap_allocation),
             TH_CASE(linalg_bad_input_table_fails_typed_and_writes_nothing),
             TH_CASE(linalg_wider_team_on_one_thread_is_unavailable))
