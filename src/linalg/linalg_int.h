/* src/linalg/linalg_int.h: what the linear algebra files share.
 *
 * Two layers. The cores (lapack.c) are the LAPACK and BLAS calls on raw column-major
 * buffers, one entry per routine with the dtype as an argument: no surface, no allocation,
 * no message; they return LAPACK's info. The routes (qr.c, svd.c, lu.c, triangular.c,
 * eigh.c) check arguments, take every buffer from the surface's arena (matrix.c), run the
 * cores and write their outputs last. Invariant: nothing a caller can see is written until
 * every core call has succeeded. */
#ifndef TL_LINALG_INT_H
#define TL_LINALG_INT_H

#include <lapacke.h>
#include <stdint.h>

#include "base/isa.h"
#include "exec/exec.h"
#include "tenlane/linalg.h"
#include "tenlane/tensor.h"

/* ---- Cores (lapack.c) ---------------------------------------------------------------- */

/* Workspace sizes in elements: `work` of the matrix dtype, `rwork` of its real dtype,
 * `iwork` lapack_ints. */
typedef struct tl__la_work {
  int64_t work, rwork, iwork;
} tl__la_work;

/* Each *_query fills *sizes for the same arguments (buffers not touched) and returns info. */
lapack_int tl__lapack_geqrf_query(tl_dtype dtype, lapack_int m, lapack_int n, tl__la_work *sizes);
lapack_int tl__lapack_geqrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            void *tau, void *work, lapack_int lwork);
/* orgqr / ungqr: the first n columns of Q from k reflectors. */
lapack_int tl__lapack_ungqr_query(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k,
                                  tl__la_work *sizes);
lapack_int tl__lapack_ungqr(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k, void *a,
                            lapack_int lda, const void *tau, void *work, lapack_int lwork);
lapack_int tl__lapack_geqp3_query(tl_dtype dtype, lapack_int m, lapack_int n, tl__la_work *sizes);
lapack_int tl__lapack_geqp3(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            lapack_int *jpvt, void *tau, void *work, lapack_int lwork, void *rwork);
/* jobz 'S' (thin u and vt) or 'N' (values only). */
lapack_int tl__lapack_gesdd_query(tl_dtype dtype, char jobz, lapack_int m, lapack_int n,
                                  tl__la_work *sizes);
lapack_int tl__lapack_gesdd(tl_dtype dtype, char jobz, lapack_int m, lapack_int n, void *a,
                            lapack_int lda, void *s, void *u, lapack_int ldu, void *vt,
                            lapack_int ldvt, void *work, lapack_int lwork, void *rwork,
                            lapack_int *iwork);
/* The QR-iteration SVD, the fallback when gesdd does not converge. jobz 'S' or 'N'. */
lapack_int tl__lapack_gesvd_query(tl_dtype dtype, char jobz, lapack_int m, lapack_int n,
                                  tl__la_work *sizes);
lapack_int tl__lapack_gesvd(tl_dtype dtype, char jobz, lapack_int m, lapack_int n, void *a,
                            lapack_int lda, void *s, void *u, lapack_int ldu, void *vt,
                            lapack_int ldvt, void *work, lapack_int lwork, void *rwork);
/* tenlane's own LU with partial pivoting (getrf.c): LAPACK getrf's contract (column-major,
 * 1-based pivots, info > 0 at the first exact zero pivot); needs lda >= max(1, m). `pack`:
 * NULL, or tl__getrf_pack_bytes(dtype, m, n) bytes of 64-byte aligned scratch, which lets
 * its complex trailing updates run the packed complex GEMM kernel. Pure. */
lapack_int tl__getrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                     lapack_int *ipiv, void *pack);
size_t tl__getrf_pack_bytes(tl_dtype dtype, lapack_int m, lapack_int n);
/* getrf through tenlane's own LU (pack as tl__getrf's), or LAPACK's for a malformed call. */
lapack_int tl__lapack_getrf(tl_dtype dtype, lapack_int m, lapack_int n, void *a, lapack_int lda,
                            lapack_int *ipiv, void *pack);
/* trans 'N', 'T' or 'C'. */
lapack_int tl__lapack_getrs(tl_dtype dtype, char trans, lapack_int n, lapack_int nrhs,
                            const void *a, lapack_int lda, const lapack_int *ipiv, void *b,
                            lapack_int ldb);
/* The pieces of syevd / heevd that tl_eigh drives itself, so that it can stop between
 * panels (tl_exec_cancel); every one works on the lower triangle of a (n x n, lda).
 * latrd: one panel of nb columns of the tridiagonal reduction (sytrd / hetrd's step): e and
 * tau (real e) get the panel's entries, w (ldw x nb) the update factor; the trailing block is
 * not updated. rank2k: c -= a b^H + b a^H on the lower triangle of c (n x n; a and b n x k),
 * BLAS syr2k / her2k. sytrd: the whole reduction (sytrd / hetrd): d, e real. sterf: the
 * eigenvalues of the tridiagonal (d, e), ascending in d. The back-transformation's
 * pieces (larft_forward, larfb_left) are below. */
void tl__lapack_latrd_lower(tl_dtype dtype, lapack_int n, lapack_int nb, void *a, lapack_int lda,
                            void *e, void *tau, void *w, lapack_int ldw);
void tl__blas_rank2k_lower(tl_dtype dtype, lapack_int n, lapack_int k, const void *a,
                           lapack_int lda, const void *b, lapack_int ldb, void *c, lapack_int ldc);
lapack_int tl__lapack_sytrd_lower(tl_dtype dtype, lapack_int n, void *a, lapack_int lda, void *d,
                                  void *e, void *tau, void *work, lapack_int lwork);
lapack_int tl__lapack_sterf(tl_dtype real, lapack_int n, void *d, void *e);
/* steqr (compz 'I'): the eigenvalues (ascending in d) and vectors (z, n x n) of a
 * tridiagonal; work: max(1, 2n - 2) elements. laed1: one merge of stedc's divide and
 * conquer: d (n) and q (n x n) hold the two solved halves (orders cutpnt and n - cutpnt),
 * indxq their sorting permutations (1-based, each half's own), rho the off-diagonal entry
 * torn out; on return the merged eigenvalues and vectors, indxq the permutation that sorts
 * them. work: 4n + n^2, iwork: 4n. Both on the real dtype (tridiag.c). */
lapack_int tl__lapack_steqr(tl_dtype real, lapack_int n, void *d, void *e, void *z, lapack_int ldz,
                            void *work);
lapack_int tl__lapack_laed1(tl_dtype real, lapack_int n, void *d, void *q, lapack_int ldq,
                            lapack_int *indxq, double rho, lapack_int cutpnt, void *work,
                            lapack_int *iwork);
/* The pieces of one merge that tridiag.c drives itself in place of laed1 (all on the real
 * dtype). laed2: the deflation of the merge of d (n) and q (n x n, ldq) at n1 with the torn
 * entry *rho (laed2 replaces it by the rho of the secular equation); k gets the order of the
 * secular equation, z (n) the updating vector on entry (destroyed), dlamda and w (n) the
 * poles and weights, q2 (n1^2 + (n - n1)^2) the undeflated columns packed, iwork (4n): the
 * permutation that groups the columns at iwork + n and the counts of the four column types
 * at iwork + 2n. laed4: the roots from + 1 .. to of the secular equation of order k (d[j]
 * the root, column j of q its differences to the poles), stopping at the first failure.
 * gemm_real: c = a b (m x n, inner k; BLAS gemm 'N', 'N', through tenlane's entry as laed3
 * calls it). nrm2_real: the Euclidean norm of x (n), tenlane's nrm2. */
lapack_int tl__lapack_laed2(tl_dtype real, lapack_int *k, lapack_int n, lapack_int n1, void *d,
                            void *q, lapack_int ldq, lapack_int *indxq, double *rho, void *z,
                            void *dlamda, void *w, void *q2, lapack_int *iwork);
lapack_int tl__lapack_laed4(tl_dtype real, lapack_int k, lapack_int from, lapack_int to,
                            const void *dlamda, const void *w, void *q, lapack_int ldq, double rho,
                            void *d);
void tl__blas_gemm_real(tl_dtype real, lapack_int m, lapack_int n, lapack_int k, const void *a,
                        lapack_int lda, const void *b, lapack_int ldb, void *c, lapack_int ldc);
double tl__blas_nrm2_real(tl_dtype real, lapack_int n, const void *x);
/* orm2r_left: c (m x n) = H(1) ... H(k) c, the k reflectors stored column-wise in a (m x k,
 * below the diagonal; the diagonal is read and restored), one at a time (orm2r / unm2r,
 * 'L', 'N'); work holds n elements. */
lapack_int tl__lapack_orm2r_left(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k, void *a,
                                 lapack_int lda, const void *tau, void *c, lapack_int ldc,
                                 void *work);
/* larft_forward: t (k x k, upper) of the block of k reflectors stored column-wise in v
 * (m x k, unit lower trapezoidal, diagonal not read), H(1) ... H(k) = I - v t v^H. larfb_left:
 * c (m x n) = H(1) ... H(k) c; work is ldwork x k with ldwork >= n. */
lapack_int tl__lapack_larft_forward(tl_dtype dtype, lapack_int m, lapack_int k, const void *v,
                                    lapack_int ldv, const void *tau, void *t, lapack_int ldt);
lapack_int tl__lapack_larfb_left(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int k,
                                 const void *v, lapack_int ldv, const void *t, lapack_int ldt,
                                 void *c, lapack_int ldc, void *work, lapack_int ldwork);
/* b = inv(op(a)) b (side 'L') or b inv(op(a)) (side 'R'), BLAS trsm with alpha 1; b is
 * m x n. Never fails. */
void tl__blas_trsm(tl_dtype dtype, char side, char uplo, char trans, char diag, lapack_int m,
                   lapack_int n, const void *a, lapack_int lda, void *b, lapack_int ldb);
/* The same solve in plain loops (trsm_small.c), for a small triangle: no BLIS call, so no
 * lock of BLIS's process-wide pools. tl__blas_trsm uses it up to TL__TRSM_SMALL_MAX. */
void tl__trsm_small(tl_dtype dtype, char side, char uplo, char trans, char diag, lapack_int m,
                    lapack_int n, const void *a, lapack_int lda, void *b, lapack_int ldb);
#define TL__TRSM_SMALL_MAX 32

/* ---- Route helpers (matrix.c) ---------------------------------------------------------- */

/* Start a route: tl__exec_begin, then the team and cancellation checks. On failure the
 * call is already ended (return the status as is). */
tl_status tl__la_begin(tl_exec *exec, const char *route);

/* t is a valid matrix named `name`: rank 2 (or rank 1 when allow_vector, seen as n x 1),
 * extents below 2^31. Its extents in *rows, *cols. */
tl_status tl__la_matrix(const tl_tensor *t, const char *name, int allow_vector, int64_t *rows,
                        int64_t *cols);
/* An `_into` output named `name`: valid, of `dtype`, rank `rank` with extents d0 (and d1
 * for rank 2), no two indices on one element. */
tl_status tl__la_output(const tl_tensor *t, const char *name, tl_dtype dtype, int rank, int64_t d0,
                        int64_t d1);
/* TL_E_ALIAS when out overlaps other (NULL other passes). */
tl_status tl__la_disjoint(const tl_tensor *out, const char *out_name, const tl_tensor *other,
                          const char *other_name);

/* After a LAPACK call: TL_OK, or TL_E_CANCELLED (message naming route and routine) when the
 * surface was cancelled meanwhile; the products LAPACK made then returned zeros
 * (gemm_blas.c), so whatever LAPACK left must not be written out. When not cancelled, the
 * pause point TL__PAUSE_LINALG_STEP is passed (benches time the steps between looks). */
tl_status tl__la_cancelled(const tl_exec *exec, const char *route, const char *routine);
/* Columns of a rows-deep matrix of esize elements that one step of a plain pass (copy,
 * fill, widening) covers between two looks at the flag: TL__LA_PASS_BYTES of them, at least
 * one. The first touch of a fresh scratch or result is the slow part of such a pass (at
 * n = 4000 f64 0.1-0.3 s for one matrix). */
#define TL__LA_PASS_BYTES ((int64_t)8 << 20)
static inline int64_t tl__la_pass_columns(int64_t rows, size_t esize) {
  int64_t column = rows * (int64_t)esize;
  return column >= TL__LA_PASS_BYTES ? 1 : TL__LA_PASS_BYTES / (column > 0 ? column : 1);
}

/* `count` elements of `esize` bytes from the arena, 64-aligned (count 0 gives a valid
 * pointer). TL_E_SHAPE on overflow. */
tl_status tl__la_scratch(tl_exec *exec, int64_t count, size_t esize, void **out);
/* A fresh result in the surface's order (as tl__exec_fresh) left unfilled, for a route
 * that writes every element of it in steps: no step pays for its whole first touch. */
tl_status tl__la_fresh_unfilled(const tl_exec *exec, tl_dtype dtype, int rank, const int64_t *shape,
                                tl_tensor *out);

/* The three workspaces a query sized, from the arena: sizes->work elements of esize bytes,
 * sizes->rwork of rsize (the real dtype) and sizes->iwork lapack_ints. */
tl_status tl__la_workspace(tl_exec *exec, const tl__la_work *sizes, size_t esize, size_t rsize,
                           void **work, void **rwork, void **iwork);

/* Copy matrix t (rows x cols; a vector is rows x 1) into column-major buf with leading
 * dimension ld. */
void tl__la_gather(const tl_tensor *t, void *buf, int64_t ld);
/* Sum of |x|^2 over the rows x cols block of column-major buf (leading dimension ld) of
 * `dtype` (a complex dtype counts both parts), in double. */
double tl__la_sum_squares(tl_dtype dtype, const void *buf, int64_t ld, int64_t rows, int64_t cols);
/* Write the rows x cols block of column-major buf (leading dimension ld) into t's top-left
 * corner and zero the rest of t (t may be larger, never smaller). */
void tl__la_scatter(const void *buf, int64_t ld, int64_t rows, int64_t cols, const tl_tensor *t);

/* How many of the k values (descending, real dtype `real`) to keep under truncation
 * (NULL: all k). */
int64_t tl__la_truncate(tl_dtype real, const void *values, int64_t k,
                        const tl_truncation *truncation);
/* TL_E_INVALID for negative or NaN tolerances or a negative max_rank (NULL passes). */
tl_status tl__la_check_truncation(const tl_truncation *truncation, const char *route);

/* LAPACK's leading dimension for a matrix of `rows` rows. */
/* One blocked step of pivoted QR on the real dtypes (LAPACK laqps): at most nb columns,
 * starting `offset` rows down; returns how many steps it did. vn1/vn2 hold the partial and
 * exact norms of columns offset.. (updated), auxv nb scalars, f (ldf x nb). */
lapack_int tl__lapack_laqps(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int offset,
                            lapack_int nb, void *a, lapack_int lda, lapack_int *jpvt, void *tau,
                            void *vn1, void *vn2, void *auxv, void *f, lapack_int ldf);
/* One unblocked step of pivoted QR on f32, f64 or c128 (LAPACK laqp2's step, level-2 BLAS
 * only): at row and column i of a (m x n, lda), pivot the column of largest vn1 among
 * i..n-1 to i, make its reflector (tau[i]), apply it to columns i+1.., and update the
 * partial norms vn1/vn2 (of the real dtype) of those columns (recomputed where they lost
 * accuracy). work: n elements. */
void tl__lapack_qp_step(tl_dtype dtype, lapack_int m, lapack_int n, lapack_int i, void *a,
                        lapack_int lda, lapack_int *jpvt, void *tau, void *vn1, void *vn2,
                        void *work);
/* The 2-norms of the n columns of a (m x n, lda), f32, f64 or c128, into norms of the real
 * dtype. */
void tl__lapack_column_norms(tl_dtype dtype, lapack_int m, lapack_int n, const void *a,
                             lapack_int lda, void *norms);

static inline lapack_int tl__la_ld(int64_t rows) { return rows > 1 ? (lapack_int)rows : 1; }

/* 1 when matrix t (rank 2) of `rows` rows is dense column-major: unit row stride and column
 * stride rows, so LAPACK can read or factor it in place with leading dimension
 * tl__la_ld(rows). */
static inline int tl__la_dense(const tl_tensor *t, int64_t rows) {
  if (t->rank != 2 || rows < 1 || t->strides[0] != 1) return 0;
  return t->shape[1] <= 1 || t->strides[1] == rows;
}

/* 1 when an `_into` route may factor in its output: a and every output (out2 may be NULL)
 * are dense column-major of the rows given, and the injected LAPACK argument fault is off
 * (the only failure left once the output is written, so a failing call still writes
 * nothing). The in-place paths of tl_lu_into and tl_qr_into. */
int tl__la_in_place(const tl_tensor *a, int64_t a_rows, const tl_tensor *out, int64_t out_rows,
                    const tl_tensor *out2, int64_t out2_rows);
/* Check dense column-major a (rows x cols) for non-finite values where it lies, then copy it
 * into out's memory (dense column-major, the same shape), whose first element is returned in
 * *base. Nothing is written when the check fails. */
tl_status tl__la_copy_finite(const char *route, const char *name, const tl_tensor *a,
                             const tl_tensor *out, char **base);

/* A LAPACK info that is not zero, as TL_E_PROVIDER with the routine's name; when xerbla
 * recorded an argument error on this thread, the message names the routine that raised it
 * and the argument (and the record is taken). */
tl_status tl__la_provider_fail(const char *route, const char *routine, lapack_int info);

/* ---- The tridiagonal eigensolver in pieces (tridiag.c) ---------------------------------- */

/* 1 sends every merge to LAPACK's laed1 in one call (one piece) instead of tridiag.c's own
 * merge in chunks, and every block without vectors to sterf instead of tridiag.c's QL
 * iteration in chunks: tests compare the two. 0 by default; set it only while no eigh
 * runs. */
extern int tl__tridiag_by_lapack;
/* The eigenvalues of the real symmetric tridiagonal (d: n, e: n - 1, of the real dtype),
 * ascending in d; with z != NULL also its eigenvectors in z (n x n, ldz): stedc's algorithm
 * (compz 'I') without vectors sterf's, run one piece at a time (an unreduced block, a leaf,
 * a merge of the divide and conquer or, for a merge or a block without vectors of order
 * > 362, one chunk of its roots, weights, columns or eigenvalues) with a look at the cancel flag
 * before each and once at the end. work: TL__TRIDIAG_WORK(n) elements of the real dtype, iwork:
 * TL__TRIDIAG_IWORK(n) (both unused and may be NULL without vectors). e is destroyed. Errors:
 * TL_E_CANCELLED (message naming route and the pieces left), a LAPACK failure. */
#define TL__TRIDIAG_WORK(n) (1 + 4 * (int64_t)(n) + (int64_t)(n) * (int64_t)(n))
#define TL__TRIDIAG_IWORK(n) (3 + 6 * (int64_t)(n))
tl_status tl__tridiag_solve(tl_exec *exec, const char *route, tl_dtype real, int64_t n, char *d,
                            char *e, char *z, lapack_int ldz, char *work, lapack_int *iwork);

/* ---- Argument errors (xerbla.c) --------------------------------------------------------- */

/* What the cores return when xerbla_ fired during a call that itself reported success
 * (an inner routine rejected an argument and its caller went on): a failure, never 0. */
#define TL__LA_XERBLA_INFO (-1000000)

/* xerbla.c's handler for LAPACK's and BLAS's argument errors (gfortran's interface: the
 * name, not NUL-terminated, the 1-based position, the name's length): records them for the
 * calling thread and returns. gemv.c's checks call it too. */
int xerbla_(const char *routine, const int *argument, size_t routine_length);
/* 1 and the routine's name and the argument's position when xerbla_ was called on this
 * thread since the last take (the record is cleared); 0 otherwise. */
int tl__xerbla_take(char routine[16], int *argument);
/* ---- The BLAS entries tenlane defines for LAPACK (gemv.c, gemm_blas.c, ger.c, trmm.c) ---- */

/* The name of one of those entries. With BLIS (TL_BLAS_OWN_ENTRIES, cmake/Providers.cmake)
 * it is the Fortran name itself, so that LAPACK's calls reach tenlane's kernels and the rest
 * goes to BLIS's typed API. With a Fortran BLAS provider (reference, OpenBLAS) the entry is
 * tl__own_<name>: the entry's fallback (tl__prov_gemv, ...) calls the provider's routine,
 * which under the Fortran name would call itself. OpenBLAS's LAPACK calls OpenBLAS's own
 * routines; reference LAPACK's ?gemm_ and ?gemv_ calls are renamed to the tl__own_ entries in
 * the copy of its archive that is linked (cmake/Providers.cmake), for their cancellation.
 * The entries stay built either way, so their tests run with every provider. */
#if TL_BLAS_OWN_ENTRIES
#define TL__BLAS_ENTRY(name) name
#else
#define TL__BLAS_ENTRY(name) tl__own_##name
#endif

/* A BLAS or LAPACK character argument as LSAME reads it: its first letter, upper case. */
static inline char tl__blas_letter(const char *c) {
  return (char)(c[0] >= 'a' && c[0] <= 'z' ? c[0] - 'a' + 'A' : c[0]);
}

/* A BLAS trans argument: 0 for 'N', 1 for 'T', 2 for 'C' (either case), -1 otherwise. */
static inline int tl__blas_trans(const char *t) {
  const char c = tl__blas_letter(t);
  return c == 'N' ? 0 : c == 'T' ? 1 : c == 'C' ? 2 : -1;
}

/* A BLAS vector's first element as BLIS and the kernels take it: the last in memory for a
 * negative increment. */
#define TL__BLAS_FIRST(p, len, inc) ((inc) < 0 ? (p) - ((int64_t)(len)-1) * (int64_t)(inc) : (p))

/* 1 (default) lets gemv.c, gemm_blas.c and ger.c run f64 and c128 on tenlane's AVX-512
 * kernels where the CPU has them; 0 sends every call to the provider's (tests run both, the
 * benchmark's BLIS anchor runs with 0; set it only while no LAPACK runs). Defined in
 * gemv.c. */
extern int tl__blas_isa_cap;
/* Each replacement's own switch (bench_providers' earn-its-place rows turn one off at a
 * time): a TL__BLAS_OWN_* bit set in tl__blas_off sends that file's calls to the provider.
 * 0 by default; set it only while no LAPACK runs. Defined in gemv.c. */
enum {
  TL__BLAS_OWN_GEMV = 1, /* gemv.c */
  TL__BLAS_OWN_GER = 2,  /* ger.c */
  TL__BLAS_OWN_GEMM = 4  /* gemm_blas.c with gemm_narrow.c */
};
extern int tl__blas_off;
/* 1 when tenlane's kernel `which` (TL__BLAS_OWN_*) takes f64 and c128 BLAS calls: not
 * capped, not switched off, AVX-512F present. */
static inline int tl__blas_own_kernels(int which) {
  return tl__blas_isa_cap >= 1 && !(tl__blas_off & which) && tl__isa_level() >= TL__ISA_AVX512;
}

/* gemv.c defines the BLAS matrix-vector products LAPACK calls (sgemv_, dgemv_, cgemv_,
 * zgemv_) in place of BLIS's: f64 and c128 on tenlane's AVX-512 kernels, the rest through
 * BLIS's typed gemv. Returns 1; tl__la_begin calls it so a static link takes gemv.c's object in
 * before LAPACK's archive is searched. */
int tl__gemv_linked(void);
/* gemm_blas.c defines the BLAS matrix products LAPACK calls (sgemm_, dgemm_, cgemm_, zgemm_)
 * in place of BLIS's: f64 and c128 in the shapes gemm_narrow.c takes on its AVX-512 kernels,
 * the rest through BLIS's typed gemm. tl__gemm_blas_linked as tl__gemv_linked. */
int tl__gemm_blas_linked(void);
/* ger.c defines the BLAS rank-1 updates LAPACK calls (sger_, dger_, cgerc_, cgeru_, zgerc_,
 * zgeru_) in place of BLIS's: f64 and c128 on its AVX-512 kernels, the rest through BLIS's
 * typed ger. tl__ger_linked as tl__gemv_linked. */
int tl__ger_linked(void);
/* trmm.c defines the BLAS triangular products LAPACK calls (strmm_, dtrmm_, ctrmm_, ztrmm_)
 * in place of BLIS's: the reference BLAS's checks, then the provider's trmm (no kernel of
 * tenlane's since 2026-12-05). tl__trmm_linked as tl__gemv_linked. */
int tl__trmm_linked(void);
/* gemm_narrow.c: 1 when its kernels take a product of this shape (ta, tb 0 'N', 1 'T',
 * 2 'C'; esize the bytes of one element): op(A) = A with k <= 128 and C at most 2 MiB, or
 * with n <= 128 and C at most 512 KiB; op(A) = A^T or A^H with op(B) = B, n <= 128,
 * k <= 1024 and C at most 512 KiB. */
int tl__gemm_narrow_fits(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t esize);
/* C = alpha op(A) op(B) + beta C in f64 (ta, tb 0 or 1) and c128 (interleaved doubles;
 * alpha and beta point at re, im; ta, tb 0, 1 or 2), column-major with leading dimensions,
 * for shapes tl__gemm_narrow_fits takes, alpha != 0, m, n, k > 0; beta 0 never reads C.
 * Needs AVX-512F. */
void tl__gemm_narrow_d(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                       double *c, int64_t ldc);
void tl__gemm_narrow_z(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *alpha,
                       const double *a, int64_t lda, const double *b, int64_t ldb,
                       const double *beta, double *c, int64_t ldc);
/* 1 when xerbla_ was called on this thread since the last take. */
int tl__xerbla_pending(void);

/* ---- Non-finite input (matrix.c) ----------------------------------------------------- */

/* TL_E_NONFINITE when the rows x cols column-major buf (leading dimension ld, dtype) holds
 * NaN or infinity in the part a route hands to LAPACK or BLAS: part 'A' every element,
 * 'U' / 'L' the upper / lower triangle; unit_diagonal leaves the diagonal out. The
 * message names the route, the argument `name` and the first bad element's index (column
 * by column). */
tl_status tl__la_finite(const char *route, const char *name, tl_dtype dtype, const void *buf,
                        int64_t ld, int64_t rows, int64_t cols, char part, int unit_diagonal,
                        int vector);
/* Gather t into buf (tl__la_gather), then tl__la_finite over every element. */
tl_status tl__la_gather_finite(const char *route, const char *name, const tl_tensor *t, void *buf,
                               int64_t ld);

/* TL_E_ALIAS when the `count` int64_t outputs at `out` (pivots, a permutation, a rank)
 * overlap the memory of tensor t (NULL t or count 0 passes). */
tl_status tl__la_disjoint_ints(const char *route, const int64_t *out, int64_t count,
                               const char *out_name, const tl_tensor *t, const char *t_name);

#endif
