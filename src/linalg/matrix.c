/* src/linalg/matrix.c: what every linear algebra route does around its LAPACK calls:
 * argument checks with messages, scratch from the arena, copies between strided tensors and
 * column-major buffers, and truncation.
 *
 * Invariant: the checks run before anything is written, and scatter is the only function
 * here that writes caller memory. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "kernels/kernels.h"
#include "base/fault.h"
#include "linalg_int.h"
#include "tensor/tensor_int.h"

tl_status tl__la_begin(tl_exec *exec, const char *route) {
  tl_status status = tl__exec_begin(exec, route);
  if (status != TL_OK) return status;
  /* LAPACK's BLAS calls get the context tenlane chose only once it is set. */
  tl__providers_init();
  (void)tl__gemv_linked();
  (void)tl__gemm_blas_linked();
  (void)tl__ger_linked();
  (void)tl__trmm_linked();
  char stale_routine[16];
  int stale_argument;
  (void)tl__xerbla_take(stale_routine, &stale_argument); /* not this call's: forget it */
  int team;
  status = tl__exec_team(exec, &team);
  if (status == TL_OK && tl__exec_cancelled(exec)) {
    status =
        tl__fail(TL_E_CANCELLED,
                 "%s: cancelled before the call began (the lane's run or tl_exec_cancel)", route);
  }
  if (status != TL_OK) return tl__exec_end(exec, status);
  return TL_OK;
}

#define LAPACK_EXTENT_MAX ((int64_t)INT32_MAX)

tl_status tl__la_matrix(const tl_tensor *t, const char *name, int allow_vector, int64_t *rows,
                        int64_t *cols) {
  if (t == NULL) return tl__fail(TL_E_INVALID, "%s is NULL", name);
  tl_status status = tl_tensor_validate(t, name);
  if (status != TL_OK) return status;
  if (t->rank != 2 && !(allow_vector && t->rank == 1)) {
    return tl__fail(TL_E_SHAPE, "%s has rank %d, expected a matrix (rank 2%s)", name, t->rank,
                    allow_vector ? " or a vector" : "");
  }
  *rows = t->shape[0];
  *cols = t->rank == 2 ? t->shape[1] : 1;
  if (*rows > LAPACK_EXTENT_MAX || *cols > LAPACK_EXTENT_MAX ||
      (*rows > 0 && *cols > LAPACK_EXTENT_MAX / *rows)) {
    return tl__fail(TL_E_SHAPE, "%s is %lld x %lld, beyond LAPACK's 32-bit indexing", name,
                    (long long)*rows, (long long)*cols);
  }
  return TL_OK;
}

tl_status tl__la_output(const tl_tensor *t, const char *name, tl_dtype dtype, int rank, int64_t d0,
                        int64_t d1) {
  if (t == NULL) return tl__fail(TL_E_INVALID, "%s is NULL", name);
  tl_status status = tl_tensor_validate(t, name);
  if (status != TL_OK) return status;
  if (t->dtype != dtype) {
    return tl__fail(TL_E_DTYPE, "%s is %s, expected %s", name, tl_dtype_name(t->dtype),
                    tl_dtype_name(dtype));
  }
  int fits = t->rank == rank && t->shape[0] == d0 && (rank == 1 || t->shape[1] == d1);
  if (!fits) {
    char got[64];
    if (t->rank == 0) {
      snprintf(got, sizeof got, "a scalar");
    } else if (t->rank == 1) {
      snprintf(got, sizeof got, "[%lld]", (long long)t->shape[0]);
    } else {
      snprintf(got, sizeof got, "rank %d [%lld x %lld%s]", t->rank, (long long)t->shape[0],
               (long long)t->shape[1], t->rank > 2 ? " x ..." : "");
    }
    if (rank == 1) {
      return tl__fail(TL_E_SHAPE, "%s is %s, expected [%lld]", name, got, (long long)d0);
    }
    return tl__fail(TL_E_SHAPE, "%s is %s, expected [%lld x %lld]", name, got, (long long)d0,
                    (long long)d1);
  }
  if (tl_tensor_self_overlap(t)) {
    return tl__fail(TL_E_ALIAS, "%s maps two indices to one element (a zero or colliding stride)",
                    name);
  }
  return TL_OK;
}

tl_status tl__la_disjoint(const tl_tensor *out, const char *out_name, const tl_tensor *other,
                          const char *other_name) {
  if (other != NULL && tl_tensor_overlap(out, other)) {
    return tl__fail(TL_E_ALIAS, "%s overlaps %s", out_name, other_name);
  }
  return TL_OK;
}

tl_status tl__la_cancelled(const tl_exec *exec, const char *route, const char *routine) {
  if (!tl__exec_cancelled(exec)) {
    tl__pause(TL__PAUSE_LINALG_STEP);
    return TL_OK;
  }
  return tl__fail(TL_E_CANCELLED,
                  "%s: cancelled while %s ran; its results were dropped (outputs "
                  "unspecified)",
                  route, routine);
}

tl_status tl__la_fresh_unfilled(const tl_exec *exec, tl_dtype dtype, int rank, const int64_t *shape,
                                tl_tensor *out) {
  return tl__tensor_create_unfilled(dtype, rank, shape, exec->order == TL_ORDER_ROW_MAJOR, out);
}

tl_status tl__la_scratch(tl_exec *exec, int64_t count, size_t esize, void **out) {
  size_t bytes;
  if (count < 0 || !tl__size_mul((size_t)count, esize, &bytes)) {
    return tl__fail(TL_E_SHAPE, "scratch of %lld elements of %zu bytes overflows", (long long)count,
                    esize);
  }
  return tl__exec_scratch(exec, bytes > 0 ? bytes : 1, 64, out);
}

tl_status tl__la_workspace(tl_exec *exec, const tl__la_work *sizes, size_t esize, size_t rsize,
                           void **work, void **rwork, void **iwork) {
  tl_status status = tl__la_scratch(exec, sizes->work, esize, work);
  if (status == TL_OK) status = tl__la_scratch(exec, sizes->rwork, rsize, rwork);
  if (status == TL_OK) status = tl__la_scratch(exec, sizes->iwork, sizeof(lapack_int), iwork);
  return status;
}

/* Element copies of a fixed size, so the compiler moves them as words. */
#define TL__COPY_BLOCK(T)                                           \
  for (int64_t j = 0; j < cols; j++) {                              \
    const T *s = (const T *)src + j * scol;                         \
    T *d = (T *)dst + j * dcol;                                     \
    if (srow == 1 && drow == 1) {                                   \
      memcpy(d, s, (size_t)rows * sizeof(T));                       \
    } else {                                                        \
      for (int64_t i = 0; i < rows; i++) d[i * drow] = s[i * srow]; \
    }                                                               \
  }

static void copy_block(size_t esize, int64_t rows, int64_t cols, const void *src, int64_t srow,
                       int64_t scol, void *dst, int64_t drow, int64_t dcol) {
  switch (esize) {
    case 4:
      TL__COPY_BLOCK(float) break;
    case 8:
      TL__COPY_BLOCK(double) break;
    default:
      TL__COPY_BLOCK(double complex) break;
  }
}

void tl__la_gather(const tl_tensor *t, void *buf, int64_t ld) {
  int64_t rows = t->shape[0], cols = t->rank == 2 ? t->shape[1] : 1;
  if (rows == 0 || cols == 0) return;
  size_t esize = tl_dtype_size(t->dtype);
  const char *base = (const char *)t->data + t->offset * (int64_t)esize;
  copy_block(esize, rows, cols, base, t->strides[0], t->rank == 2 ? t->strides[1] : 0, buf, 1, ld);
}

void tl__la_scatter(const void *buf, int64_t ld, int64_t rows, int64_t cols, const tl_tensor *t) {
  int64_t t_rows = t->shape[0], t_cols = t->rank == 2 ? t->shape[1] : 1;
  if (t_rows == 0 || t_cols == 0) return;
  size_t esize = tl_dtype_size(t->dtype);
  char *base = (char *)t->data + t->offset * (int64_t)esize;
  int64_t srow = t->strides[0], scol = t->rank == 2 ? t->strides[1] : 0;
  if (rows > 0 && cols > 0) copy_block(esize, rows, cols, buf, 1, ld, base, srow, scol);
  /* Zero what lies outside the block: rows below it in its columns, then whole columns;
   * one memset per column when the column is contiguous. */
  for (int64_t j = 0; j < t_cols; j++) {
    int64_t first = j < cols ? rows : 0;
    if (first >= t_rows) continue;
    if (srow == 1) {
      memset(base + (first + j * scol) * (int64_t)esize, 0, (size_t)(t_rows - first) * esize);
      continue;
    }
    for (int64_t i = first; i < t_rows; i++) {
      memset(base + (i * srow + j * scol) * (int64_t)esize, 0, esize);
    }
  }
}

void tl_truncation_init(tl_truncation *truncation) {
  if (truncation == NULL) return;
  memset(truncation, 0, sizeof *truncation);
  truncation->size = sizeof *truncation;
}

int64_t tl__la_truncate(tl_dtype real, const void *values, int64_t k,
                        const tl_truncation *truncation) {
  if (truncation == NULL || k == 0) return k;
  double largest =
      real == TL_F32 ? fabs((double)((const float *)values)[0]) : fabs(((const double *)values)[0]);
  double cut = truncation->rtol * largest;
  if (truncation->atol > cut) cut = truncation->atol;
  int64_t keep = 0;
  while (keep < k) {
    double v = real == TL_F32 ? fabs((double)((const float *)values)[keep])
                              : fabs(((const double *)values)[keep]);
    if (!(v > cut)) break;
    keep++;
  }
  if (truncation->max_rank > 0 && keep > truncation->max_rank) keep = truncation->max_rank;
  return keep;
}

tl_status tl__la_check_truncation(const tl_truncation *truncation, const char *route) {
  if (truncation == NULL) return TL_OK;
  tl_status status = tl__check_struct_size(route, "tl_truncation", truncation->size,
                                           TL__SIZE_THROUGH(tl_truncation, atol));
  if (status != TL_OK) return status;
  if (truncation->max_rank < 0 || !(truncation->rtol >= 0.0) || !(truncation->atol >= 0.0)) {
    return tl__fail(TL_E_INVALID,
                    "%s: truncation has max_rank %lld, rtol %g, atol %g; expected max_rank >= 0 "
                    "and tolerances >= 0",
                    route, (long long)truncation->max_rank, truncation->rtol, truncation->atol);
  }
  return TL_OK;
}

tl_status tl__la_provider_fail(const char *route, const char *routine, lapack_int info) {
  char raised_by[16];
  int argument;
  if (tl__xerbla_take(raised_by, &argument)) {
    return tl__fail(TL_E_PROVIDER,
                    "%s: LAPACK %s: routine %s rejected its argument %d (reported through "
                    "xerbla; a tenlane bug or an injected fault)",
                    route, routine, raised_by, argument);
  }
  if (info < 0) {
    return tl__fail(TL_E_PROVIDER, "%s: LAPACK %s rejected its argument %d (a tenlane bug)", route,
                    routine, (int)-info);
  }
  return tl__fail(TL_E_PROVIDER, "%s: LAPACK %s did not converge (info %d)", route, routine,
                  (int)info);
}

static const char *nonfinite_kind(double value) {
  return value != value ? "NaN" : value > 0 ? "+inf" : "-inf";
}

/* 1 when the `count` reals at p (f32 when single, else f64) are all finite: their exponent
 * bits are not all ones. Integer tests with no early exit, so the compiler vectorizes the
 * loop; the routes scan every input with it (most of it finite) before the exact pass. */
static int all_finite(const void *p, int64_t count, int single) {
  unsigned bad = 0;
  const char *at = p;
  if (single) {
    for (int64_t i = 0; i < count; i++) {
      uint32_t bits;
      memcpy(&bits, at + i * 4, 4);
      bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
  } else {
    for (int64_t i = 0; i < count; i++) {
      uint64_t bits;
      memcpy(&bits, at + i * 8, 8);
      bad |= (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
    }
  }
  return !bad;
}

tl_status tl__la_finite(const char *route, const char *name, tl_dtype dtype, const void *buf,
                        int64_t ld, int64_t rows, int64_t cols, char part, int unit_diagonal,
                        int vector) {
  int parts = tl_dtype_is_complex(dtype) ? 2 : 1;
  int single = tl_dtype_real(dtype) == TL_F32;
  size_t real_size = single ? sizeof(float) : sizeof(double);
  for (int64_t j = 0; j < cols; j++) {
    int64_t first = part == 'L' ? j : 0, last = part == 'U' ? (j + 1 < rows ? j + 1 : rows) : rows;
    const char *column = (const char *)buf + (size_t)((j * ld + first) * parts) * real_size;
    if (last > first && all_finite(column, (last - first) * parts, single)) continue;
    for (int64_t i = first; i < last; i++) {
      if (unit_diagonal && i == j) continue;
      int64_t at = (j * ld + i) * parts;
      for (int c = 0; c < parts; c++) {
        double value =
            single ? (double)((const float *)buf)[at + c] : ((const double *)buf)[at + c];
        if (isfinite(value)) continue;
        const char *what = parts == 1 ? ""
                           : c == 0   ? " in its real part"
                                      : " in its imaginary part";
        if (vector) {
          return tl__fail(TL_E_NONFINITE,
                          "%s: %s[%lld] is %s%s; this route takes finite input only (NaN and "
                          "infinity are refused before LAPACK sees them)",
                          route, name, (long long)i, nonfinite_kind(value), what);
        }
        return tl__fail(TL_E_NONFINITE,
                        "%s: %s[%lld, %lld] is %s%s; this route takes finite input only (NaN and "
                        "infinity are refused before LAPACK sees them)",
                        route, name, (long long)i, (long long)j, nonfinite_kind(value), what);
      }
    }
  }
  return TL_OK;
}

tl_status tl__la_gather_finite(const char *route, const char *name, const tl_tensor *t, void *buf,
                               int64_t ld) {
  tl__la_gather(t, buf, ld);
  int64_t rows = t->shape[0], cols = t->rank == 2 ? t->shape[1] : 1;
  return tl__la_finite(route, name, t->dtype, buf, ld, rows, cols, 'A', 0, t->rank == 1);
}

int tl__la_in_place(const tl_tensor *a, int64_t a_rows, const tl_tensor *out, int64_t out_rows,
                    const tl_tensor *out2, int64_t out2_rows) {
  return tl__la_dense(a, a_rows) && tl__la_dense(out, out_rows) &&
         (out2 == NULL || tl__la_dense(out2, out2_rows)) &&
         !tl__fault_armed(TL__FAULT_LAPACK_ARGUMENT);
}

tl_status tl__la_copy_finite(const char *route, const char *name, const tl_tensor *a,
                             const tl_tensor *out, char **base) {
  size_t esize = tl_dtype_size(a->dtype);
  int64_t rows = a->shape[0], cols = a->shape[1];
  lapack_int ld = tl__la_ld(rows);
  const char *a_base = (const char *)a->data + a->offset * (int64_t)esize;
  tl_status status = tl__la_finite(route, name, a->dtype, a_base, ld, rows, cols, 'A', 0, 0);
  if (status != TL_OK) return status;
  *base = (char *)out->data + out->offset * (int64_t)esize;
  tl__la_gather(a, *base, ld);
  return TL_OK;
}

tl_status tl__la_disjoint_ints(const char *route, const int64_t *out, int64_t count,
                               const char *out_name, const tl_tensor *t, const char *t_name) {
  if (out == NULL || count <= 0 || t == NULL || t->data == NULL) return TL_OK;
  int64_t lo, hi;
  if (!tl_tensor_extent_range(t, &lo, &hi) || lo > hi) return TL_OK;
  size_t esize = tl_dtype_size(t->dtype);
  uintptr_t t_begin = (uintptr_t)t->data + (uintptr_t)(lo * (int64_t)esize);
  uintptr_t t_end = (uintptr_t)t->data + (uintptr_t)((hi + 1) * (int64_t)esize);
  uintptr_t o_begin = (uintptr_t)out, o_end = (uintptr_t)(out + count);
  if (o_begin < t_end && t_begin < o_end) {
    return tl__fail(TL_E_ALIAS, "%s: %s (%lld int64_t at %p) overlaps the memory of %s", route,
                    out_name, (long long)count, (const void *)out, t_name);
  }
  return TL_OK;
}

double tl__la_sum_squares(tl_dtype dtype, const void *buf, int64_t ld, int64_t rows, int64_t cols) {
  int complex_parts = tl_dtype_is_complex(dtype) ? 2 : 1;
  int single = dtype == TL_F32 || dtype == TL_C64;
  double sum = 0.0;
  for (int64_t j = 0; j < cols; j++) {
    for (int64_t i = 0; i < rows * complex_parts; i++) {
      int64_t at = j * ld * complex_parts + i;
      double x = single ? ((const float *)buf)[at] : ((const double *)buf)[at];
      sum += x * x;
    }
  }
  return sum;
}
