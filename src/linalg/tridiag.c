/* src/linalg/tridiag.c: the eigenproblem of a real symmetric tridiagonal matrix (tl_eigh's
 * solver step) run in pieces, so that tl_exec_cancel is seen inside it.
 *
 * The matrix is cut into unreduced blocks where an off-diagonal entry is negligible (stedc's
 * test: |e_i| <= eps sqrt|d_i| sqrt|d_i+1|). Without vectors a block of order up to
 * TL__TRIDIAG_CHUNKED goes to sterf, a larger one to ql_block (sterf's root-free QL
 * iteration written here, a piece per window of chunk_of(m) eigenvalues), and the
 * eigenvalues are sorted at the end. With vectors a block of order at most
 * TL__TRIDIAG_LEAF goes to steqr; a larger one is scaled to norm 1 and solved by divide and
 * conquer driven here: halved level by level until every part has order <= TL__TRIDIAG_LEAF,
 * each tear a rank-one change (the torn entry taken off the two diagonal entries beside it),
 * each leaf solved by steqr, then the halves merged pairwise, level by level, as LAPACK's
 * laed1 merges them (deflation, the secular equation, the product with the halves' vectors).
 * That is stedc's own sequence (compz 'I': its laed0 with icompq 2), so results agree with
 * stedc's within rounding; the columns are sorted by eigenvalue at the end as stedc sorts
 * them.
 *
 * A merge is driven here (merge_halves) rather than handed to laed1 whole: LAPACK's laed2
 * deflates, laed4 finds the roots of the secular equation a chunk of roots at a time, and the
 * rest of laed1's work is written here: the weights recomputed from the roots found (Gu and
 * Eisenstat's formula, which keeps the vectors orthogonal), each vector of the rank-one
 * change normalised, and the products with the halves' vectors, a chunk of columns at a
 * time. A merge of order above TL__TRIDIAG_CHUNKED passes a piece before each of those
 * chunks, so the top merge of a large block is no longer one step.
 *
 * Invariant: before every piece (a block, a leaf, a merge, a chunk of a large merge) the
 * cancel flag is looked at, then the pause point TL__PAUSE_TRIDIAG_PIECE is passed (tests
 * raise the flag there); once more after the last piece. The longest piece is, without
 * vectors, one window of the QL iteration (about TL__TRIDIAG_CHUNK_WORK / m eigenvalues,
 * O(m^2) together) or sterf on a block of order <= TL__TRIDIAG_CHUNKED; with vectors the
 * deflation of the top merge (O(m^2) data movement) or one chunk (about
 * TL__TRIDIAG_CHUNK_WORK / m roots, or as many columns of the product, O(m^2) each). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/fault.h"
#include "linalg_int.h"

/* The largest order solved by steqr directly (stedc's crossover, ilaenv's smlsiz). */
#define TL__TRIDIAG_LEAF 25
/* A merge of order m runs its roots, weights and columns in chunks of
 * chunk_of(m) = max(8, TL__TRIDIAG_CHUNK_WORK / m): each chunk touches about
 * TL__TRIDIAG_CHUNK_WORK entries per unit of work per entry (laed4's iterations; the
 * product's m / 2 inner length), a few milliseconds at m = 4000 on one core. A merge whose
 * order is at most TL__TRIDIAG_CHUNKED (one chunk per phase) stays one piece. */
#define TL__TRIDIAG_CHUNK_WORK 131072
#define TL__TRIDIAG_CHUNKED 362

int tl__tridiag_by_lapack = 0;

static double get(tl_dtype real, const char *p, int64_t i) {
  return real == TL_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void put(tl_dtype real, char *p, int64_t i, double value) {
  if (real == TL_F32) {
    ((float *)p)[i] = (float)value;
  } else {
    ((double *)p)[i] = value;
  }
}

/* The order of the unreduced block that begins at `start`. */
static int64_t block_end(tl_dtype real, const char *d, const char *e, int64_t start, int64_t n) {
  double eps = real == TL_F32 ? (double)FLT_EPSILON * 0.5 : DBL_EPSILON * 0.5;
  int64_t end = start;
  while (end < n - 1) {
    double tiny = eps * sqrt(fabs(get(real, d, end))) * sqrt(fabs(get(real, d, end + 1)));
    if (!(fabs(get(real, e, end)) > tiny)) break;
    end++;
  }
  return end + 1;
}

/* The number of leaves divide and conquer makes of a block of order m: halved while the
 * largest part (the rounded-up half) exceeds TL__TRIDIAG_LEAF. */
static int64_t leaves_of(int64_t m) {
  int64_t leaves = 1;
  while (m > TL__TRIDIAG_LEAF) {
    m = (m + 1) / 2;
    leaves *= 2;
  }
  return leaves;
}

/* The columns (and roots) of one chunk of a merge of order m. */
static int64_t chunk_of(int64_t m) {
  int64_t c = TL__TRIDIAG_CHUNK_WORK / (m > 0 ? m : 1);
  return c < 8 ? 8 : c;
}

/* The pieces the eigenvalues of a block of order m cost without vectors: one for sterf's
 * size (up to TL__TRIDIAG_CHUNKED, or under tl__tridiag_by_lapack), else one per window of
 * chunk_of(m) eigenvalues of the QL iteration (ql_block). */
static int64_t values_pieces(int64_t m) {
  if (m <= TL__TRIDIAG_CHUNKED || tl__tridiag_by_lapack) return 1;
  return (m + chunk_of(m) - 1) / chunk_of(m);
}

/* The pieces one merge of order m costs: one, or for a chunked merge one (the deflation)
 * plus a chunk count for each of its three phases (roots, weights, columns). */
static int64_t merge_pieces(int64_t m) {
  if (m <= TL__TRIDIAG_CHUNKED || tl__tridiag_by_lapack) return 1;
  return 1 + 3 * ((m + chunk_of(m) - 1) / chunk_of(m));
}

/* The pieces divide_and_conquer's final sort of a block of order m costs: none when its top
 * merge is one piece, else one per chunk of columns gathered and one per chunk copied back
 * (the sort moves 2 m^2 entries, as much as a large merge's deflation). */
static int64_t sort_pieces(int64_t m) {
  if (merge_pieces(m) == 1) return 0;
  return 2 * ((m + chunk_of(m) - 1) / chunk_of(m));
}

/* The pieces of the part of order m that divide_and_conquer halves `levels` more times
 * (every part of a level is halved, rounded down left, up right): a leaf is one piece. */
static int64_t tree_pieces(int64_t m, int64_t levels) {
  if (levels == 0) return 1;
  return merge_pieces(m) + tree_pieces(m / 2, levels - 1) + tree_pieces((m + 1) / 2, levels - 1);
}

/* The pieces a block of order m costs: none for order 1, one (sterf, steqr) for a small
 * block or without vectors, leaves and merges (with their chunks) for divide and conquer. */
static int64_t pieces_of(int64_t m, int vectors) {
  if (m <= 1) return 0;
  if (!vectors) return values_pieces(m);
  if (m <= TL__TRIDIAG_LEAF) return 1;
  int64_t levels = 0;
  for (int64_t leaves = leaves_of(m); leaves > 1; leaves /= 2) levels++;
  return tree_pieces(m, levels) + sort_pieces(m);
}

typedef struct progress {
  tl_exec *exec;
  const char *route;
  const char *how;
  int64_t done, total;
} progress;

/* The look at the flag before a piece (or after the last), then the pause point. */
static tl_status next_piece(progress *p) {
  if (tl__exec_cancelled(p->exec)) {
    return tl__fail(TL_E_CANCELLED,
                    "%s: cancelled while the tridiagonal solver ran (%s): %lld of %lld pieces "
                    "were not started (outputs unspecified)",
                    p->route, p->how, (long long)(p->total - p->done), (long long)p->total);
  }
  if (p->done < p->total) tl__pause(TL__PAUSE_TRIDIAG_PIECE);
  p->done++;
  return TL_OK;
}

/* The arithmetic of a merge that LAPACK does not provide as a routine, for float and double.
 *
 * weights: Gu and Eisenstat's recomputation of the updating vector from the roots found, so
 * that the vectors come out orthogonal even when roots lie close to poles. Column j of q
 * holds dlamda[i] - root_j; the weight of pole i is the product of those differences over
 * every root divided by the product of dlamda[i] - dlamda[j] over the other poles. w starts
 * as the i = j difference; each root j in [from, to) multiplies every other weight by its
 * factor, so that per weight the factors come in the order of j and a run in chunks gives
 * the same products as one pass. finish: the square root of minus the product, with the
 * sign of the weight laed2 gave (kept in sign).
 *
 * vectors: column j of the rank-one change's eigenvectors is w[i] / (dlamda[i] - root_j),
 * normalised; row i of the result takes entry indx[i] - 1 (laed2's grouping of the columns
 * into upper, dense and lower ones, the order the products below read them in). */
#define TL__MERGE_KERNELS(T, SUFFIX, SQRT, COPYSIGN)                                         \
  static void weights_##SUFFIX(int64_t k, int64_t from, int64_t to, const T *q, int64_t ldq, \
                               const T *dlamda, T *w) {                                      \
    for (int64_t j = from; j < to; j++) {                                                    \
      const T *delta = q + j * ldq, pole = dlamda[j];                                        \
      for (int64_t i = 0; i < j; i++) w[i] *= delta[i] / (dlamda[i] - pole);                 \
      for (int64_t i = j + 1; i < k; i++) w[i] *= delta[i] / (dlamda[i] - pole);             \
    }                                                                                        \
  }                                                                                          \
  static void finish_##SUFFIX(int64_t k, T *w, const T *sign) {                              \
    for (int64_t i = 0; i < k; i++) w[i] = COPYSIGN(SQRT(-w[i]), sign[i]);                   \
  }                                                                                          \
  static void vectors_##SUFFIX(tl_dtype real, int64_t k, int64_t from, int64_t to, T *q,     \
                               int64_t ldq, const T *w, const lapack_int *indx, T *temp) {   \
    for (int64_t j = from; j < to; j++) {                                                    \
      T *column = q + j * ldq;                                                               \
      for (int64_t i = 0; i < k; i++) temp[i] = w[i] / column[i];                            \
      T norm = (T)tl__blas_nrm2_real(real, (lapack_int)k, temp);                             \
      for (int64_t i = 0; i < k; i++) column[i] = temp[indx[i] - 1] / norm;                  \
    }                                                                                        \
  }

TL__MERGE_KERNELS(double, d, sqrt, copysign)
TL__MERGE_KERNELS(float, s, sqrtf, copysignf)

/* The eigenvalues of one unreduced block without vectors, by the root-free QL iteration with
 * implicit shifts of Pal, Walker and Kahan (the algorithm of LAPACK's sterf), written here
 * so that it can stop between eigenvalues: ql_window runs the iteration until the top of the
 * active part (*top, everything above it converged) reaches `stop`. e2 holds the squares of
 * the off-diagonal entries; a negligible one (e2[i] <= eps^2 |d[i] d[i + 1]|) splits the
 * active part, the upper piece is iterated on until its top entry converges (a 1 x 1 piece)
 * or a 2 x 2 piece is solved directly. Each sweep chases the shift (the eigenvalue of the
 * top 2 x 2 nearer its top entry) up from the split point, carrying the rotation's cosine
 * and sine squared in c and s. Returns 1 when *sweeps passes `limit` (no convergence). */
#define TL__QL_KERNEL(T, SUFFIX, SQRT, HYPOT, COPYSIGN, FABS, EPS)                                 \
  static int ql_window_##SUFFIX(T *d, T *e2, int64_t m, int64_t *top, int64_t stop,                \
                                int64_t *sweeps, int64_t limit) {                                  \
    const T eps2 = (EPS) * (EPS);                                                                  \
    int64_t l = *top;                                                                              \
    while (l < stop && l < m) {                                                                    \
      int64_t end = l;                                                                             \
      while (end + 1 < m && !(FABS(e2[end]) <= eps2 * FABS(d[end] * d[end + 1]))) end++;           \
      if (end + 1 < m) e2[end] = 0;                                                                \
      if (end == l) { /* d[l] converged */                                                         \
        l++;                                                                                       \
        continue;                                                                                  \
      }                                                                                            \
      if (end == l + 1) { /* a 2 x 2 piece: its eigenvalues, the larger by the sum */              \
        T b = SQRT(e2[l]), p = d[l], q = d[l + 1], sum = p + q;                                    \
        T root = HYPOT(p - q, 2 * b), big = p > q ? p : q, small = p > q ? q : p;                  \
        T one = sum > 0 ? (T)0.5 * (sum + root) : sum < 0 ? (T)0.5 * (sum - root) : (T)0.5 * root; \
        T other = sum != 0 ? (big / one) * small - (b / one) * b : -(T)0.5 * root;                 \
        d[l] = one, d[l + 1] = other, e2[l] = 0;                                                   \
        l += 2;                                                                                    \
        continue;                                                                                  \
      }                                                                                            \
      if (++*sweeps > limit) {                                                                     \
        *top = l;                                                                                  \
        return 1;                                                                                  \
      }                                                                                            \
      T b = SQRT(e2[l]), p = d[l];                                                                 \
      T g = (d[l + 1] - p) / (2 * b), r = HYPOT(g, (T)1);                                          \
      T shift = p - b / (g + COPYSIGN(r, g));                                                      \
      T c = 1, sn = 0, gamma = d[end] - shift, pp = gamma * gamma;                                 \
      for (int64_t i = end - 1; i >= l; i--) {                                                     \
        T bb = e2[i], sum = pp + bb;                                                               \
        if (i != end - 1) e2[i + 1] = sn * sum;                                                    \
        T old_c = c, old_gamma = gamma, alpha = d[i];                                              \
        c = pp / sum;                                                                              \
        sn = bb / sum;                                                                             \
        gamma = c * (alpha - shift) - sn * old_gamma;                                              \
        d[i + 1] = old_gamma + (alpha - gamma);                                                    \
        pp = c != 0 ? (gamma * gamma) / c : old_c * bb;                                            \
      }                                                                                            \
      e2[l] = sn * pp;                                                                             \
      d[l] = shift + gamma;                                                                        \
    }                                                                                              \
    *top = l;                                                                                      \
    return 0;                                                                                      \
  }

TL__QL_KERNEL(double, d, sqrt, hypot, copysign, fabs, DBL_EPSILON * 0.5)
TL__QL_KERNEL(float, s, sqrtf, hypotf, copysignf, fabsf, FLT_EPSILON * 0.5f)

/* The eigenvalues of the unreduced block of order m at (d, e) (e destroyed), a piece per
 * window of chunk_of(m) eigenvalues. As sterf: scaled into [sqrt(safmin) / eps^2,
 * sqrt(safmax) / 3] when its largest entry is outside (so the squares neither overflow nor
 * underflow), the order reversed when its last diagonal entry is smaller in magnitude than
 * its first (QL converges from the top; sterf runs QR then), at most 30 m sweeps. */
static tl_status ql_block(progress *p, tl_dtype real, int64_t m, char *d, char *e) {
  double eps = real == TL_F32 ? (double)FLT_EPSILON * 0.5 : DBL_EPSILON * 0.5;
  double safmin = real == TL_F32 ? (double)FLT_MIN : DBL_MIN;
  double low = sqrt(safmin) / (eps * eps), high = sqrt(1.0 / safmin) / 3.0;
  double norm = 0.0;
  for (int64_t i = 0; i < m; i++) norm = fmax(norm, fabs(get(real, d, i)));
  for (int64_t i = 0; i + 1 < m; i++) norm = fmax(norm, fabs(get(real, e, i)));
  double to = norm > high ? high : norm < low && norm > 0.0 ? low : norm;
  int reverse = fabs(get(real, d, m - 1)) < fabs(get(real, d, 0));
  for (int64_t i = 0; i < m; i++) { /* scaled, reversed, e squared; in place */
    int64_t j = reverse ? m - 1 - i : i;
    if (j < i) continue;
    double di = get(real, d, i) * (to / norm), dj = get(real, d, j) * (to / norm);
    if (norm == to) di = get(real, d, i), dj = get(real, d, j);
    put(real, d, i, dj);
    put(real, d, j, di);
  }
  for (int64_t i = 0; i + 1 < m; i++) {
    int64_t j = reverse ? m - 2 - i : i;
    if (j < i) continue;
    double ei = norm == to ? get(real, e, i) : get(real, e, i) * (to / norm);
    double ej = norm == to ? get(real, e, j) : get(real, e, j) * (to / norm);
    put(real, e, i, ej * ej);
    put(real, e, j, ei * ei);
  }
  int64_t step = values_pieces(m) > 1 ? chunk_of(m) : m, top = 0, sweeps = 0;
  tl_status status;
  for (int64_t first = 0; first < m; first += step) {
    if (first > 0 && (status = next_piece(p)) != TL_OK) return status;
    int64_t stop = first + step < m ? first + step : m;
    int failed = real == TL_F32
                     ? ql_window_s((float *)d, (float *)e, m, &top, stop, &sweeps, 30 * m)
                     : ql_window_d((double *)d, (double *)e, m, &top, stop, &sweeps, 30 * m);
    if (failed) {
      return tl__fail(TL_E_PROVIDER,
                      "%s: the QL iteration (sterf's algorithm) did not converge on a block of "
                      "order %lld: %lld eigenvalues found after %lld sweeps",
                      p->route, (long long)m, (long long)top, (long long)sweeps);
    }
  }
  if (norm != to) {
    for (int64_t i = 0; i < m; i++) put(real, d, i, get(real, d, i) * (norm / to));
  }
  return TL_OK;
}

/* Rows [row, row + rows) of columns [from, to) of q (ldq) copied to the packed to. */
static void copy_rows(size_t rsize, const char *q, lapack_int ldq, int64_t row, int64_t rows,
                      int64_t from, int64_t to, char *packed) {
  for (int64_t j = from; j < to; j++) {
    memcpy(packed + (size_t)(j - from) * (size_t)rows * rsize,
           q + rsize * ((size_t)row + (size_t)j * (size_t)ldq), (size_t)rows * rsize);
  }
}

/* Columns [from, to) of q (ldq, order n, halves cut and n - cut) become the products of the
 * halves' vectors packed in q2 (laed2's: cut x n12, then (n - cut) x n23) with the rank-one
 * change's vectors in those columns' top rows (its rows first..first + n23 feed the lower
 * half, rows 0..n12 the upper), both copied to packed first as the lower product overwrites
 * them. An empty product gives zeros. */
static void multiply(tl_dtype real, lapack_int n, lapack_int cut, char *q, lapack_int ldq,
                     const char *q2, lapack_int first, lapack_int n12, lapack_int n23, int64_t from,
                     int64_t to, char *packed) {
  size_t rsize = tl_dtype_size(real);
  lapack_int columns = (lapack_int)(to - from), n2 = n - cut;
  char *lower = q + rsize * ((size_t)cut + (size_t)from * (size_t)ldq);
  char *upper = q + rsize * (size_t)from * (size_t)ldq;
  copy_rows(rsize, q, ldq, first, n23, from, to, packed);
  if (n23 > 0) {
    tl__blas_gemm_real(real, n2, columns, n23, q2 + rsize * (size_t)cut * (size_t)n12, n2, packed,
                       n23, lower, ldq);
  } else {
    for (int64_t j = 0; j < columns; j++) {
      memset(lower + (size_t)j * (size_t)ldq * rsize, 0, (size_t)n2 * rsize);
    }
  }
  copy_rows(rsize, q, ldq, 0, n12, from, to, packed);
  if (n12 > 0) {
    tl__blas_gemm_real(real, cut, columns, n12, q2, cut, packed, n12, upper, ldq);
  } else {
    for (int64_t j = 0; j < columns; j++) {
      memset(upper + (size_t)j * (size_t)ldq * rsize, 0, (size_t)cut * rsize);
    }
  }
}

/* One merge of divide and conquer, as laed1 computes it, in pieces: d (n) and q (n x n, ldq)
 * hold the solved halves (orders cut and n - cut), indxq their sorting permutations (1-based,
 * each half's own), rho the torn entry; on return the merged eigenvalues and vectors and in
 * indxq the permutation that sorts them. The caller has passed the merge's first piece (the
 * deflation); a chunked merge passes one more before every chunk of roots, of weights and of
 * columns. work: 4n + n^2, iwork: 4n (laed1's). */
static tl_status merge_halves(progress *p, tl_dtype real, lapack_int n, char *d, char *q,
                              lapack_int ldq, lapack_int *indxq, double rho, lapack_int cut,
                              char *work, lapack_int *iwork) {
  size_t rsize = tl_dtype_size(real);
  char *z = work, *dlamda = work + (size_t)n * rsize, *w = work + 2 * (size_t)n * rsize;
  char *q2 = work + 3 * (size_t)n * rsize;
  /* The updating vector: the last row of the first half's vectors, the first of the
   * second's. */
  for (lapack_int j = 0; j < n; j++) {
    lapack_int row = j < cut ? cut - 1 : cut;
    memcpy(z + (size_t)j * rsize, q + rsize * ((size_t)row + (size_t)j * (size_t)ldq), rsize);
  }
  lapack_int k = 0;
  lapack_int info =
      tl__lapack_laed2(real, &k, n, cut, d, q, ldq, indxq, &rho, z, dlamda, w, q2, iwork);
  if (info != 0) return tl__la_provider_fail(p->route, "laed2", info);
  if (k == 0) {
    /* Everything deflated: laed2 left d ascending with q's columns to match, and wrote no
     * grouping counts. The permutation is the identity, as laed1 sets it. */
    for (lapack_int i = 0; i < n; i++) indxq[i] = i + 1;
    return TL_OK;
  }
  /* laed2's grouping: columns with entries only in the upper half, in both, only in the
   * lower half (counts[0..2]); q2 holds the first two groups' upper rows (cut x n12), then
   * the last two groups' lower rows ((n - cut) x n23). The packed copies of q's rows that the
   * products read go after them (laed1's room for them, at most max(n12, n23) x k). */
  const lapack_int *indx = iwork + n, *counts = iwork + 2 * (int64_t)n;
  lapack_int n12 = counts[0] + counts[1], n23 = counts[1] + counts[2];
  char *packed = q2 + rsize * ((size_t)cut * (size_t)n12 + (size_t)(n - cut) * (size_t)n23);
  int chunked = merge_pieces(n) > 1;
  int64_t step = chunked ? chunk_of(n) : n;
  tl_status status;
  /* The roots, column j of q getting root j's differences to the poles. */
  for (int64_t from = 0; from < n; from += step) {
    if (chunked && (status = next_piece(p)) != TL_OK) return status;
    int64_t to = from + step < k ? from + step : k;
    if (from >= to) continue;
    info = tl__lapack_laed4(real, k, (lapack_int)from, (lapack_int)to, dlamda, w, q, ldq, rho, d);
    if (info != 0) return tl__la_provider_fail(p->route, "laed4", info);
  }
  /* The weights (k > 2; for k = 1 laed4 gave the vector 1, for k = 2 the vectors). */
  if (k > 2) {
    memcpy(z, w, (size_t)k * rsize); /* the signs, z being free after laed2 */
    for (lapack_int i = 0; i < k; i++) {
      memcpy(w + (size_t)i * rsize, q + rsize * ((size_t)i + (size_t)i * (size_t)ldq), rsize);
    }
  }
  for (int64_t from = 0; from < n; from += step) {
    if (chunked && (status = next_piece(p)) != TL_OK) return status;
    int64_t to = from + step < k ? from + step : k;
    if (from >= to || k <= 2) continue;
    if (real == TL_F32) {
      weights_s(k, from, to, (const float *)q, ldq, (const float *)dlamda, (float *)w);
    } else {
      weights_d(k, from, to, (const double *)q, ldq, (const double *)dlamda, (double *)w);
    }
  }
  if (k > 2 && real == TL_F32) finish_s(k, (float *)w, (const float *)z);
  if (k > 2 && real == TL_F64) finish_d(k, (double *)w, (const double *)z);
  /* The columns: the rank-one change's vectors (packed serves as their scratch), then the
   * products with the halves' vectors, lower rows first as their inputs overlap. */
  for (int64_t from = 0; from < n; from += step) {
    if (chunked && (status = next_piece(p)) != TL_OK) return status;
    int64_t to = from + step < k ? from + step : k;
    if (from >= to) continue;
    if (k > 2 && real == TL_F32) {
      vectors_s(real, k, from, to, (float *)q, ldq, (const float *)w, indx, (float *)packed);
    } else if (k > 2) {
      vectors_d(real, k, from, to, (double *)q, ldq, (const double *)w, indx, (double *)packed);
    } else if (k == 2) {
      for (int64_t j = from; j < to; j++) {
        char *column = q + (size_t)j * (size_t)ldq * rsize, pair[32];
        memcpy(pair, column, 2 * rsize);
        memcpy(column, pair + (size_t)(indx[0] - 1) * rsize, rsize);
        memcpy(column + rsize, pair + (size_t)(indx[1] - 1) * rsize, rsize);
      }
    }
    multiply(real, n, cut, q, ldq, q2, counts[0], n12, n23, from, to, packed);
  }
  /* indxq: the roots (ascending in d[0, k)) merged with the deflated values (descending in
   * d[k, n)), the roots first among equals. */
  int64_t a = 0, b = (int64_t)n - 1;
  for (int64_t out = 0; out < n; out++) {
    int take_root = a < k && (b < k || get(real, d, a) <= get(real, d, b));
    indxq[out] = (lapack_int)(take_root ? a++ : b--) + 1;
  }
  return TL_OK;
}

/* Divide and conquer on the block of order m at (d, e, z) (z: the block's top-left corner,
 * zero outside the block's square on entry). part: leaves_of(m) entries, indxq: m, iwork:
 * 4m; work: 4m + m^2. */
static tl_status divide_and_conquer(progress *p, tl_dtype real, int64_t m, char *d, char *e,
                                    char *z, lapack_int ldz, char *work, lapack_int *part,
                                    lapack_int *indxq, lapack_int *iwork) {
  size_t rsize = tl_dtype_size(real);
  /* Scaled to norm 1 (the largest entry), as stedc scales each block. */
  double norm = 0.0;
  for (int64_t i = 0; i < m; i++) norm = fmax(norm, fabs(get(real, d, i)));
  for (int64_t i = 0; i + 1 < m; i++) norm = fmax(norm, fabs(get(real, e, i)));
  if (norm == 0.0) norm = 1.0;
  for (int64_t i = 0; i < m; i++) put(real, d, i, get(real, d, i) / norm);
  for (int64_t i = 0; i + 1 < m; i++) put(real, e, i, get(real, e, i) / norm);
  /* The parts: each level halves every part (rounded down left, up right). Leaves and m
   * are below 2^31 (n is), so the cumulative ends fit lapack_int. */
  int64_t count = 1;
  part[0] = (lapack_int)m;
  while (part[count - 1] > TL__TRIDIAG_LEAF) {
    for (int64_t j = count - 1; j >= 0; j--) {
      lapack_int whole = part[j];
      part[2 * j + 1] = (whole + 1) / 2;
      part[2 * j] = whole / 2;
    }
    count *= 2;
  }
  for (int64_t j = 1; j < count; j++) part[j] += part[j - 1];
  /* The tears: the torn entry e comes off the diagonal entries on both sides. */
  for (int64_t j = 0; j + 1 < count; j++) {
    int64_t at = part[j] - 1;
    double torn = fabs(get(real, e, at));
    put(real, d, at, get(real, d, at) - torn);
    put(real, d, at + 1, get(real, d, at + 1) - torn);
  }
  tl_status status;
  for (int64_t j = 0; j < count; j++) {
    int64_t start = j == 0 ? 0 : part[j - 1], size = part[j] - start;
    if ((status = next_piece(p)) != TL_OK) return status;
    char *corner = z + rsize * ((size_t)start + (size_t)start * (size_t)ldz);
    lapack_int info = tl__lapack_steqr(real, (lapack_int)size, d + (size_t)start * rsize,
                                       e + (size_t)start * rsize, corner, ldz, work);
    if (info != 0) return tl__la_provider_fail(p->route, "steqr", info);
    for (int64_t k = 0; k < size; k++) indxq[start + k] = (lapack_int)(k + 1);
  }
  /* The merges, bottom-up: parts 2i and 2i+1 become part i. */
  while (count > 1) {
    for (int64_t j = 0; j + 1 < count; j += 2) {
      int64_t start = j == 0 ? 0 : part[j - 1];
      int64_t size = part[j + 1] - start, cut = part[j] - start;
      if ((status = next_piece(p)) != TL_OK) return status;
      char *corner = z + rsize * ((size_t)start + (size_t)start * (size_t)ldz);
      char *dm = d + (size_t)start * rsize;
      double rho = get(real, e, start + cut - 1);
      if (tl__tridiag_by_lapack) {
        lapack_int info = tl__lapack_laed1(real, (lapack_int)size, dm, corner, ldz, indxq + start,
                                           rho, (lapack_int)cut, work, iwork);
        if (info != 0) return tl__la_provider_fail(p->route, "laed1", info);
      } else {
        status = merge_halves(p, real, (lapack_int)size, dm, corner, ldz, indxq + start, rho,
                              (lapack_int)cut, work, iwork);
        if (status != TL_OK) return status;
      }
      part[j / 2] = part[j + 1];
    }
    count /= 2;
  }
  /* indxq sorts the merged eigenvalues: d and the columns gathered in that order through
   * work (m values, then m columns of m), copied back, and the scaling undone; the columns
   * in chunks, a piece each, where the top merge was chunked (sort_pieces). */
  char *columns = work + (size_t)m * rsize;
  int64_t step = sort_pieces(m) > 0 ? chunk_of(m) : m;
  for (int64_t i = 0; i < m; i++) {
    memcpy(work + (size_t)i * rsize, d + (size_t)(indxq[i] - 1) * rsize, rsize);
  }
  for (int64_t first = 0; first < m; first += step) {
    if (step < m && (status = next_piece(p)) != TL_OK) return status;
    for (int64_t i = first; i < m && i < first + step; i++) {
      memcpy(columns + (size_t)i * (size_t)m * rsize,
             z + (size_t)(indxq[i] - 1) * (size_t)ldz * rsize, (size_t)m * rsize);
    }
  }
  for (int64_t first = 0; first < m; first += step) {
    if (step < m && (status = next_piece(p)) != TL_OK) return status;
    for (int64_t i = first; i < m && i < first + step; i++) {
      memcpy(z + (size_t)i * (size_t)ldz * rsize, columns + (size_t)i * (size_t)m * rsize,
             (size_t)m * rsize);
    }
  }
  for (int64_t i = 0; i < m; i++) put(real, d, i, get(real, work, i) * norm);
  return TL_OK;
}

static int ascending_f64(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int ascending_f32(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

tl_status tl__tridiag_solve(tl_exec *exec, const char *route, tl_dtype real, int64_t n, char *d,
                            char *e, char *z, lapack_int ldz, char *work, lapack_int *iwork) {
  size_t rsize = tl_dtype_size(real);
  int vectors = z != NULL;
  progress p = {exec, route,
                vectors ? "divide and conquer: blocks, leaves, merges and their chunks"
                        : "sterf or QL on each block, QL in chunks of eigenvalues",
                0, 0};
  for (int64_t start = 0; start < n;) {
    int64_t end = block_end(real, d, e, start, n);
    p.total += pieces_of(end - start, vectors);
    start = end;
  }
  tl_status status;
  if (vectors) { /* the identity, as stedc starts (a block of order 1 keeps its column) */
    int64_t step = tl__la_pass_columns(n, rsize);
    for (int64_t j = 0; j < n; j++) {
      if (j > 0 && j % step == 0 &&
          (status = tl__la_cancelled(exec, route, "the solver's start (z set to the identity)")) !=
              TL_OK)
        return status;
      char *column = z + (size_t)j * (size_t)ldz * rsize;
      memset(column, 0, (size_t)n * rsize);
      put(real, column, j, 1.0);
    }
  }
  for (int64_t start = 0; start < n;) {
    /* The same cut as counted above: d and e of later blocks are untouched so far. */
    int64_t end = block_end(real, d, e, start, n), m = end - start;
    char *db = d + (size_t)start * rsize, *eb = e + (size_t)start * rsize;
    char *zb = vectors ? z + rsize * ((size_t)start + (size_t)start * (size_t)ldz) : NULL;
    lapack_int info = 0;
    if (m > 1 && !vectors) {
      if ((status = next_piece(&p)) != TL_OK) return status;
      if (values_pieces(m) > 1) {
        if ((status = ql_block(&p, real, m, db, eb)) != TL_OK) return status;
      } else {
        info = tl__lapack_sterf(real, (lapack_int)m, db, eb);
        if (info != 0) return tl__la_provider_fail(route, "sterf", info);
      }
    } else if (m > 1 && m <= TL__TRIDIAG_LEAF) {
      if ((status = next_piece(&p)) != TL_OK) return status;
      info = tl__lapack_steqr(real, (lapack_int)m, db, eb, zb, ldz, work);
      if (info != 0) return tl__la_provider_fail(route, "steqr", info);
    } else if (m > 1) {
      lapack_int *part = iwork, *indxq = iwork + leaves_of(m), *merge = indxq + m;
      status = divide_and_conquer(&p, real, m, db, eb, zb, ldz, work, part, indxq, merge);
      if (status != TL_OK) return status;
    }
    start = end;
  }
  if ((status = next_piece(&p)) != TL_OK) return status;
  if (!vectors) {
    qsort(d, (size_t)n, rsize, real == TL_F32 ? ascending_f32 : ascending_f64);
    return TL_OK;
  }
  /* Blocks solved apart: eigenvalues ascending across them, the columns following (a
   * selection sort, as stedc's, at most n - 1 swaps), unless already ascending (a single
   * block: then the O(n^2) search is skipped too). */
  int64_t ascending = 1;
  while (ascending < n && get(real, d, ascending - 1) <= get(real, d, ascending)) ascending++;
  for (int64_t i = 0; ascending < n && i + 1 < n; i++) {
    int64_t low = i;
    for (int64_t j = i + 1; j < n; j++) {
      if (get(real, d, j) < get(real, d, low)) low = j;
    }
    if (low == i) continue;
    double t = get(real, d, i);
    put(real, d, i, get(real, d, low));
    put(real, d, low, t);
    char *a = z + (size_t)i * (size_t)ldz * rsize, *b = z + (size_t)low * (size_t)ldz * rsize;
    for (size_t q = 0; q < (size_t)n * rsize; q++) {
      char c = a[q];
      a[q] = b[q];
      b[q] = c;
    }
  }
  return TL_OK;
}
