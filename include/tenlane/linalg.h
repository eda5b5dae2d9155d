/* tenlane/linalg.h: dense factorizations and solves on rank-2 tl_tensor, through LAPACK.
 *
 * Every route copies its input into column-major scratch from the surface's arena (LAPACK
 * overwrites what it factors), asks LAPACK for its workspace size and takes that from the
 * arena too, runs the LAPACK routine on the calling thread (reference LAPACK over serial
 * BLIS: no provider thread ever starts), and only then writes the outputs. So:
 *   - a failing call writes nothing: *out tensors of the fresh forms stay untouched and no
 *     element of an `_into` output changes;
 *   - a repeated `_into` call with the same shapes makes no heap allocation;
 *   - inputs may have any strides (a transposed or negatively strided view is fine); outputs
 *     of `_into` forms may have any strides that do not map two indices to one element, and
 *     must not overlap an input or each other (TL_E_ALIAS);
 *   - all four dtypes; singular values and eigenvalues are of the real dtype of the same
 *     precision (f32 for c64, f64 for c128).
 * A route runs on one thread whatever the surface: from a root surface it does not split
 * its work over the pool, and a team wider than one asked through tl_exec_set_team on a
 * child surface is TL_E_UNAVAILABLE (as for every route). Matrices are limited to extents
 * below 2^31 (LAPACK's index type): larger is TL_E_SHAPE.
 *
 * Errors common to all routes: TL_E_INVALID (a NULL argument, an unknown enum value, a
 * negative tolerance), TL_E_SHAPE (a rank or extent that does not fit, with both shapes in
 * the message), TL_E_DTYPE, TL_E_ALIAS, TL_E_UNAVAILABLE, TL_E_CANCELLED (cancelled before
 * it started), TL_E_SCRATCH_LIMIT, TL_E_NOMEM, TL_E_PROVIDER (LAPACK reported a failure,
 * e.g. an SVD or eigensolver that did not converge, or rejected an argument; the message
 * gives the routine and its info or argument), TL_E_NONFINITE (an input holds NaN or
 * infinity in an element the route would hand to LAPACK or BLAS: every route here takes
 * finite input only; the message names the argument and the first bad element's index,
 * column by column, and nothing is computed or written). Outputs are not checked: finite
 * input whose eigenvalues or singular values lie beyond the dtype's range (entries near its
 * largest value) gets +-inf in those places, as IEEE overflow gives, never NaN, with finite
 * vectors, and TL_OK. Caller-memory outputs (pivots, perm, rank) must not overlap any
 * tensor of the call (TL_E_ALIAS). Surface's thread only; everything is borrowed for the
 * call. */
#ifndef TENLANE_LINALG_H
#define TENLANE_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/session.h"
#include "tenlane/status.h"
#include "tenlane/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_uplo { TL_UPPER = 0, TL_LOWER = 1 } tl_uplo;
typedef enum tl_trans { TL_NO_TRANS = 0, TL_TRANS = 1, TL_CONJ_TRANS = 2 } tl_trans;
typedef enum tl_side { TL_LEFT = 0, TL_RIGHT = 1 } tl_side;
typedef enum tl_diag { TL_NON_UNIT = 0, TL_UNIT = 1 } tl_diag;

/* Which singular values (or, for tl_qrcp, which |r(i,i)|) to keep: the leading ones above
 * max(atol, rtol * largest), at most max_rank of them (0 = no cap). With all three zero
 * it keeps every nonzero value. A NULL truncation drops nothing: the full thin
 * factorization (min(m, n) of them, zeros included). */
typedef struct tl_truncation {
  size_t size;      /* sizeof(tl_truncation), set by tl_truncation_init */
  int64_t max_rank; /* >= 0; 0 = no cap */
  double rtol;      /* >= 0, relative to the largest */
  double atol;      /* >= 0, absolute */
} tl_truncation;

/* Fill `truncation` with "drop nothing" (every field zero) and set its size; then set the
 * fields wanted. (An initializer that starts with sizeof(tl_truncation) does the same.) A
 * truncation whose size is below the first version's is TL_E_INVALID in every call that
 * takes it. NULL is ignored. Any thread. */
TL_API void tl_truncation_init(tl_truncation *truncation);

/* What a truncation kept and dropped, filled by the `_reported` forms of tl_svd and tl_qrcp. With
 * the input's weight ||a||_F^2 in total_weight, the truncation error of the kept factors is
 * sqrt(discarded_weight) in the Frobenius norm, and discarded_weight / total_weight relative. */
typedef struct tl_truncation_report {
  int64_t rank;            /* values kept (the factors' inner extent) */
  double discarded_weight; /* sum of squares of what was dropped: the singular values past
                              rank (tl_svd_reported), ||r22||_F^2 of the unkept rows
                              (tl_qrcp_reported) */
  double total_weight;     /* ||a||_F^2 */
} tl_truncation_report;

/* ---- QR ------------------------------------------------------------------------------ */

/* Thin QR: a (m x n) = q (m x k) r (k x n), k = min(m, n); q has orthonormal columns, r is
 * upper trapezoidal. The `_into` form takes q and r of exactly those shapes. */
TL_API tl_status tl_qr_into(tl_exec *exec, const tl_tensor *a, tl_tensor *q, tl_tensor *r);
TL_API tl_status tl_qr(tl_exec *exec, const tl_tensor *a, tl_tensor *q, tl_tensor *r);

/* QR with column pivoting, truncated: a[:, perm] ~= q (m x rank) r (rank x n), with
 * |r(0,0)| >= |r(1,1)| >= ...; rank is the number of |r(i,i)| kept by `truncation` (NULL:
 * rank = min(m, n)). perm (n entries, caller memory) receives the 0-based column order;
 * *rank the rank. The `_into` form takes q (m x c) and r (c x n) with
 * c = min(m, n, max_rank if set) and writes the first `rank` columns of q and rows of r,
 * zeroing the rest. The fresh form makes q and r of exactly rank columns / rows. */
TL_API tl_status tl_qrcp_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                              tl_tensor *q, tl_tensor *r, int64_t *perm, int64_t *rank);
TL_API tl_status tl_qrcp(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                         tl_tensor *q, tl_tensor *r, int64_t *perm, int64_t *rank);

/* tl_qrcp filling a report instead of *rank (NULL: none). discarded_weight is the squared
 * Frobenius norm of the dropped trailing block (R22: the rows of r after `rank`, with the
 * part of a not yet factored when the truncation stopped early), summed from those entries
 * themselves, so it is accurate to rounding in the dropped part (0 when nothing is
 * dropped), not in ||a||_F^2. total_weight is ||a||_F^2. */
TL_API tl_status tl_qrcp_reported_into(tl_exec *exec, const tl_truncation *truncation,
                                       const tl_tensor *a, tl_tensor *q, tl_tensor *r,
                                       int64_t *perm, tl_truncation_report *report);
TL_API tl_status tl_qrcp_reported(tl_exec *exec, const tl_truncation *truncation,
                                  const tl_tensor *a, tl_tensor *q, tl_tensor *r, int64_t *perm,
                                  tl_truncation_report *report);

/* ---- SVD ----------------------------------------------------------------------------- */

/* Thin SVD, truncated: a ~= u (m x rank) diag(s) vt (rank x n), s descending and of the real
 * dtype. rank is how many singular values `truncation` keeps (NULL: min(m, n)), written to
 * *rank (may be NULL). u and vt are both given or both NULL (singular values only). The
 * `_into` form takes u (m x c), s (c), vt (c x n), c = min(m, n, max_rank if set), writes
 * the first `rank` and zeroes the rest; the fresh form makes them of exactly rank. */
TL_API tl_status tl_svd_into(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                             tl_tensor *u, tl_tensor *s, tl_tensor *vt, int64_t *rank);
TL_API tl_status tl_svd(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                        tl_tensor *u, tl_tensor *s, tl_tensor *vt, int64_t *rank);

/* tl_svd filling a report instead of *rank (NULL: none): discarded_weight is the sum of the
 * squares of the singular values past rank, total_weight of all of them. */
TL_API tl_status tl_svd_reported_into(tl_exec *exec, const tl_truncation *truncation,
                                      const tl_tensor *a, tl_tensor *u, tl_tensor *s, tl_tensor *vt,
                                      tl_truncation_report *report);
TL_API tl_status tl_svd_reported(tl_exec *exec, const tl_truncation *truncation, const tl_tensor *a,
                                 tl_tensor *u, tl_tensor *s, tl_tensor *vt,
                                 tl_truncation_report *report);

/* ---- LU and solves --------------------------------------------------------------------- */

/* LU with partial pivoting: a (m x n) = P l u, stored LAPACK-style in lu (m x n): the unit
 * lower triangle below the diagonal, u on and above it. pivots (min(m, n) entries, caller
 * memory): row i was swapped with row pivots[i] (0-based), in order. A singular a is not an
 * error here (u has a zero on its diagonal; tl_lu_solve reports it). */
TL_API tl_status tl_lu_into(tl_exec *exec, const tl_tensor *a, tl_tensor *lu, int64_t *pivots);
TL_API tl_status tl_lu(tl_exec *exec, const tl_tensor *a, tl_tensor *lu, int64_t *pivots);

/* Solve op(A) x = b from tl_lu's square factorization (lu n x n, its pivots). b is n x r or
 * a vector of n; x has b's shape. TL_E_INVALID when u has an exact zero on its diagonal
 * (the message names the index) or a pivot is out of range. */
TL_API tl_status tl_lu_solve_into(tl_exec *exec, tl_trans trans, const tl_tensor *lu,
                                  const int64_t *pivots, const tl_tensor *b, tl_tensor *x);

/* Solve a x = b for square a (LU with partial pivoting inside). b n x r or n; x as b.
 * TL_E_INVALID for an exactly singular a. */
TL_API tl_status tl_solve_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *x);
TL_API tl_status tl_solve(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *x);

/* Triangular solve with the triangle `uplo` of square t (the other triangle is not read):
 * side TL_LEFT: op(t) x = b; TL_RIGHT: x op(t) = b. b is m x r (left: t is m x m) or
 * r x n (right: t is n x n), or a vector for TL_LEFT; x has b's shape. diag TL_UNIT takes
 * t's diagonal as ones. TL_E_INVALID when a non-unit diagonal has an exact zero. */
TL_API tl_status tl_triangular_solve_into(tl_exec *exec, tl_side side, tl_uplo uplo, tl_trans trans,
                                          tl_diag diag, const tl_tensor *t, const tl_tensor *b,
                                          tl_tensor *x);
TL_API tl_status tl_triangular_solve(tl_exec *exec, tl_side side, tl_uplo uplo, tl_trans trans,
                                     tl_diag diag, const tl_tensor *t, const tl_tensor *b,
                                     tl_tensor *x);

/* ---- Symmetric / Hermitian eigenproblem --------------------------------------------------- */

/* a (n x n) = v diag(w) v^H with w ascending (real dtype) and v unitary; only the triangle
 * `uplo` of a is read. v may be NULL (eigenvalues only). The `_into` form takes w (n) and
 * v (n x n). A call also stops at tl_exec_cancel between two of its steps (at most about
 * 0.1 s apart on one core of the project's machine up to n = 4000; docs/reliability.md):
 * TL_E_CANCELLED, tl_eigh hands nothing out, and tl_eigh_into's w and v are unspecified,
 * since the copy of v out is one of the steps. */
TL_API tl_status tl_eigh_into(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w,
                              tl_tensor *v);
TL_API tl_status tl_eigh(tl_exec *exec, tl_uplo uplo, const tl_tensor *a, tl_tensor *w,
                         tl_tensor *v);

#ifdef __cplusplus
}
#endif
#endif
