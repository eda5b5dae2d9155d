/* src/linalg/eigh.c: the symmetric / Hermitian eigenproblem, syevd / heevd's algorithm
 * (Householder tridiagonal reduction, divide and conquer, back-transformation) driven here
 * step by step so that a long call stops at tl_exec_cancel.
 *
 * Invariant: only the triangle `uplo` of a is read, eigenvalues come out ascending in the
 * real dtype, and w and v are written only after every LAPACK step succeeded. Between two
 * looks at the cancel flag there is at most one of: a plain O(n^2) pass over at most
 * TL__LA_PASS_BYTES (the copy of a in, its check and scaling, z set to the identity, the
 * first touch of the solver's workspace, the widening of complex vectors, the copy of v
 * out); latrd on one panel of panel_width columns, or that panel's rank-2k update (each
 * O(n^2 panel_width)); the last block of order <= TL__EIGH_REST; one piece of the
 * tridiagonal solver (tridiag.c: sterf on one unreduced block, O(n^2); with vectors one
 * leaf, one small merge or one chunk of a large merge of stedc's divide and conquer); one
 * block of TL__EIGH_BLOCK reflectors applied to at most TL__EIGH_STEP / (rows x block)
 * columns of the vectors (larfb, O(TL__EIGH_STEP)). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "linalg_int.h"

/* Columns of one panel of the reduction: LAPACK's block size for sytrd, halved once the
 * matrix passes TL__EIGH_PANEL_HALVED bytes, where it no longer fits in cache and a panel's
 * 32 products with it made it the longest step of the reduction (2026-12-05; at first an
 * order of 2048 for every dtype, then bytes, so that c128 and f32 follow; figures in
 * benches/results/2026-12-05-s5-eigh-whole-*.txt and 2026-12-05-s6-*). */
#define TL__EIGH_PANEL 32
#define TL__EIGH_PANEL_HALVED ((int64_t)32 << 20)
/* The trailing block of at most this order is reduced by one sytrd / hetrd call. */
#define TL__EIGH_REST 64
/* The back-transformation applies sytrd's reflectors in blocks of TL__EIGH_BLOCK (larft
 * once per block, LAPACK's block size for ormqr), from the last block to the first, each
 * block to TL__EIGH_STEP / (rows x block) columns of the vectors at a time (a quarter of
 * that for complex dtypes, at least TL__EIGH_APPLY_MIN), the flag looked at before each.
 * Decided 2026-12-05: it replaced one ormtr call per 128 columns, whose step could not be
 * made short since each call reads every reflector (at n = 4000, 16 columns took 0.42 s
 * against 0.50 s for 128), and which was slower on the whole: the larfb steps work on wider
 * blocks of columns (figures in benches/results/2026-12-05-s6-eigh-whole*.txt). */
#define TL__EIGH_BLOCK 32
#define TL__EIGH_STEP (int64_t)(1 << 26)
#define TL__EIGH_APPLY_MIN 64
/* Up to this order the reflectors are applied one at a time (orm2r), as ormqr does when its
 * workspace is short: at n = 64 f64 the blocked form took about 10% more of the whole call
 * (2026-12-05, bench_providers' eigh rows). */
#define TL__EIGH_UNBLOCKED 64

static int64_t panel_width(int64_t n, size_t esize) {
  return n * n * (int64_t)esize > TL__EIGH_PANEL_HALVED ? TL__EIGH_PANEL / 2 : TL__EIGH_PANEL;
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
    const int64_t nb = panel_width(n, esize);
    tl__lapack_latrd_lower(dtype, (lapack_int)(n - i), (lapack_int)nb, at(a, esize, lda, i, i), lda,
                           e + (size_t)i * rsize, tau + (size_t)i * esize, panel, lda);
    if ((status = tl__la_cancelled(exec, route, "the tridiagonal reduction (rank-2k updates)")) !=
        TL_OK)
      return status;
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
 * dtype, then Q applied block of reflectors by block (larft, larfb), the cancel flag looked
 * at before each step; *z ends on the result. */
static tl_status vectors_of(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n, char *a,
                            lapack_int lda, char *d, char *e, const char *tau, char **z, char *zc,
                            char *work, lapack_int *iwork) {
  tl_dtype real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  tl_status status;
  /* The solver's workspace is touched here in steps when it spans more than one: its first
   * touch inside the solver's widest merge made that piece 0.16-0.19 s at n = 4000 f64 on a
   * first call. */
  int64_t bytes = TL__TRIDIAG_WORK(n) * (int64_t)rsize;
  for (int64_t done = 0; bytes > TL__LA_PASS_BYTES && done < bytes; done += TL__LA_PASS_BYTES) {
    if (done > 0 &&
        (status = tl__la_cancelled(exec, route, "the solver's start (its workspace)")) != TL_OK)
      return status;
    int64_t part = bytes - done < TL__LA_PASS_BYTES ? bytes - done : TL__LA_PASS_BYTES;
    memset(work + done, 0, (size_t)part);
  }
  if ((status = tl__tridiag_solve(exec, route, real, n, d, e, *z, lda, work, iwork)) != TL_OK)
    return status;
  lapack_int info;
  char *c = *z;
  if (tl_dtype_is_complex(dtype)) { /* the tridiagonal's vectors are real: widen to the dtype */
    c = zc;
    int64_t step = tl__la_pass_columns(n, esize);
    for (int64_t j = 0; j < n; j++) {
      if (j > 0 && j % step == 0 &&
          (status = tl__la_cancelled(exec, route, "the widening of the vectors")) != TL_OK)
        return status;
      for (int64_t i = 0; i < n; i++) {
        set_real(dtype, at(zc, esize, lda, i, j), real_at(real, at(*z, rsize, lda, i, j)));
      }
    }
    if ((status = tl__la_cancelled(exec, route, "the widening of the vectors")) != TL_OK)
      return status;
  }
  /* Q = H(1) ... H(n - 1) acts on rows 1 .. n - 1; H(i + 1)'s vector is column i of a
   * below row i + 1 (its 1 implied). The blocks go from the last to the first. */
  int64_t k = n - 1;
  if (n <= TL__EIGH_UNBLOCKED) { /* one step: the reflectors one at a time */
    if ((status = tl__la_cancelled(exec, route, "the back-transformation (larfb blocks)")) != TL_OK)
      return status;
    info = tl__lapack_orm2r_left(dtype, (lapack_int)k, (lapack_int)n, (lapack_int)k,
                                 at(a, esize, lda, 1, 0), lda, tau, at(c, esize, lda, 1, 0), lda,
                                 work);
    if (info != 0) return tl__la_provider_fail(route, "orm2r", info);
    *z = c;
    return TL_OK;
  }
  char *t = work, *w = work + esize * TL__EIGH_BLOCK * TL__EIGH_BLOCK;
  for (int64_t i = k > 0 ? ((k - 1) / TL__EIGH_BLOCK) * TL__EIGH_BLOCK : -1; i >= 0;
       i -= TL__EIGH_BLOCK) {
    int64_t ib = k - i < TL__EIGH_BLOCK ? k - i : TL__EIGH_BLOCK, m = k - i;
    int64_t width = TL__EIGH_STEP / (m * ib * (tl_dtype_is_complex(dtype) ? 4 : 1));
    if (width < TL__EIGH_APPLY_MIN) width = TL__EIGH_APPLY_MIN;
    const char *vi = at(a, esize, lda, i + 1, i);
    for (int64_t j = 0; j < n; j += width) {
      if ((status = tl__la_cancelled(exec, route, "the back-transformation (larfb blocks)")) !=
          TL_OK)
        return status;
      if (j == 0) {
        info = tl__lapack_larft_forward(dtype, (lapack_int)m, (lapack_int)ib, vi, lda,
                                        tau + (size_t)i * esize, t, TL__EIGH_BLOCK);
        if (info != 0) return tl__la_provider_fail(route, "larft", info);
      }
      int64_t cols = n - j < width ? n - j : width;
      info = tl__lapack_larfb_left(dtype, (lapack_int)m, (lapack_int)cols, (lapack_int)ib, vi, lda,
                                   t, TL__EIGH_BLOCK, at(c, esize, lda, i + 1, j), lda, w,
                                   (lapack_int)cols);
      if (info != 0) return tl__la_provider_fail(route, "larfb", info);
    }
  }
  *z = c;
  return TL_OK;
}

/* The workspace of the eigenvector steps (n > 0), taken before anything is computed:
 * z (real n x n), zc (complex dtypes), work (the tridiagonal solver's, TL__TRIDIAG_WORK,
 * and the back-transformation's, shared), iwork. */
static tl_status vector_scratch(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n,
                                lapack_int lda, tl__la_work *solve, tl__la_work *apply, char **z,
                                char **zc, char **work, lapack_int **iwork) {
  tl_dtype real = tl_dtype_real(dtype);
  size_t esize = tl_dtype_size(dtype), rsize = tl_dtype_size(real);
  tl_status status;
  /* The solver's sizes (laed1 indexes its work with LAPACK's integers: the bound below). */
  solve->work = TL__TRIDIAG_WORK(n);
  solve->iwork = TL__TRIDIAG_IWORK(n);
  /* The back-transformation's: one block's triangular factor and larfb's work (n x block). */
  apply->work = (int64_t)TL__EIGH_BLOCK * (TL__EIGH_BLOCK + n);
  if (solve->work > INT32_MAX || solve->iwork > INT32_MAX || apply->work > INT32_MAX) {
    return tl__fail(
        TL_E_SHAPE,
        "%s: LAPACK workspace too large (stedc's %lld, larfb %lld elements) for n = %lld", route,
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

/* The computation (n > 0) on the copy of a in work_a: eigenvalues in d, with vectors the
 * eigenvector matrix in *z (lda x n); the flag looked at between its steps. */
static tl_status compute(tl_exec *exec, const char *route, tl_dtype dtype, int64_t n, tl_uplo uplo,
                         int vectors, const tl_tensor *a, char *work_a, lapack_int lda, char *d,
                         char *e, char *tau, char *panel, char **z, char *zc, char *work,
                         lapack_int *iwork) {
  tl_dtype real = tl_dtype_real(dtype);
  size_t rsize = tl_dtype_size(real);
  char uplo_char = uplo == TL_UPPER ? 'U' : 'L';
  tl_status status;
  /* Each O(n^2) pass of the entry is a step of its own, the copy in tl__la_pass_columns at
   * a time (at n = 4000 f64 the entry took 0.2-0.3 s, the first touch of the scratch
   * included). */
  size_t esize = tl_dtype_size(dtype);
  int64_t step = tl__la_pass_columns(n, esize);
  for (int64_t j = 0; j < n; j += step) {
    tl_tensor part = *a;
    part.shape[1] = n - j < step ? n - j : step;
    part.offset += j * a->strides[1];
    tl__la_gather(&part, at(work_a, esize, lda, 0, j), lda);
    if ((status = tl__la_cancelled(exec, route, "the copy of a")) != TL_OK) return status;
  }
  status = tl__la_finite(route, "a", dtype, work_a, lda, n, n, uplo_char, 0, 0);
  if (status != TL_OK) return status;
  if (uplo == TL_UPPER) mirror_upper(dtype, work_a, lda, n);
  if ((status = tl__la_cancelled(exec, route, "the check of a")) != TL_OK) return status;
  double sigma = scale_lower(dtype, work_a, lda, n);
  if ((status = reduce(exec, route, dtype, n, work_a, lda, d, e, tau, panel)) != TL_OK)
    return status;
  if (!vectors) {
    status = tl__tridiag_solve(exec, route, real, n, d, e, NULL, 0, NULL, NULL);
    if (status != TL_OK) return status;
  } else {
    status = vectors_of(exec, route, dtype, n, work_a, lda, d, e, tau, z, zc, work, iwork);
    if (status != TL_OK) return status;
    /* The last block of the back-transformation is a step of its own; what follows is
     * the copy out (write_vectors). */
    if ((status = tl__la_cancelled(exec, route, "the back-transformation (larfb blocks)")) != TL_OK)
      return status;
  }
  if (sigma != 1.0) {
    for (int64_t q = 0; q < n; q++) {
      char *p = d + (size_t)q * rsize;
      set_real(real, p, real_at(real, p) / sigma);
    }
  }
  return TL_OK;
}

/* z (lda x n) into v, tl__la_pass_columns at a time, the flag looked at between two (the
 * copy out of a large result is a step like the others). */
static tl_status write_vectors(tl_exec *exec, const char *route, const char *z, lapack_int lda,
                               int64_t n, const tl_tensor *v) {
  size_t esize = tl_dtype_size(v->dtype);
  int64_t step = tl__la_pass_columns(n, esize);
  for (int64_t j = 0; j < n; j += step) {
    tl_status status;
    if (j > 0 && (status = tl__la_cancelled(exec, route, "the copy of the vectors out")) != TL_OK)
      return status;
    int64_t cols = n - j < step ? n - j : step;
    tl_tensor part = *v;
    part.shape[1] = cols;
    part.offset += j * v->strides[1];
    tl__la_scatter(at((char *)z, esize, lda, 0, j), lda, n, cols, &part);
  }
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
  /* Fresh outputs are made now too, unfilled (every element is written at the end), so
   * that no step pays for a whole result's first touch. */
  tl_tensor w_new, v_new;
  if (fresh) {
    int64_t shape[2] = {n, n};
    if ((status = tl__la_fresh_unfilled(exec, real, 1, shape, &w_new)) != TL_OK) return status;
    if (vectors && (status = tl__la_fresh_unfilled(exec, dtype, 2, shape, &v_new)) != TL_OK) {
      tl_tensor_release(&w_new);
      return status;
    }
  } else {
    w_new = *w;
    if (vectors) v_new = *v;
  }
  status = n > 0 ? compute(exec, route, dtype, n, uplo, vectors, a, work_a, lda, d, e, tau, panel,
                           &z, zc, work, iwork)
                 : TL_OK;
  if (status == TL_OK) {
    tl__la_scatter(d, lda, n, 1, &w_new);
    if (vectors) status = write_vectors(exec, route, z, lda, n, &v_new);
  }
  if (fresh) {
    if (status != TL_OK) {
      tl_tensor_release(&w_new);
      if (vectors) tl_tensor_release(&v_new);
      return status;
    }
    *w = w_new;
    if (vectors) *v = v_new;
  }
  return status;
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
