/* src/linalg/eigh.c: the symmetric / Hermitian eigenproblem, syevd / heevd's algorithm
 * (Householder tridiagonal reduction, divide and conquer, back-transformation) driven here
 * step by step so that a long call stops at tl_exec_cancel.
 *
 * Invariant: only the triangle `uplo` of a is read, eigenvalues come out ascending in the
 * real dtype, and w and v are written only after every LAPACK step succeeded. Between two
 * looks at the cancel flag there is at most one panel of the reduction (latrd on
 * panel_width(n) columns and its rank-2k update, O(n^2 panel_width(n))), the last block of
 * order <= TL__EIGH_REST, one piece of the tridiagonal solver (tridiag.c: sterf on one
 * unreduced block, O(n^2); with vectors one leaf, one small merge or one chunk of a large
 * merge of stedc's divide and conquer, driven there), or one back-transformation of
 * TL__EIGH_APPLY columns (O(n^2 TL__EIGH_APPLY), and it reads every reflector). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "linalg_int.h"

/* Columns of one panel of the reduction: LAPACK's block size for sytrd, halved above order
 * TL__EIGH_PANEL_HALVED, where the trailing block no longer fits in cache and a panel's 32
 * products with it made it the longest step of the reduction (2026-12-05; figures in
 * benches/results/2026-12-05-s5-eigh-whole-*.txt). */
#define TL__EIGH_PANEL 32
#define TL__EIGH_PANEL_HALVED 2048
/* The trailing block of at most this order is reduced by one sytrd / hetrd call. */
#define TL__EIGH_REST 64
/* Columns of the eigenvector matrix per back-transformation call. Fewer columns do not make
 * a call much shorter: each ormtr call reads every reflector again (at n = 4000, 16 columns
 * took 0.42 s against 0.50 s for 128; benches/results/2026-12-05-s5-eigh-whole-*.txt). */
#define TL__EIGH_APPLY 128

static int64_t panel_width(int64_t n) {
  return n > TL__EIGH_PANEL_HALVED ? TL__EIGH_PANEL / 2 : TL__EIGH_PANEL;
}

static char *at(char *a, size_t esize, lapack_int lda, int64_t i, int64_t j) {
  return a + esize * ((size_t)i + (size_t)j * (size_t)lda);
}

static double real_at(tl_dtype dtype, const void *p) {
  switch (dtype) {
    case TL_F32:
    case TL_C64:
      return (double)*(const float *)p; /* the real part comes first */
    default:
      return *(const double *)p;
  }
}

static double abs_of(tl_dtype dtype, const void *p) {
  switch (dtype) {
    case TL_F32:
      return fabs((double)*(const float *)p);
    case TL_F64:
      return fabs(*(const double *)p);
    case TL_C64:
      return hypot((double)((const float *)p)[0], (double)((const float *)p)[1]);
    default:
      return hypot(((const double *)p)[0], ((const double *)p)[1]);
  }
}

/* *p = value (real; the imaginary part of a complex entry 0). */
static void set_real(tl_dtype dtype, void *p, double value) {
  switch (dtype) {
    case TL_F32:
      *(float *)p = (float)value;
      break;
    case TL_F64:
      *(double *)p = value;
      break;
    case TL_C64:
      ((float *)p)[0] = (float)value;
      ((float *)p)[1] = 0.0f;
      break;
    default:
      ((double *)p)[0] = value;
      ((double *)p)[1] = 0.0;
      break;
  }
}

/* The upper triangle of a copied into the lower one (conjugated), so that every step below
 * works on the lower triangle whichever the caller gave. */
static void mirror_upper(tl_dtype dtype, char *a, lapack_int lda, int64_t n) {
  size_t esize = tl_dtype_size(dtype);
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = j + 1; i < n; i++) {
      char *dst = at(a, esize, lda, i, j);
      memcpy(dst, at(a, esize, lda, j, i), esize);
      if (dtype == TL_C64) ((float *)dst)[1] = -((float *)dst)[1];
      if (dtype == TL_C128) ((double *)dst)[1] = -((double *)dst)[1];
    }
  }
}

/* syevd's scaling: a lower triangle whose largest entry lies outside [rmin, rmax] is scaled
 * into it (so that the reduction neither under- nor overflows); returns the factor (1: not
 * scaled), by which the eigenvalues are divided afterwards. */
static double scale_lower(tl_dtype dtype, char *a, lapack_int lda, int64_t n) {
  size_t esize = tl_dtype_size(dtype);
  tl_dtype real = tl_dtype_real(dtype);
  double safmin = real == TL_F32 ? (double)FLT_MIN : DBL_MIN;
  double eps = real == TL_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
  double small = safmin / eps, rmin = sqrt(small), rmax = sqrt(1.0 / small);
  double largest = 0.0;
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = j; i < n; i++) {
      double v = i == j ? fabs(real_at(dtype, at(a, esize, lda, i, j)))
                        : abs_of(dtype, at(a, esize, lda, i, j));
      if (v > largest) largest = v;
    }
  }
  double sigma = 1.0;
  if (largest > 0.0 && largest < rmin) sigma = rmin / largest;
  if (largest > rmax) sigma = rmax / largest;
  if (sigma == 1.0) return 1.0;
  size_t parts = tl_dtype_is_complex(dtype) ? 2 : 1;
  for (int64_t j = 0; j < n; j++) {
    char *col = at(a, esize, lda, j, j);
    size_t count = (size_t)(n - j) * parts;
    if (real == TL_F32) {
      for (size_t q = 0; q < count; q++) ((float *)col)[q] = (float)(((float *)col)[q] * sigma);
    } else {
      for (size_t q = 0; q < count; q++) ((double *)col)[q] *= sigma;
    }
  }
  return sigma;
}

/* The Householder reduction of the lower triangle of a (n x n) to tridiagonal form: d (n)
 * and e (n - 1) of the real dtype, the reflectors in a below the subdiagonal with tau
 * (n - 1). sytrd's blocked loop, with a look at the cancel flag before every panel. panel:
 * lda x TL__EIGH_PANEL elements. */
static tl_status reduce(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n, char *a,
                        lapack_int lda, char *d, char *e, char *tau, char *panel) {
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(tl_dtype_real(dtype));
  tl_status status;
  int64_t i = 0;
  while (n - i > TL__EIGH_REST) {
    if ((status = tl__la_cancelled(exec, route, "the tridiagonal reduction (latrd panels)")) !=
        TL_OK)
      return status;
    const int64_t nb = panel_width(n);
    tl__lapack_latrd_lower(dtype, (lapack_int)(n - i), (lapack_int)nb, at(a, esize, lda, i, i), lda,
                           e + (size_t)i * rsize, tau + (size_t)i * esize, panel, lda);
    tl__blas_rank2k_lower(dtype, (lapack_int)(n - i - nb), (lapack_int)nb,
                          at(a, esize, lda, i + nb, i), lda, panel + (size_t)nb * esize, lda,
                          at(a, esize, lda, i + nb, i + nb), lda);
    for (int64_t j = i; j < i + nb; j++) {
      double off = real_at(tl_dtype_real(dtype), e + (size_t)j * rsize);
      set_real(dtype, at(a, esize, lda, j + 1, j), off);
      set_real(tl_dtype_real(dtype), d + (size_t)j * rsize,
               real_at(dtype, at(a, esize, lda, j, j)));
    }
    i += nb;
  }
  if ((status = tl__la_cancelled(exec, route, "the tridiagonal reduction (latrd panels)")) != TL_OK)
    return status;
  lapack_int info = tl__lapack_sytrd_lower(dtype, (lapack_int)(n - i), at(a, esize, lda, i, i), lda,
                                           d + (size_t)i * rsize, e + (size_t)i * rsize,
                                           tau + (size_t)i * esize, panel, lda * TL__EIGH_PANEL);
  if (info != 0) return tl__la_provider_fail(route, "sytrd", info);
  return TL_OK;
}

/* The eigenvectors once a is reduced (reflectors in a, tau; tridiagonal d, e): stedc's
 * algorithm in pieces (tridiag.c) into *z (real, lda x n), widened into zc for a complex
 * dtype, then Q applied TL__EIGH_APPLY columns at a time, the cancel flag looked at
 * before each; *z ends on the result. */
static tl_status vectors_of(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n, char *a,
                            lapack_int lda, char *d, char *e, const char *tau, char **z, char *zc,
                            char *work, const tl__la_work *apply, lapack_int *iwork) {
  tl_dtype real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  tl_status status;
  if ((status = tl__tridiag_solve(exec, route, real, n, d, e, *z, lda, work, iwork)) != TL_OK)
    return status;
  lapack_int info;
  char *c = *z;
  if (tl_dtype_is_complex(dtype)) { /* the tridiagonal's vectors are real: widen to the dtype */
    c = zc;
    for (int64_t j = 0; j < n; j++) {
      for (int64_t i = 0; i < n; i++) {
        set_real(dtype, at(zc, esize, lda, i, j), real_at(real, at(*z, rsize, lda, i, j)));
      }
    }
  }
  for (int64_t j = 0; j < n; j += TL__EIGH_APPLY) {
    if ((status = tl__la_cancelled(exec, route, "the back-transformation (ormtr)")) != TL_OK)
      return status;
    int64_t cols = n - j < TL__EIGH_APPLY ? n - j : TL__EIGH_APPLY;
    info = tl__lapack_ormtr_lower(dtype, (lapack_int)n, (lapack_int)cols, a, lda, tau,
                                  at(c, esize, lda, 0, j), lda, work, (lapack_int)apply->work);
    if (info != 0) return tl__la_provider_fail(route, "ormtr", info);
  }
  *z = c;
  return TL_OK;
}

/* The workspace of the eigenvector steps (n > 0), taken before anything is computed:
 * z (real n x n), zc (complex dtypes), work (the tridiagonal solver's, TL__TRIDIAG_WORK,
 * and ormtr's, queried, shared), iwork. */
static tl_status vector_scratch(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n,
                                lapack_int lda, tl__la_work *solve, tl__la_work *apply, char **z,
                                char **zc, char **work, lapack_int **iwork) {
  tl_dtype real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  tl_status status;
  /* The solver's sizes (laed1 indexes its work with LAPACK's integers: the bound below). */
  solve->work = TL__TRIDIAG_WORK(n);
  solve->iwork = TL__TRIDIAG_IWORK(n);
  lapack_int info;
  lapack_int cols = (lapack_int)(n < TL__EIGH_APPLY ? n : TL__EIGH_APPLY);
  info = tl__lapack_ormtr_lower_query(dtype, (lapack_int)n, cols, apply);
  if (info != 0) return tl__la_provider_fail(route, "ormtr (query)", info);
  if (solve->work > INT32_MAX || solve->iwork > INT32_MAX || apply->work > INT32_MAX) {
    return tl__fail(
        TL_E_SHAPE,
        "%s: LAPACK workspace too large (stedc's %lld, ormtr %lld elements) for n = %lld", route,
        (long long)solve->work, (long long)apply->work, (long long)n);
  }
  /* Both counts are below 2^31 and sizes at most 16 bytes: the products fit. */
  int64_t work_elems = solve->work * (int64_t)rsize > apply->work * (int64_t)esize
                           ? solve->work
                           : (apply->work * (int64_t)esize + (int64_t)rsize - 1) / (int64_t)rsize;
  if ((status = tl__la_scratch(exec, (int64_t)lda * n, rsize, (void **)z)) != TL_OK ||
      (status = tl__la_scratch(exec, work_elems, rsize, (void **)work)) != TL_OK ||
      (status = tl__la_scratch(exec, solve->iwork, sizeof(lapack_int), (void **)iwork)) != TL_OK)
    return status;
  if (tl_dtype_is_complex(dtype)) return tl__la_scratch(exec, (int64_t)lda * n, esize, (void **)zc);
  return TL_OK;
}

static tl_status eigh_impl(tl_exec *exec, const char *route, const tl_tensor *a, tl_uplo uplo,
                           tl_tensor *w, tl_tensor *v, int fresh) {
  int64_t n, n2;
  tl_status status = tl__la_matrix(a, "a", 0, &n, &n2);
  if (status != TL_OK) return status;
  if (n != n2) {
    return tl__fail(TL_E_SHAPE, "%s: a is %lld x %lld, expected square", route, (long long)n,
                    (long long)n2);
  }
  if (uplo != TL_UPPER && uplo != TL_LOWER) {
    return tl__fail(TL_E_INVALID, "%s: uplo is %d, not a tl_uplo", route, (int)uplo);
  }
  if (w == NULL) return tl__fail(TL_E_INVALID, "%s: w is NULL", route);
  tl_dtype dtype = a->dtype, real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  int vectors = v != NULL;
  if (!fresh) {
    if ((status = tl__la_output(w, "w", real, 1, n, 0)) != TL_OK) return status;
    if ((status = tl__la_disjoint(w, "w", a, "a")) != TL_OK) return status;
    if (vectors) {
      if ((status = tl__la_output(v, "v", dtype, 2, n, n)) != TL_OK) return status;
      if ((status = tl__la_disjoint(v, "v", a, "a")) != TL_OK) return status;
      if ((status = tl__la_disjoint(v, "v", w, "w")) != TL_OK) return status;
    }
  }
  char uplo_char = uplo == TL_UPPER ? 'U' : 'L';
  lapack_int lda = tl__la_ld(n);
  /* Every buffer is taken before anything is computed (n x n products: n <= INT32_MAX,
   * tl__la_matrix, and tl__la_scratch checks the byte count). */
  char *work_a, *d, *e, *tau, *panel, *z = NULL, *zc = NULL, *work = NULL;
  lapack_int *iwork = NULL;
  tl__la_work solve = {0, 0, 0}, apply = {0, 0, 0};
  if ((status = tl__la_scratch(exec, (int64_t)lda * n, esize, (void **)&work_a)) != TL_OK ||
      (status = tl__la_scratch(exec, n, rsize, (void **)&d)) != TL_OK ||
      (status = tl__la_scratch(exec, n, rsize, (void **)&e)) != TL_OK ||
      (status = tl__la_scratch(exec, n, esize, (void **)&tau)) != TL_OK ||
      (status = tl__la_scratch(exec, (int64_t)lda * TL__EIGH_PANEL, esize, (void **)&panel)) !=
          TL_OK)
    return status;
  if (vectors && n > 0 &&
      (status = vector_scratch(exec, route, dtype, n, lda, &solve, &apply, &z, &zc, &work,
                               &iwork)) != TL_OK)
    return status;
  if (n > 0) {
    tl__la_gather(a, work_a, lda);
    status = tl__la_finite(route, "a", dtype, work_a, lda, n, n, uplo_char, 0, 0);
    if (status != TL_OK) return status;
    if (uplo == TL_UPPER) mirror_upper(dtype, work_a, lda, n);
    double sigma = scale_lower(dtype, work_a, lda, n);
    if ((status = reduce(exec, route, dtype, n, work_a, lda, d, e, tau, panel)) != TL_OK)
      return status;
    if (!vectors) {
      status = tl__tridiag_solve(exec, route, real, n, d, e, NULL, 0, NULL, NULL);
      if (status != TL_OK) return status;
    } else {
      status =
          vectors_of(exec, route, dtype, n, work_a, lda, d, e, tau, &z, zc, work, &apply, iwork);
      if (status != TL_OK) return status;
    }
    if (sigma != 1.0) {
      for (int64_t q = 0; q < n; q++) {
        char *p = d + (size_t)q * rsize;
        set_real(real, p, real_at(real, p) / sigma);
      }
    }
  }
  tl_tensor w_new, v_new;
  if (fresh) {
    int64_t shape[2] = {n, n};
    if ((status = tl__exec_fresh(exec, real, 1, shape, &w_new)) != TL_OK) return status;
    if (vectors && (status = tl__exec_fresh(exec, dtype, 2, shape, &v_new)) != TL_OK) {
      tl_tensor_release(&w_new);
      return status;
    }
  } else {
    w_new = *w;
    if (vectors) v_new = *v;
  }
  tl__la_scatter(d, lda, n, 1, &w_new);
  if (vectors) tl__la_scatter(z, lda, n, n, &v_new);
  if (fresh) {
    *w = w_new;
    if (vectors) *v = v_new;
  }
  return TL_OK;
}

tl_status tl_eigh_into(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w,
                       tl_tensor *v) {
  tl_status status = tl__la_begin(exec, "tl_eigh_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, eigh_impl(exec, "tl_eigh_into", a, uplo, w, v, 0));
}

tl_status tl_eigh(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w, tl_tensor *v) {
  tl_status status = tl__la_begin(exec, "tl_eigh");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, eigh_impl(exec, "tl_eigh", a, uplo, w, v, 1));
}
